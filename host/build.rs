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
    STANDALONE_VARIANTS, build_component, build_standalone, fail, wasi_c_toolchain, workspace_root,
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
