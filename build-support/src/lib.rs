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

/// What every component here is built from, whatever else it adds: the contract, the guest
/// crate (the tools, and the build script that sets the guest's link arguments), and the
/// workspace's lock file and manifest (whose profiles the components are built with).
const ALWAYS_WATCHED: [&str; 6] = [
    "wit",
    "guest/src",
    "guest/Cargo.toml",
    "guest/build.rs",
    "Cargo.lock",
    "Cargo.toml",
];

/// Builds `package` with cargo `profile` and copies its `.wasm` to `out`. Tells cargo to run
/// the build script again when `watched` (paths relative to the workspace root, beside
/// [`ALWAYS_WATCHED`]) change.
/// Stops the build with one clear line when the target is missing or the build fails.
pub fn build_component(package: &str, profile: &str, watched: &[&str], out: &Path) {
    build_component_with(package, profile, &[], &[], watched, out);
}

/// [`build_component`] with cargo `features` and extra environment (`env`, for example the C
/// compiler of [`wasi_c_toolchain`]). Paths of this machine are remapped in what the build
/// embeds (panic locations), so the same sources give the same bytes in another folder.
pub fn build_component_with(
    package: &str,
    profile: &str,
    features: &[&str],
    env: &[(String, String)],
    watched: &[&str],
    out: &Path,
) {
    let root = workspace_root();
    for path in watched.iter().chain(&ALWAYS_WATCHED) {
        println!("cargo:rerun-if-changed={}", root.join(path).display());
    }
    require_target();

    // SCRATCHPAD_COMPONENT_TARGET_DIR: a fresh folder, to check that a build from nothing
    // gives the same bytes (scripts/standalone --check).
    let target_dir = env::var_os("SCRATCHPAD_COMPONENT_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target").join(format!("{package}-build")));
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--package", package, "--profile", profile])
        .args(["--target", TARGET, "--target-dir"])
        .arg(&target_dir)
        .args(features.iter().flat_map(|f| ["--features", f]))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env("CARGO_ENCODED_RUSTFLAGS", remapped_paths(&root))
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

/// The self-contained components, built into `out_dir` with the C `toolchain` of
/// [`wasi_c_toolchain`]: `standalone.wasm` (importing the summariser) and
/// `standalone-wasi.wasm` (importing nothing but WASI).
pub fn build_standalone(out_dir: &Path, toolchain: &[(String, String)]) {
    for (name, features) in STANDALONE_VARIANTS {
        build_component_with(
            "scratchpad-standalone",
            "standalone",
            features,
            toolchain,
            &["standalone", "store"],
            &out_dir.join(name),
        );
    }
}

/// The self-contained components' file names, with the features each is built with.
pub const STANDALONE_VARIANTS: [(&str, &[&str]); 2] = [
    ("standalone.wasm", &[]),
    ("standalone-wasi.wasm", &["without-summariser"]),
];

/// `--remap-path-prefix` for the workspace and cargo's home, as `CARGO_ENCODED_RUSTFLAGS`
/// (flags separated by 0x1f).
fn remapped_paths(root: &Path) -> String {
    let mut flags = vec![format!(
        "--remap-path-prefix={}=/scratchpad",
        root.display()
    )];
    if let Some(home) = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
    {
        flags.push(format!("--remap-path-prefix={}=/cargo", home.display()));
    }
    flags.join("\u{1f}")
}

/// The C compiler and archiver that build C code (SQLite) for [`TARGET`], as the variables
/// the `cc` crate reads, or none when this machine has no C toolchain for WASI: clang and a
/// WASI libc (Debian: `apt-get install clang lld wasi-libc`). Found by compiling a line of C.
pub fn wasi_c_toolchain() -> Option<Vec<(String, String)>> {
    let cc = env::var("SCRATCHPAD_WASI_CC").unwrap_or_else(|_| "clang".into());
    let probe = env::temp_dir().join(format!("scratchpad-wasi-probe-{}.o", std::process::id()));
    let compiles = Command::new(&cc)
        .args(["--target=wasm32-wasi", "-x", "c", "-c", "-o"])
        .arg(&probe)
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .map(|mut stdin| {
                    stdin.write_all(b"#include <stdio.h>\nint f(void) { return 0; }\n")
                })
                .transpose()?;
            child.wait()
        })
        .is_ok_and(|status| status.success());
    let _ = fs::remove_file(&probe);
    let ar = [
        "llvm-ar",
        "llvm-ar-19",
        "llvm-ar-16",
        "llvm-ar-15",
        "llvm-ar-14",
    ]
    .into_iter()
    .find(|ar| {
        Command::new(ar)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })?;
    compiles.then(|| {
        let target = TARGET.replace('-', "_");
        vec![
            (format!("CC_{target}"), cc),
            (format!("AR_{target}"), ar.to_owned()),
            (
                format!("CFLAGS_{target}"),
                "--target=wasm32-wasi".to_owned(),
            ),
        ]
    })
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

/// What the tool-logic component's `scratchpad-guest-version` section begins with; the
/// guest crate's version and a `;` follow.
pub const VERSION_MARK: &str = "scratchpad-guest-version=";

/// The guest crate version a tool-logic component was built from, read from its version
/// section; none in a component that has none (one built before it, or not ours).
pub fn guest_version(component: &[u8]) -> Option<&str> {
    let mark = VERSION_MARK.as_bytes();
    let at = component.windows(mark.len()).position(|w| w == mark)? + mark.len();
    let rest = &component[at..];
    let end = rest.iter().take(64).position(|&b| b == b';')?;
    std::str::from_utf8(&rest[..end]).ok()
}

/// Stops the build script with `message` as the error cargo shows.
pub fn fail(message: &str) -> ! {
    println!("cargo:warning={message}");
    eprintln!("error: {message}");
    std::process::exit(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_components_guest_version_is_read_from_its_section() {
        let mut wasm = b"\0asm...code...".to_vec();
        wasm.extend_from_slice(b"scratchpad-guest-version=0.1.0;more");
        assert_eq!(guest_version(&wasm), Some("0.1.0"));
        assert_eq!(guest_version(b"\0asm without a section"), None);
        assert_eq!(guest_version(b"scratchpad-guest-version=unended"), None);
    }
}
