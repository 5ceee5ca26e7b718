//! The self-contained components this binary carries (`component --standalone`): the tools
//! with their SQLite store compiled in, with and without the summariser import. A build on a
//! machine without a C compiler for WASI carries neither and says how to get them.

/// With the `summariser` import.
const WITH_SUMMARISER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/standalone.wasm"));
/// Importing nothing but WASI.
const WASI_ONLY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/standalone-wasi.wasm"));

/// This build has no self-contained component.
#[derive(Debug, thiserror::Error)]
#[error(
    "this build of scratchpad-mcp has no self-contained component: it was built without a C \
     compiler for WASI. Install one (Debian/Ubuntu: apt-get install clang lld wasi-libc) and \
     build again, or run scripts/standalone"
)]
pub struct NotBuilt;

/// The component's bytes: without the summariser import when `wasi_only`.
pub fn component(wasi_only: bool) -> Result<&'static [u8], NotBuilt> {
    let bytes = if wasi_only {
        WASI_ONLY
    } else {
        WITH_SUMMARISER
    };
    if bytes.is_empty() {
        Err(NotBuilt)
    } else {
        Ok(bytes)
    }
}
