//! The on-disk cache of compiled machine code.
//!
//! Compiling the core with cranelift takes seconds; loading its machine code takes milliseconds.
//! A compiled component is written to `<cache dir>/core-<key>.cwasm`, where the key is the
//! SHA-256 of the wasm bytes and of the engine's compatibility hash (wasmtime version, target,
//! compiler flags, enabled features). A different core or engine gives a different file, so a
//! stale file is never loaded; a file that fails to load anyway is recompiled and replaced.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::error::CoreError;

/// A compiled component and where it came from.
pub(crate) struct Compiled {
    pub(crate) component: Component,
    pub(crate) file: Option<PathBuf>,
    pub(crate) loaded_from_cache: bool,
}

/// Loads the machine code for `wasm` from `cache_dir`, or compiles it and stores it there (as
/// `<kind>-<key>.cwasm`).
pub(crate) fn load_or_compile(
    engine: &Engine,
    kind: &str,
    wasm: &[u8],
    cache_dir: Option<&Path>,
) -> Result<Compiled, CoreError> {
    let Some(dir) = cache_dir else {
        return Ok(Compiled {
            component: compile(engine, wasm)?,
            file: None,
            loaded_from_cache: false,
        });
    };
    let file = dir.join(format!("{kind}-{}.cwasm", cache_key(engine, wasm)));
    // A file that fails to load anyway (damaged, or from a build we cannot tell apart) is
    // recompiled and replaced below.
    if file.is_file()
        && let Ok(component) = load(engine, &file)
    {
        return Ok(Compiled { component, file: Some(file), loaded_from_cache: true });
    }
    let component = compile(engine, wasm)?;
    // The cache only saves time: a read-only or full disk must not stop the gateway.
    let _ = store(&component, dir, &file);
    Ok(Compiled { component, file: Some(file), loaded_from_cache: false })
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component, CoreError> {
    Component::new(engine, wasm).map_err(|e| CoreError::Compile(format!("{e:#}")))
}

#[allow(unsafe_code)]
fn load(engine: &Engine, file: &Path) -> wasmtime::Result<Component> {
    // SAFETY: `deserialize_file` trusts the file to be machine code wasmtime produced, unchanged
    // while it is mapped. We wrote it ourselves with `Component::serialize`, under a name keyed
    // by this engine's compatibility hash, and only ever replace it by an atomic rename (never
    // in place), so a mapped file is never modified.
    unsafe { Component::deserialize_file(engine, file) }
}

/// Writes the machine code to a temporary file in `dir`, then renames it over `file`, so a
/// reader sees either no file or a whole one.
fn store(component: &Component, dir: &Path, file: &Path) -> std::io::Result<()> {
    let bytes = component.serialize().map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(&bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// The hex SHA-256 of the wasm bytes and the engine's compatibility hash.
pub(super) fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let mut sha = Sha256::new();
    sha.update(wasm);
    engine.precompile_compatibility_hash().hash(&mut ShaHasher(&mut sha));
    hex::encode(sha.finalize())
}

/// Feeds a `Hash` impl into SHA-256: unlike `DefaultHasher`, the result is the same in every
/// build and process, so it can name a file.
struct ShaHasher<'a>(&'a mut Sha256);

impl Hasher for ShaHasher<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        // `Hash::hash` only writes; the digest is read from the SHA-256 itself.
        0
    }
}
