//! Builds what the host embeds from the rest of the workspace:
//!
//! 1. the guest component (`guest/` for `wasm32-wasip2`, release-grade `guest` profile), so a
//!    plain `cargo build` gives a binary that carries its own tool logic;
//!
//! 2. the self-contained component (`standalone/`: the tools with SQLite compiled in), twice:
//!    with the summariser import and without. It needs a C compiler for WASI; a machine
//!    without one gets a server without it, and `component --standalone` says how to get it.
//!
//! `SCRATCHPAD_GUEST_WASM=path` skips step 1 and embeds that file instead (for packagers that
//! build the component separately); `SCRATCHPAD_STANDALONE_WASM` and
//! `SCRATCHPAD_STANDALONE_WASI_WASM` do the same for step 2.

use build_support::{
    STANDALONE_VARIANTS, build_component, build_standalone, fail, guest_version, wasi_c_toolchain,
};
use std::env;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    let wasm = out_dir.join("scratchpad_guest.wasm");
    println!("cargo:rerun-if-env-changed=SCRATCHPAD_GUEST_WASM");
    match env::var_os("SCRATCHPAD_GUEST_WASM") {
        Some(prebuilt) => {
            println!("cargo:rerun-if-changed={}", Path::new(&prebuilt).display());
            let bytes = fs::read(&prebuilt).expect("read SCRATCHPAD_GUEST_WASM");
            // The rules are the guest crate's, linked natively too (limits, the catalogue):
            // a component of another version would answer by other rules.
            let linked = env::var("CARGO_PKG_VERSION").expect("set by cargo");
            match guest_version(&bytes) {
                Some(version) if version == linked => {}
                found => fail(&format!(
                    "SCRATCHPAD_GUEST_WASM ({}) is the tool logic of version {}, but this build links \
                     scratchpad-guest {linked}; build the component from the same sources",
                    Path::new(&prebuilt).display(),
                    found.unwrap_or("unknown (it carries no version)"),
                )),
            }
            fs::write(&wasm, bytes).expect("write the embedded component");
        }
        None => build_component("scratchpad-guest", "guest", &[], &wasm),
    }
    write_standalone(&out_dir);
}

/// The two self-contained components: prebuilt ones when given, built when this machine has
/// a C compiler for WASI, else empty files (the binary then says how to get them).
fn write_standalone(out_dir: &Path) {
    println!("cargo:rerun-if-env-changed=SCRATCHPAD_WASI_CC");
    println!("cargo:rerun-if-env-changed=PATH");
    let prebuilt = [
        ("SCRATCHPAD_STANDALONE_WASM", STANDALONE_VARIANTS[0].0),
        ("SCRATCHPAD_STANDALONE_WASI_WASM", STANDALONE_VARIANTS[1].0),
    ];
    let given: Vec<_> = prebuilt
        .iter()
        .filter_map(|(var, name)| {
            println!("cargo:rerun-if-env-changed={var}");
            env::var_os(var).map(|path| (*var, path, *name))
        })
        .collect();
    if given.len() == prebuilt.len() {
        for (var, path, name) in given {
            println!("cargo:rerun-if-changed={}", Path::new(&path).display());
            fs::copy(&path, out_dir.join(name))
                .unwrap_or_else(|e| fail(&format!("copy {var}: {e}")));
        }
        return;
    }
    if !given.is_empty() {
        fail(
            "give both SCRATCHPAD_STANDALONE_WASM and SCRATCHPAD_STANDALONE_WASI_WASM, or neither",
        );
    }
    match wasi_c_toolchain() {
        Some(toolchain) => build_standalone(out_dir, &toolchain),
        None => {
            for (name, _) in STANDALONE_VARIANTS {
                fs::write(out_dir.join(name), b"").expect("write an empty component");
            }
        }
    }
}
