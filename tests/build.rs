//! Builds the hostile guest component (`tests/hostile-guest/`) that the sandbox tests load,
//! as spin builds its test components: from the build script, in a target folder of its own.

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo")).join("hostile.wasm");
    build_support::build_component(
        "scratchpad-hostile-guest",
        "release",
        &["tests/hostile-guest"],
        &out,
    );
}
