//! Agent ids, paths and prefixes: parse, print, parse again; what parses keeps the rules.
#![no_main]

libfuzzer_sys::fuzz_target!(|raw: &str| {
    scratchpad_guest::testing::properties::names(raw);
});
