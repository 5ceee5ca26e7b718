//! apply(diff(a, b), a) == b for both forms. The input is split at its first NUL into a, b.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &str| {
    let (old, new) = input.split_once('\0').unwrap_or((input, ""));
    scratchpad_guest::testing::properties::diff_round_trip(old, new);
});
