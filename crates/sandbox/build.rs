//! Builds the agent core (`core-wasm`) as a `wasm32-wasip2` component and leaves it in `OUT_DIR`
//! as `airlock_core.wasm`, where `core_host` embeds it with `include_bytes!`.
//!
//! Then builds the plugins: the shipped ones (`plugins/`, a workspace of their own) land next to
//! their manifests as `plugins/<name>/<name>.wasm`, ready for `airlock serve --plugins plugins`;
//! they and the test fixtures (`tests/plugins/`) are also left in `OUT_DIR/plugins`.
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
    let workspace = manifest_dir
        .parent()
        .and_then(Path::parent)
        .expect("the sandbox lives in crates/ of the workspace root")
        .to_path_buf();
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

    build_plugins(&cargo, &workspace, &out_dir);
}

/// The plugin workspaces, and whether their components are shipped next to their manifests.
const PLUGIN_WORKSPACES: &[(&str, bool)] = &[("plugins", true), ("tests/plugins/hostile", false)];

fn build_plugins(cargo: &std::ffi::OsStr, workspace: &Path, out_dir: &Path) {
    let target_dir = workspace.join("target").join("plugins-wasm");
    let built = target_dir.join(TARGET).join("release");
    let out = out_dir.join("plugins");
    std::fs::create_dir_all(&out).expect("creating OUT_DIR/plugins");
    for &(root, shipped) in PLUGIN_WORKSPACES {
        let root = workspace.join(root);
        let manifest = root.join("Cargo.toml");
        let crates = plugin_crates(&root);
        for path in [manifest.clone(), root.join("Cargo.lock")] {
            println!("cargo:rerun-if-changed={}", path.display());
        }
        for dir in &crates {
            // A watched file that does not exist makes every build run this script again (the
            // hostile fixtures have no `plugin.toml`): watch only the ones there are.
            let paths = [dir.join("src"), dir.join("Cargo.toml"), dir.join("plugin.toml")];
            for path in paths.iter().filter(|path| path.exists()) {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        let mut build = Command::new(cargo);
        build
            .current_dir(&root)
            .args(["build", "--release", "--locked", "--target", TARGET, "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target_dir);
        scrub(&mut build);
        let status = build
            .status()
            .unwrap_or_else(|e| panic!("could not run `{}`: {e}", cargo.to_string_lossy()));
        assert!(
            status.success(),
            "building the plugins in {} failed ({status}); run `cargo build --release --target {TARGET} --manifest-path {}` to see why",
            root.display(),
            manifest.display()
        );
        for dir in crates {
            let name = dir.file_name().expect("a crate dir has a name").to_string_lossy();
            let wasm = built.join(format!("{name}.wasm"));
            let bytes = std::fs::read(&wasm)
                .unwrap_or_else(|e| panic!("the plugin {} was not built: {e}", wasm.display()));
            std::fs::write(out.join(format!("{name}.wasm")), &bytes).expect("writing OUT_DIR");
            let shipped_file = dir.join(format!("{name}.wasm"));
            // Rewritten only when it changed, so nothing downstream sees a new mtime for nothing.
            if shipped && std::fs::read(&shipped_file).ok().as_deref() != Some(&bytes) {
                std::fs::write(&shipped_file, &bytes)
                    .unwrap_or_else(|e| panic!("could not write {}: {e}", shipped_file.display()));
            }
        }
    }
}

/// The crates of a plugin workspace: the root itself when it is a package, else its
/// subdirectories with a `src/`.
fn plugin_crates(root: &Path) -> Vec<PathBuf> {
    if root.join("src").is_dir() {
        return vec![root.to_path_buf()];
    }
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap_or_else(|e| panic!("could not list {}: {e}", root.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|dir| dir.join("src").is_dir() && dir.join("Cargo.toml").is_file())
        .collect();
    crates.sort();
    crates
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
