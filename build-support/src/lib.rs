//! Builds a crate of this workspace as a `wasm32-wasip2` component, from a build script.
//!
//! Used by `host/build.rs` (the guest it embeds) and `tests/build.rs` (the hostile guests the
//! sandbox tests load), so that both build components the same way: a nested cargo with its
//! own target folder, so it never waits on the outer build's lock, and without the outer
//! build's wrappers and flags (clippy, coverage), which are for the host target.

// Build scripts talk to cargo on stdout (`cargo:rerun-if-changed=…`, `cargo:warning=…`).
#![allow(clippy::print_stdout)]

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The target components are built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Builds `package` with cargo `profile` and copies its `.wasm` to `out`. Tells cargo to run
/// the build script again when `watched` (paths relative to the workspace root) change.
/// Stops the build with one clear line when the target is missing or the build fails.
pub fn build_component(package: &str, profile: &str, watched: &[&str], out: &Path) {
    let root = workspace_root();
    for path in watched.iter().chain(&["wit", "Cargo.lock"]) {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    require_target();

    let target_dir = root.join("target").join(format!("{package}-build"));
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--package", package, "--profile", profile])
        .args(["--target", TARGET, "--target-dir"])
        .arg(&target_dir)
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .unwrap_or_else(|e| fail(&format!("could not run cargo to build {package}: {e}")));
    if !status.success() {
        fail(&format!(
            "building the {package} component failed (see the errors above)"
        ));
    }
    // Cargo names the folder of the `dev` profile `debug`.
    let profile_dir = if profile == "dev" { "debug" } else { profile };
    let built = target_dir
        .join(TARGET)
        .join(profile_dir)
        .join(format!("{}.wasm", package.replace('-', "_")));
    fs::copy(&built, out).unwrap_or_else(|e| fail(&format!("copy {}: {e}", built.display())));
}

/// The workspace root: the parent of the folder holding `Cargo.lock`, found from the
/// manifest folder of the crate whose build script is running.
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    manifest
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists() && dir.join("wit").is_dir())
        .unwrap_or_else(|| fail("cannot find the workspace root (Cargo.lock beside wit/)"))
        .to_owned()
}

fn require_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let libdir = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if !libdir.is_some_and(|dir| dir.exists()) {
        fail(&format!(
            "the {TARGET} target is not installed; add it with `rustup target add {TARGET}`"
        ));
    }
}

/// Stops the build script with `message` as the error cargo shows.
pub fn fail(message: &str) -> ! {
    println!("cargo:warning={message}");
    eprintln!("error: {message}");
    std::process::exit(1);
}
