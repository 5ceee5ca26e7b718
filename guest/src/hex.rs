//! Bytes as lower-case hex: the content hash every store keeps beside a version, and the
//! names and keys the host makes from bytes. Two lookups a byte into a string sized once;
//! `format!("{b:02x}")` made and dropped a string a byte, which in the component was about
//! a microsecond of every write (BENCHMARKS.md, "A write's hash written without a format").

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` in lower-case hex, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    push_hex(&mut out, bytes);
    out
}

/// Appends `bytes` to `out` in lower-case hex.
pub fn push_hex(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_two_lower_case_digits() {
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&all), expected);
        assert_eq!(hex(&[]), "");
        let mut out = "x".to_owned();
        push_hex(&mut out, &[0x0f, 0xa0]);
        assert_eq!(out, "x0fa0");
    }
}
