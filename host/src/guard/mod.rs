//! The host's distrust of the guest, in one place.
//!
//! The guest is code the host runs but does not trust: a bug or a hostile build may ask for
//! another agent's data, write in a read-only call, break the version rules or answer about
//! something it was not asked. Every check of that lives here, so that a new backend, a new
//! import or a new tool cannot forget one:
//!
//! - [`Guard`] stands between the guest's storage requests and the call's transaction: the
//!   agent must be the call's own, names must keep the path rules, a read-only call changes
//!   nothing, versions rise, a prune keeps the current version, a summary is of a kept
//!   version, a log entry's byte count is its size; and the first failure is remembered, so a
//!   guest that swallows a refusal still cannot get its call committed.
//! - [`answers`] checks what the guest answered before the call commits.
//!
//! Backends only persist: they are reached through a [`Guard`] and trust what it lets by.

pub mod answers;
mod requests;

pub use requests::Guard;
