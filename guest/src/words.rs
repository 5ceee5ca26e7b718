//! Counts as the tools' messages say them: "1 file", "2 files". A caller's model reads every
//! refusal, and "the quota is 1 files" reads as a slip of the tool's. The host's command line
//! says its counts the same way.

use std::fmt;

/// `n` with its noun: `one` for exactly one, `many` otherwise (zero included).
pub fn count<'a>(n: u64, one: &'a str, many: &'a str) -> Count<'a> {
    Count { n, one, many }
}

/// A number and its noun, written as words when formatted ([`count`]).
pub struct Count<'a> {
    n: u64,
    one: &'a str,
    many: &'a str,
}

impl fmt::Display for Count<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let noun = if self.n == 1 { self.one } else { self.many };
        write!(f, "{} {noun}", self.n)
    }
}

/// [`count`] of bytes, the unit most messages count in.
pub fn bytes(n: u64) -> Count<'static> {
    count(n, "byte", "bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_number_plural() {
        assert_eq!(count(1, "file", "files").to_string(), "1 file");
        assert_eq!(count(0, "file", "files").to_string(), "0 files");
        assert_eq!(count(2, "entry", "entries").to_string(), "2 entries");
        assert_eq!(bytes(1).to_string(), "1 byte");
        assert_eq!(bytes(1_048_577).to_string(), "1048577 bytes");
    }
}
