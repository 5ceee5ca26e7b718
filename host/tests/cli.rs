//! The binary's command line, run as a user runs it.
//!
//! Being an integration test of this package, it also has `cargo test` build the binary with
//! the tests, from the same compiled crates: `scripts/test` drives that binary end to end
//! instead of building another (which took a minute and a half of CI).

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scratchpad-mcp"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn help_names_the_settings_and_version_the_package() {
    let help = run(&["--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{help:?}");
    assert!(
        text.contains("--db") && text.contains("SCRATCHPAD_DB_PATH"),
        "{text}"
    );
    let version = run(&["--version"]);
    assert!(version.status.success(), "{version:?}");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        concat!("scratchpad-mcp ", env!("CARGO_PKG_VERSION"), "\n")
    );
}

#[test]
fn an_unknown_flag_is_refused_by_name_and_starts_nothing() {
    let refused = run(&["--no-such-flag"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unexpected argument '--no-such-flag'"),
        "{err}"
    );
    assert!(
        refused.stdout.is_empty(),
        "an MCP client would read this as a message"
    );
}
