//! Builds what the host embeds from the rest of the workspace:
//!
//! 1. the guest component (`guest/` for `wasm32-wasip2`, release-grade `guest` profile), so a
//!    plain `cargo build` gives a binary that carries its own tool logic;
//! 2. the tool descriptions, taken from the WIT doc comments of the `tools` interface, so the
//!    words an agent reads are written once, beside the contract.
//!
//! `SCRATCHPAD_GUEST_WASM=path` skips step 1 and embeds that file instead (for packagers that
//! build the component separately).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use wit_parser::{Resolve, Type, TypeDefKind};

const GUEST_TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.parent().expect("host/ sits in the workspace");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    write_tool_docs(&root.join("wit"), &out_dir.join("tool_docs.rs"));
    let wasm = out_dir.join("scratchpad_guest.wasm");
    println!("cargo:rerun-if-env-changed=SCRATCHPAD_GUEST_WASM");
    match env::var_os("SCRATCHPAD_GUEST_WASM") {
        Some(prebuilt) => {
            println!("cargo:rerun-if-changed={}", Path::new(&prebuilt).display());
            fs::copy(&prebuilt, &wasm).expect("copy SCRATCHPAD_GUEST_WASM");
        }
        None => build_guest(root, &wasm),
    }
}

/// Runs a nested cargo for the guest, with its own target folder so it never waits on the
/// outer build's lock, and without the outer build's wrappers and flags (clippy, coverage).
fn build_guest(root: &Path, out: &Path) {
    for watched in ["wit", "guest/src", "guest/Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let target_libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", GUEST_TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if !target_libdir.is_some_and(|dir| dir.exists()) {
        fail(&format!(
            "the {GUEST_TARGET} target is not installed; add it with `rustup target add {GUEST_TARGET}`"
        ));
    }

    let target_dir = root.join("target").join("guest-build");
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--package",
            "scratchpad-guest",
            "--profile",
            "guest",
        ])
        .args(["--target", GUEST_TARGET, "--target-dir"])
        .arg(&target_dir)
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .unwrap_or_else(|e| fail(&format!("could not run cargo to build the guest: {e}")));
    if !status.success() {
        fail("building the guest component failed (see the errors above)");
    }
    let built = target_dir
        .join(GUEST_TARGET)
        .join("guest")
        .join("scratchpad_guest.wasm");
    fs::copy(&built, out).unwrap_or_else(|e| fail(&format!("copy {}: {e}", built.display())));
}

/// Writes `TOOL_DOCS` (of `ToolDoc`, defined in `src/tools.rs`): for each function of the `tools` interface, its MCP name, its doc
/// comment, and the doc comments of its request record's fields.
fn write_tool_docs(wit: &Path, out: &Path) {
    println!("cargo:rerun-if-changed={}", wit.display());
    let mut resolve = Resolve::default();
    let (package, _) = resolve
        .push_dir(wit)
        .unwrap_or_else(|e| fail(&format!("wit/ does not parse: {e:#}")));
    let tools = resolve.packages[package].interfaces["tools"];
    let mut code = String::from(
        "/// The words of `wit/scratchpad.wit` for each tool.\npub const TOOL_DOCS: &[ToolDoc] = &[\n",
    );
    for (name, func) in &resolve.interfaces[tools].functions {
        let docs = func.docs.contents.as_deref().unwrap_or_default();
        let mut fields = Vec::new();
        if let Some((_, Type::Id(id))) = func.params.first()
            && let TypeDefKind::Record(record) = &resolve.types[*id].kind
        {
            for field in &record.fields {
                if let Some(doc) = &field.docs.contents {
                    fields.push((field.name.replace('-', "_"), one_line(doc)));
                }
            }
        }
        write!(
            code,
            "    ToolDoc {{ name: {:?}, description: {:?}, args: &[",
            name.replace('-', "_"),
            one_line(docs)
        )
        .expect("write to String");
        for (field, doc) in fields {
            write!(code, "({field:?}, {doc:?}), ").expect("write to String");
        }
        code.push_str("] },\n");
    }
    code.push_str("];\n");
    fs::write(out, code).expect("write tool_docs.rs");
}

fn one_line(doc: &str) -> String {
    doc.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn fail(message: &str) -> ! {
    println!("cargo:warning={message}");
    eprintln!("error: {message}");
    std::process::exit(1);
}
