//! Builds what the host embeds from the rest of the workspace:
//!
//! 1. the guest component (`guest/` for `wasm32-wasip2`, release-grade `guest` profile), so a
//!    plain `cargo build` gives a binary that carries its own tool logic;
//! 2. the tool descriptions, taken from the WIT doc comments of the `tools` interface, so the
//!    words an agent reads are written once, beside the contract.
//!
//! 3. the self-contained component (`standalone/`: the tools with SQLite compiled in), twice:
//!    with the summariser import and without. It needs a C compiler for WASI; a machine
//!    without one gets a server without it, and `component --standalone` says how to get it.
//!
//! `SCRATCHPAD_GUEST_WASM=path` skips step 1 and embeds that file instead (for packagers that
//! build the component separately); `SCRATCHPAD_STANDALONE_WASM` and
//! `SCRATCHPAD_STANDALONE_WASI_WASM` do the same for step 3.

use build_support::{
    build_component, build_component_with, fail, wasi_c_toolchain, workspace_root,
};
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use wit_parser::{Resolve, Type, TypeDefKind};

fn main() {
    let root = workspace_root();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));

    write_tool_docs(&root.join("wit"), &out_dir.join("tool_docs.rs"));
    let wasm = out_dir.join("scratchpad_guest.wasm");
    println!("cargo:rerun-if-env-changed=SCRATCHPAD_GUEST_WASM");
    match env::var_os("SCRATCHPAD_GUEST_WASM") {
        Some(prebuilt) => {
            println!("cargo:rerun-if-changed={}", Path::new(&prebuilt).display());
            fs::copy(&prebuilt, &wasm).expect("copy SCRATCHPAD_GUEST_WASM");
        }
        None => build_component(
            "scratchpad-guest",
            "guest",
            &["guest/src", "guest/Cargo.toml"],
            &wasm,
        ),
    }
    write_standalone(&out_dir);
}

/// The two self-contained components, or empty files where this machine cannot build them.
fn write_standalone(out_dir: &Path) {
    let variants = [
        ("SCRATCHPAD_STANDALONE_WASM", "standalone.wasm", &[][..]),
        (
            "SCRATCHPAD_STANDALONE_WASI_WASM",
            "standalone-wasi.wasm",
            &["without-summariser"][..],
        ),
    ];
    let toolchain = wasi_c_toolchain();
    for (var, name, features) in variants {
        let out = out_dir.join(name);
        println!("cargo:rerun-if-env-changed={var}");
        match (env::var_os(var), &toolchain) {
            (Some(prebuilt), _) => {
                println!("cargo:rerun-if-changed={}", Path::new(&prebuilt).display());
                fs::copy(&prebuilt, &out).unwrap_or_else(|e| fail(&format!("copy {var}: {e}")));
            }
            (None, Some(cc)) => build_component_with(
                "scratchpad-standalone",
                "guest",
                features,
                cc,
                &["standalone", "store", "guest/src", "guest/Cargo.toml"],
                &out,
            ),
            (None, None) => fs::write(&out, b"").expect("write an empty standalone.wasm"),
        }
    }
    println!("cargo:rerun-if-env-changed=SCRATCHPAD_WASI_CC");
    println!("cargo:rerun-if-env-changed=PATH");
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
                    fields.push((field.name.replace('-', "_"), first_sentence(doc)));
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

/// A doc comment on one line, with WIT names (`since-version`) as MCP spells them
/// (`since_version`).
fn one_line(doc: &str) -> String {
    let text = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        // Odd parts are inside backticks: names.
        if i % 2 == 1 {
            out.push_str(&part.replace('-', "_"));
        } else {
            out.push_str(part);
        }
    }
    out
}

/// An argument's description for MCP: its doc comment's first sentence. The rest stays in
/// the WIT for embedders; every word here is paid for in each session's `tools/list`.
fn first_sentence(doc: &str) -> String {
    let line = one_line(doc);
    match line.find(". ") {
        Some(end) => line[..=end].to_owned(),
        None => line,
    }
}
