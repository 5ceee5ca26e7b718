//! Any cursor into a log of any length pages through the rest of it exactly once.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: (u16, u64)| {
    let (entries, cursor) = (input.0 % 512, input.1 % 1024);
    scratchpad_guest::testing::properties::log_paging(entries, cursor);
});
