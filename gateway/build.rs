//! Builds the agent core (`core-wasm`) as a `wasm32-wasip2` component and leaves it in `OUT_DIR`
//! as `airlock_core.wasm`, where `core_host` embeds it with `include_bytes!`.
//!
//! The inner `cargo rustc` uses its own target dir so it never waits on the lock the outer build
//! holds, and runs with the outer build's flags and wrappers removed: the core must come out the
//! same however the gateway itself is built (`cargo clippy`, coverage, a cross target, ...).

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

/// Variables the outer cargo sets or reads that must not reach the inner build.
const SCRUBBED: &[&str] = &[
    "RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "RUSTDOCFLAGS",
    "CARGO_ENCODED_RUSTDOCFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CARGO_BUILD_RUSTC_WORKSPACE_WRAPPER",
    "CARGO_INCREMENTAL",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_MANIFEST_LINKS",
    "CARGO_LLVM_COV",
    "LLVM_PROFILE_FILE",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
    "RUSTC_LINKER",
];

/// Prefixes of variables the outer cargo sets for this build script or for its own target.
const SCRUBBED_PREFIXES: &[&str] = &[
    "CARGO_FEATURE_",
    "CARGO_CFG_",
    "CARGO_PKG_",
    "CARGO_PROFILE_",
    "CARGO_TARGET_WASM32_WASIP2_",
    "DEP_",
];

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let workspace =
        manifest_dir.parent().expect("the gateway lives in the workspace root").to_path_buf();
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    for path in ["core-wasm/src", "core-wasm/Cargo.toml", "wit", "Cargo.lock", "Cargo.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(path).display());
    }

    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    ensure_target_installed(&rustc, &workspace);

    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target_dir = workspace.join("target").join("core-wasm");
    let mut build = Command::new(&cargo);
    build
        .current_dir(&workspace)
        .args([
            "rustc",
            "-p",
            "airlock-core",
            "--lib",
            "--release",
            "--target",
            TARGET,
            "--crate-type",
            "cdylib",
        ])
        .arg("--manifest-path")
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    scrub(&mut build);
    // A small component: no debug info, symbols stripped.
    build.env("CARGO_PROFILE_RELEASE_DEBUG", "false").env("CARGO_PROFILE_RELEASE_STRIP", "true");

    let status = build
        .status()
        .unwrap_or_else(|e| panic!("could not run `{}`: {e}", cargo.to_string_lossy()));
    assert!(
        status.success(),
        "building the agent core for {TARGET} failed ({status}); run `cargo rustc -p airlock-core --lib --release --target {TARGET} --crate-type cdylib` to see why"
    );

    let wasm = target_dir.join(TARGET).join("release").join("airlock_core.wasm");
    let dest = out_dir.join("airlock_core.wasm");
    std::fs::copy(&wasm, &dest)
        .unwrap_or_else(|e| panic!("could not copy {} to {}: {e}", wasm.display(), dest.display()));
}

/// Installs the wasm target for the active toolchain when its standard library is missing, so a
/// fresh machine needs no extra step.
fn ensure_target_installed(rustc: &std::ffi::OsStr, workspace: &Path) {
    let sysroot = Command::new(rustc)
        .current_dir(workspace)
        .args(["--print", "sysroot"])
        .output()
        .unwrap_or_else(|e| {
            panic!("could not run `{} --print sysroot`: {e}", rustc.to_string_lossy())
        });
    assert!(
        sysroot.status.success(),
        "`rustc --print sysroot` failed: {}",
        String::from_utf8_lossy(&sysroot.stderr)
    );
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if sysroot.join("lib/rustlib").join(TARGET).exists() {
        return;
    }

    let mut add = Command::new("rustup");
    add.current_dir(workspace).args(["target", "add", TARGET]);
    // Set by the rustup proxy that started this build: the toolchain whose sysroot we checked.
    if let Some(toolchain) = env::var_os("RUSTUP_TOOLCHAIN") {
        add.arg("--toolchain").arg(toolchain);
    }
    let status = add.status().unwrap_or_else(|e| {
        panic!(
            "the {TARGET} target is not installed in {} and `rustup` could not be run ({e}); install the target for this toolchain by hand",
            sysroot.display()
        )
    });
    assert!(
        status.success(),
        "the {TARGET} target is not installed in {} and `rustup target add {TARGET}` failed ({status}); install it for this toolchain by hand",
        sysroot.display()
    );
}

/// Removes the outer build's settings from the inner cargo's environment.
fn scrub(command: &mut Command) {
    for name in SCRUBBED {
        command.env_remove(name);
    }
    for (name, _) in env::vars_os() {
        let name = name.to_string_lossy();
        if SCRUBBED_PREFIXES.iter().any(|prefix| name.starts_with(prefix)) {
            command.env_remove(&*name);
        }
    }
}
