//! A guest that behaves like the real one, except for agents whose ids name a misbehaviour.
//! The host's tests load it to show that nothing a guest does can take the server down, leak
//! another agent's data, or leave half a call committed.
//!
//! Built for `wasm32-wasip2` by `tests/build.rs`; natively it is empty.

#[cfg(target_arch = "wasm32")]
mod hostile;
