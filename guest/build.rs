//! Writes the tool descriptions, taken from the WIT doc comments of the `tools` interface,
//! so the words an agent reads are written once, beside the contract.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use wit_parser::{Resolve, Type, TypeDefKind};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    write_tool_docs(&manifest.join("../wit"), &out_dir.join("tool_docs.rs"));
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=--initial-memory={INITIAL_MEMORY}");
    }
}

/// The component's linear memory at the start of a call: its stack (1 MiB), its data and
/// 2 MiB of heap, which wasi-libc's allocator hands out before it grows the memory. Growing
/// costs the host a change of the slot's page protections when it happens and another when
/// the slot is reset, so an ordinary call should not need to; pages it never touches cost
/// nothing. A multiple of the 64 KiB wasm page.
const INITIAL_MEMORY: u32 = 3 << 20;

fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

/// Writes `TOOL_DOCS` (of `ToolDoc`, defined in `src/json/catalogue.rs`): for each function of the `tools` interface, its MCP name, its doc
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
