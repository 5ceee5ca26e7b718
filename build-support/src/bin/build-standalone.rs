//! Builds the self-contained components into a folder, exactly as `host/build.rs` does:
//! `cargo run -p build-support --bin build-standalone -- OUT_DIR` (see scripts/standalone).

use build_support::{build_standalone, fail, wasi_c_toolchain};
use std::path::PathBuf;

fn main() {
    let Some(out_dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        fail("usage: build-standalone OUT_DIR");
    };
    let Some(toolchain) = wasi_c_toolchain() else {
        fail(
            "no C compiler for WASI: install clang, lld and wasi-libc (Debian: apt-get install clang lld wasi-libc)",
        );
    };
    std::fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| fail(&format!("create {}: {e}", out_dir.display())));
    build_standalone(&out_dir, &toolchain);
}
