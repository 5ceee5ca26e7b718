//! Line diffs that lose nothing and spend few tokens.
//!
//! Content is split on `\n` only, so `\r` and a trailing newline are part of the lines and
//! `apply(old, diff(old, new))` gives back `new` byte for byte. The compact form keeps
//! [`DIFF_CONTEXT_LINES`] unchanged lines beside each change and replaces longer unchanged
//! runs by a `skip` chunk that says how many lines it leaves out and where they start, so a
//! caller holding the old version can still rebuild the new one exactly.

use crate::api::{DiffChunk, SkippedLines};
use crate::limits::{DIFF_CONTEXT_LINES, DIFF_DEADLINE, DIFF_MIN_SKIPPED_LINES};
use similar::{Algorithm, DiffOp, capture_diff_slices_deadline};
use std::fmt;
use std::time::{Duration, Instant};

/// Which form of diff to return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Every line of every chunk.
    Full,
    /// Long unchanged runs left out as `skip` chunks.
    Compact,
}

/// A line as the diff compares it: eight bytes at a time. In the component, comparing two
/// strings is wasi-libc's `memcmp`, which goes byte by byte, and a diff compares every line
/// the two texts share: that was a ninth of a component read.
#[derive(Clone, Copy, Debug, Hash)]
struct Line<'a>(&'a str);

impl<'a> Line<'a> {
    /// The lines of `text`: split on `\n` only, so joining them with `\n` gives `text` back.
    /// Searched eight bytes at a time: `str::split` searches four at a time in the component
    /// (its words are `usize`), and splitting both texts was a tenth of a component read.
    fn all(text: &'a str) -> Vec<Self> {
        let bytes = text.as_bytes();
        let mut lines = Vec::new();
        let mut start = 0;
        let mut end_at = |at: usize| {
            lines.push(Line(&text[start..at]));
            start = at + 1;
        };
        let (words, rest) = bytes.as_chunks::<8>();
        for (i, word) in words.iter().enumerate() {
            let mut newlines = newlines_in(*word);
            while newlines != 0 {
                end_at(i * 8 + newlines.trailing_zeros() as usize / 8);
                newlines &= newlines - 1;
            }
        }
        let tail = words.len() * 8;
        for (at, byte) in (tail..).zip(rest) {
            if *byte == b'\n' {
                end_at(at);
            }
        }
        lines.push(Line(&text[start..]));
        lines
    }
}

impl PartialEq for Line<'_> {
    fn eq(&self, other: &Self) -> bool {
        same(self.0, other.0)
    }
}

impl Eq for Line<'_> {}

/// A word with byte `b` in each of its eight bytes.
const fn every_byte(b: u8) -> u64 {
    u64::from_ne_bytes([b; 8])
}

/// The bytes of `word` that are `\n`: the high bit of each set, every other bit clear.
fn newlines_in(word: [u8; 8]) -> u64 {
    const LOW_SEVEN: u64 = every_byte(0x7f);
    // Zero where a byte is `\n`; then the high bit set in exactly those bytes.
    let x = u64::from_le_bytes(word) ^ every_byte(b'\n');
    !(((x & LOW_SEVEN) + LOW_SEVEN) | x | LOW_SEVEN)
}

/// How many `\n` bytes `bytes` holds, counted eight at a time.
fn count_newlines(bytes: &[u8]) -> usize {
    let (words, rest) = bytes.as_chunks::<8>();
    let whole: usize = words
        .iter()
        .map(|w| newlines_in(*w).count_ones() as usize)
        .sum();
    whole + rest.iter().filter(|b| **b == b'\n').count()
}

/// Whether `a` and `b` are the same text, compared eight bytes at a time: `==` is
/// wasi-libc's byte-by-byte `memcmp` in the component (see [`Line`]).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && common_prefix(a.as_bytes(), b.as_bytes()) == a.len()
}

/// How many bytes `a` and `b` share at their start, compared eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let (a_words, _) = a.as_chunks::<8>();
    let (b_words, _) = b.as_chunks::<8>();
    for (i, (x, y)) in a_words.iter().zip(b_words).enumerate() {
        let differ = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if differ != 0 {
            return i * 8 + differ.trailing_zeros() as usize / 8;
        }
    }
    let done = a_words.len().min(b_words.len()) * 8;
    done + a[done..]
        .iter()
        .zip(&b[done..])
        .take_while(|(x, y)| x == y)
        .count()
}

/// How many bytes `a` and `b` share at their end, compared eight at a time.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let (_, a_words) = a.as_rchunks::<8>();
    let (_, b_words) = b.as_rchunks::<8>();
    for (i, (x, y)) in a_words.iter().rev().zip(b_words.iter().rev()).enumerate() {
        let differ = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if differ != 0 {
            return i * 8 + differ.leading_zeros() as usize / 8;
        }
    }
    let done = a_words.len().min(b_words.len()) * 8;
    done + a[..a.len() - done]
        .iter()
        .rev()
        .zip(b[..b.len() - done].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The whole lines two different texts share at their start and at their end, found by
/// comparing bytes: a small change to a long text leaves most of its lines there, and only
/// the lines between need splitting and diffing (splitting both texts and comparing them
/// line by line was most of a component read's diff).
///
/// Positions count each text as if a `\n` followed its last line, so that every line ends
/// in one: the last line then compares as any other.
struct Shared {
    /// Where the shared start ends, in both texts: after a `\n`, or 0.
    head_end: usize,
    /// The lines of the shared start.
    head_lines: usize,
    /// Where the shared end starts in the old text and in the new: after a `\n`, or at
    /// `head_end`.
    tail_start: (usize, usize),
    /// The lines of the shared end.
    tail_lines: usize,
}

impl Shared {
    /// What `old` and `new`, two different texts, share.
    fn of(old: &str, new: &str) -> Self {
        let (a, b) = (old.as_bytes(), new.as_bytes());
        let byte = |text: &[u8], at: usize| text.get(at).copied().unwrap_or(b'\n');
        // The shared start, to the end of its last whole line.
        let mut shared = common_prefix(a, b);
        if (shared == a.len()) != (shared == b.len()) && byte(a, shared) == byte(b, shared) {
            shared += 1;
        }
        let head_end = if shared > a.len() {
            shared
        } else {
            a[..shared]
                .iter()
                .rposition(|c| *c == b'\n')
                .map_or(0, |at| at + 1)
        };
        let head_lines =
            count_newlines(&a[..head_end.min(a.len())]) + usize::from(head_end > a.len());
        let ends = (a.len() + 1, b.len() + 1);
        if head_end == ends.0 || head_end == ends.1 {
            return Self {
                head_end,
                head_lines,
                tail_start: ends,
                tail_lines: 0,
            };
        }
        // The shared end of what is left, to the start of its first whole line.
        let shared = 1 + common_suffix(&a[head_end..], &b[head_end..]);
        let (mut start_a, mut start_b) = (ends.0 - shared, ends.1 - shared);
        let line_start = |text: &[u8], at: usize| at == head_end || text[at - 1] == b'\n';
        if !(line_start(a, start_a) && line_start(b, start_b)) {
            let first = a[start_a..]
                .iter()
                .position(|c| *c == b'\n')
                .map_or(ends.0 - start_a, |at| at + 1);
            start_a += first;
            start_b += first;
        }
        let tail_lines = if start_a == ends.0 {
            0
        } else {
            1 + count_newlines(&a[start_a..])
        };
        Self {
            head_end,
            head_lines,
            tail_start: (start_a, start_b),
            tail_lines,
        }
    }

    /// The lines of `old` and of `new` between the shared start and the shared end.
    fn middles<'a>(&self, old: &'a str, new: &'a str) -> (Vec<Line<'a>>, Vec<Line<'a>>) {
        let middle = |text: &'a str, end: usize| {
            if end == self.head_end {
                Vec::new()
            } else {
                Line::all(&text[self.head_end..end - 1])
            }
        };
        (
            middle(old, self.tail_start.0),
            middle(new, self.tail_start.1),
        )
    }
}

/// Some whole lines of a text: a part of it, not yet split, or split.
#[derive(Clone, Copy)]
enum Lines<'a> {
    /// The lines of this text, split on `\n` when they are needed: a shared start or end,
    /// whose lines a compact diff mostly skips.
    Text(&'a str),
    /// Lines the diff compared.
    Split(&'a [Line<'a>]),
}

impl Lines<'_> {
    /// Every line, owned.
    fn all(self) -> Vec<String> {
        match self {
            Lines::Text(text) => text.split('\n').map(str::to_owned).collect(),
            Lines::Split(lines) => lines.iter().map(|l| l.0.to_owned()).collect(),
        }
    }

    /// The first `n` lines, owned: no more than that many are split.
    fn first(self, n: usize) -> Vec<String> {
        match self {
            Lines::Text(text) => text.split('\n').take(n).map(str::to_owned).collect(),
            Lines::Split(lines) => Lines::Split(&lines[..n]).all(),
        }
    }

    /// The last `n` lines, owned: no more than that many are split.
    fn last(self, n: usize) -> Vec<String> {
        match self {
            Lines::Text(text) => {
                let mut last: Vec<String> = text.rsplit('\n').take(n).map(str::to_owned).collect();
                last.reverse();
                last
            }
            Lines::Split(lines) => Lines::Split(&lines[lines.len() - n..]).all(),
        }
    }
}

/// One step from the old text to the new, in order.
enum Step<'a> {
    /// `len` lines in both, from line `at.0` of the old text (0-based) and `at.1` of the new.
    Same {
        lines: Lines<'a>,
        len: usize,
        at: (usize, usize),
    },
    /// Lines of the old text only.
    Removed(&'a [Line<'a>]),
    /// Lines of the new text only.
    Added(&'a [Line<'a>]),
}

/// The chunks that turn `old` into `new`, in order. Two equal texts give one `equal`
/// chunk (or one `skip` in the compact form). Refining stops after [`DIFF_DEADLINE`].
pub fn diff(old: &str, new: &str, form: Form) -> Vec<DiffChunk> {
    diff_within(old, new, form, DIFF_DEADLINE)
}

/// [`diff`] with another time budget: once it is spent, what is left unmatched becomes one
/// remove and one add, still exact, only less compact.
fn diff_within(old: &str, new: &str, form: Form, budget: Duration) -> Vec<DiffChunk> {
    if same(old, new) {
        let len = count_newlines(old.as_bytes()) + 1;
        let lines = Lines::Text(old);
        return chunks(
            [Step::Same {
                lines,
                len,
                at: (0, 0),
            }],
            form,
        );
    }
    let shared = Shared::of(old, new);
    let (old_lines, new_lines) = shared.middles(old, new);
    let deadline = Instant::now().checked_add(budget);
    let ops = capture_diff_slices_deadline(Algorithm::Myers, &old_lines, &new_lines, deadline);
    let before = shared.head_lines;
    let head = (before > 0).then(|| Step::Same {
        lines: Lines::Text(&old[..shared.head_end - 1]),
        len: before,
        at: (0, 0),
    });
    let between = steps(&ops, &old_lines, &new_lines, before);
    let tail = (shared.tail_lines > 0).then(|| Step::Same {
        lines: Lines::Text(&old[shared.tail_start.0..]),
        len: shared.tail_lines,
        at: (before + old_lines.len(), before + new_lines.len()),
    });
    chunks(head.into_iter().chain(between).chain(tail), form)
}

/// The steps of `ops`, a diff of `old` and `new`, lines that start at line `before` of the
/// texts.
fn steps<'a>(
    ops: &'a [DiffOp],
    old: &'a [Line<'a>],
    new: &'a [Line<'a>],
    before: usize,
) -> impl Iterator<Item = Step<'a>> {
    ops.iter().flat_map(move |op| {
        let (old_range, new_range) = (op.old_range(), op.new_range());
        let (removed, added) = (&old[old_range.clone()], &new[new_range.clone()]);
        match op {
            DiffOp::Equal { .. } => [
                Some(Step::Same {
                    lines: Lines::Split(removed),
                    len: removed.len(),
                    at: (before + old_range.start, before + new_range.start),
                }),
                None,
            ],
            DiffOp::Delete { .. } => [Some(Step::Removed(removed)), None],
            DiffOp::Insert { .. } => [Some(Step::Added(added)), None],
            DiffOp::Replace { .. } => [Some(Step::Removed(removed)), Some(Step::Added(added))],
        }
        .into_iter()
        .flatten()
    })
}

/// The chunks of `steps`: in the compact form, a long run of the same lines keeps
/// [`DIFF_CONTEXT_LINES`] beside each change and is skipped in between.
fn chunks<'a>(steps: impl IntoIterator<Item = Step<'a>>, form: Form) -> Vec<DiffChunk> {
    let mut steps = steps.into_iter().peekable();
    let mut chunks = Vec::new();
    while let Some(step) = steps.next() {
        let is_last = steps.peek().is_none();
        match step {
            Step::Same { lines, len, at } => {
                // Every step makes a chunk: none yet means this is the first step.
                let head = if chunks.is_empty() {
                    0
                } else {
                    DIFF_CONTEXT_LINES
                };
                let tail = if is_last { 0 } else { DIFF_CONTEXT_LINES };
                if form == Form::Full || len < head + tail + DIFF_MIN_SKIPPED_LINES {
                    chunks.push(DiffChunk::Equal(lines.all()));
                } else {
                    if head > 0 {
                        chunks.push(DiffChunk::Equal(lines.first(head)));
                    }
                    chunks.push(DiffChunk::Skip(SkippedLines {
                        count: line_number(len - head - tail),
                        old_line: line_number(at.0 + head + 1),
                        new_line: line_number(at.1 + head + 1),
                    }));
                    if tail > 0 {
                        chunks.push(DiffChunk::Equal(lines.last(tail)));
                    }
                }
            }
            Step::Removed(lines) => chunks.push(DiffChunk::Remove(Lines::Split(lines).all())),
            Step::Added(lines) => chunks.push(DiffChunk::Add(Lines::Split(lines).all())),
        }
    }
    chunks
}

/// Line counts and numbers fit `u32`: content is at most 1 MiB, so at most 2^20 + 1 lines.
fn line_number(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Why chunks could not be applied to a text: they were made from another text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApplyError {
    /// The index of the chunk that did not fit.
    pub chunk: usize,
    /// What did not fit.
    pub reason: &'static str,
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chunk {} does not apply: {}", self.chunk, self.reason)
    }
}

impl std::error::Error for ApplyError {}

/// Rebuilds the new text from the old one and the chunks of either form: what a caller does
/// with a `read_file` diff. No chunks means no change.
pub fn apply(old: &str, chunks: &[DiffChunk]) -> Result<String, ApplyError> {
    if chunks.is_empty() {
        return Ok(old.to_owned());
    }
    let old_lines = Line::all(old);
    let mut at = 0;
    let mut out: Vec<&str> = Vec::with_capacity(old_lines.len());
    for (chunk, c) in chunks.iter().enumerate() {
        let fail = |reason| ApplyError { chunk, reason };
        match c {
            DiffChunk::Equal(lines) | DiffChunk::Remove(lines) => {
                let end = at + lines.len();
                let theirs = old_lines.get(at..end).unwrap_or_default();
                if theirs.len() != lines.len()
                    || theirs.iter().zip(lines).any(|(t, l)| *t != Line(l))
                {
                    return Err(fail("its lines are not the old text's lines at that point"));
                }
                if matches!(c, DiffChunk::Equal(_)) {
                    out.extend(theirs.iter().map(|l| l.0));
                }
                at = end;
            }
            DiffChunk::Add(lines) => out.extend(lines.iter().map(String::as_str)),
            DiffChunk::Skip(s) => {
                if s.old_line as usize != at + 1 || s.new_line as usize != out.len() + 1 {
                    return Err(fail("its line numbers are not where the diff has got to"));
                }
                let end = at + s.count as usize;
                let skipped = old_lines
                    .get(at..end)
                    .ok_or_else(|| fail("it skips past the end"))?;
                out.extend(skipped.iter().map(|l| l.0));
                at = end;
            }
        }
    }
    if at != old_lines.len() {
        return Err(ApplyError {
            chunk: chunks.len(),
            reason: "the chunks end before the old text does",
        });
    }
    Ok(out.join("\n"))
}

/// About how many bytes a JSON rendering of `chunks` takes: exact for the lines, close for
/// the framing. Compared with [`encoded_len`] of the content to decide whether a diff saves
/// anything at all.
pub fn encoded_chunks_len(chunks: &[DiffChunk]) -> usize {
    const LINES_FRAME: usize = r#"{"op":"remove","lines":[]},"#.len();
    const SKIP_FRAME: usize = r#"{"op":"skip","count":,"old_line":,"new_line":},"#.len() + 3 * 7;
    chunks
        .iter()
        .map(|c| match c {
            DiffChunk::Equal(lines) | DiffChunk::Remove(lines) | DiffChunk::Add(lines) => {
                LINES_FRAME + lines.iter().map(|l| encoded_len(l) + 1).sum::<usize>()
            }
            DiffChunk::Skip(_) => SKIP_FRAME,
        })
        .sum()
}

/// The length of `text` as a JSON string, quotes and escapes included. Counted by bytes,
/// not chars: only ASCII is ever escaped, and every other byte is written as it is. Every
/// read's answer counts its whole content this way, and decoding it char by char was a
/// seventh of a native read. Eight bytes at a time: most words of a text hold nothing to
/// escape, and only those that do are looked at byte by byte (the component has no SIMD to
/// do it for the loop).
pub fn encoded_len(text: &str) -> usize {
    let (words, rest) = text.as_bytes().as_chunks::<8>();
    let escapes: usize = words
        .iter()
        .filter(|w| may_escape(u64::from_le_bytes(**w)))
        .flatten()
        .chain(rest)
        .map(|b| escape_len(*b))
        .sum();
    2 + text.len() + escapes
}

/// How many bytes JSON adds to write byte `b` of a string.
fn escape_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
        b if b < b' ' => 5,
        _ => 0,
    }
}

/// Whether any byte of `word` is one JSON escapes: a control byte, `"` or `\`. Never false
/// when one is (a borrow can only flag a byte above one that is).
fn may_escape(word: u64) -> bool {
    // The high bit of some byte of `x` below `limit` (at most 0x80) is set if any is.
    let any_below = |x: u64, limit: u8| x.wrapping_sub(every_byte(limit)) & !x & every_byte(0x80);
    let control = any_below(word, b' ');
    let quote = any_below(word ^ every_byte(b'"'), 1);
    let backslash = any_below(word ^ every_byte(b'\\'), 1);
    control | quote | backslash != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    /// Lines `line 1` .. `line n`, with every `every`-th one changed, and the first and the
    /// last, so no common prefix or suffix does the matching.
    fn sprinkled(n: usize, every: usize) -> String {
        (1..=n)
            .map(|i| {
                if i == 1 || i == n || i % every == 0 {
                    format!("changed {i}\n")
                } else {
                    format!("line {i}\n")
                }
            })
            .collect()
    }

    #[test]
    fn a_spent_budget_stops_refining_and_stays_exact() {
        let (old, new) = (numbered(400), sprinkled(400, 40));
        let refined = diff_within(&old, &new, Form::Full, DIFF_DEADLINE);
        let coarse = diff_within(&old, &new, Form::Full, Duration::ZERO);
        let removed = |chunks: &[DiffChunk]| -> usize {
            chunks
                .iter()
                .map(|c| match c {
                    DiffChunk::Remove(lines) => lines.len(),
                    _ => 0,
                })
                .sum()
        };
        assert_eq!(removed(&refined), 11, "only the changed lines");
        assert!(
            removed(&coarse) > 300,
            "hardly refined: {}",
            removed(&coarse)
        );
        assert_eq!(apply(&old, &refined).unwrap(), new);
        assert_eq!(apply(&old, &coarse).unwrap(), new);
    }

    /// The deadline holds for the worst pair there is: two 1 MiB texts of one-character
    /// lines that share almost nothing (Myers would need about 10^12 steps to finish).
    /// The figure is printed beside the deadline; the bound is loose (a debug build on a
    /// loaded machine took 1.05 s) but hours below what a missing deadline would take.
    #[test]
    #[allow(clippy::print_stdout)] // the test reports its figure
    fn the_worst_pair_answers_soon_after_the_deadline() {
        let old: String = (0..1 << 19)
            .map(|i| if i % 2 == 0 { "a\n" } else { "b\n" })
            .collect();
        let new: String = (0..1 << 19)
            .map(|i| if i % 3 == 0 { "a\n" } else { "c\n" })
            .collect();
        let started = Instant::now();
        let chunks = diff(&old, &new, Form::Compact);
        let took = started.elapsed();
        println!("figure: worst-case 1 MiB diff in {took:?} (deadline {DIFF_DEADLINE:?})");
        assert_eq!(apply(&old, &chunks).unwrap(), new);
        assert!(took < DIFF_DEADLINE * 10, "{took:?}");
    }

    #[test]
    fn seed_shape_for_a_small_change() {
        let chunks = diff("a\nb\nc", "a\nB\nc", Form::Full);
        assert_eq!(
            chunks,
            vec![
                DiffChunk::Equal(vec!["a".into()]),
                DiffChunk::Remove(vec!["b".into()]),
                DiffChunk::Add(vec!["B".into()]),
                DiffChunk::Equal(vec!["c".into()]),
            ]
        );
    }

    #[test]
    fn compact_skips_long_runs_and_says_where() {
        let old = numbered(100);
        let new = old.replace("line 50\n", "line fifty\n");
        let chunks = diff(&old, &new, Form::Compact);
        let skip = |count, line| {
            DiffChunk::Skip(SkippedLines {
                count,
                old_line: line,
                new_line: line,
            })
        };
        let eq = |from: usize, to: usize| {
            DiffChunk::Equal((from..=to).map(|i| format!("line {i}")).collect())
        };
        assert_eq!(
            chunks,
            vec![
                skip(46, 1),
                eq(47, 49),
                DiffChunk::Remove(vec!["line 50".into()]),
                DiffChunk::Add(vec!["line fifty".into()]),
                eq(51, 53),
                // lines 54..=100 and the empty line after the final newline
                skip(48, 54),
            ]
        );
        assert_eq!(apply(&old, &chunks).unwrap(), new);
        assert!(
            encoded_chunks_len(&chunks) * 2 < encoded_len(&new),
            "a third of the bytes or less"
        );
    }

    #[test]
    fn short_unchanged_runs_stay_whole() {
        let chunks = diff(
            "a\nb\nc\nd\ne\nf\ng\nh",
            "A\nb\nc\nd\ne\nf\ng\nH",
            Form::Compact,
        );
        assert!(!chunks.iter().any(|c| matches!(c, DiffChunk::Skip(_))));
    }

    #[test]
    fn trailing_newline_and_carriage_returns_are_lines_too() {
        for (old, new) in [
            ("a\n", "a"),
            ("a", "a\n"),
            ("a\r\nb", "a\nb"),
            ("", "\n"),
            ("x", ""),
        ] {
            for form in [Form::Full, Form::Compact] {
                assert_eq!(
                    apply(old, &diff(old, new, form)).unwrap(),
                    new,
                    "{old:?} -> {new:?}"
                );
            }
        }
    }

    #[test]
    fn apply_refuses_chunks_of_another_text() {
        let chunks = diff("a\nb", "a\nc", Form::Full);
        assert_eq!(apply("z\nb", &chunks).unwrap_err().chunk, 0);
        assert_eq!(
            apply("a\nb\nextra", &chunks).unwrap_err().chunk,
            chunks.len()
        );
        let compact = diff(&numbered(20), &numbered(21), Form::Compact);
        // Its first chunk skips more lines than the shorter text has.
        assert_eq!(apply(&numbered(10), &compact).unwrap_err().chunk, 0);
    }

    #[test]
    fn json_length_counts_escapes() {
        assert_eq!(encoded_len(""), 2);
        assert_eq!(encoded_len("a\"b\n"), 2 + 1 + 2 + 1 + 2);
        assert_eq!(encoded_len("\u{1}"), 8);
        assert_eq!(encoded_len("\u{e9}"), 4);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(0x7e1a_91c3), ..ProptestConfig::default() })]

        /// What the answer's JSON really takes, for any text: every ASCII byte, controls
        /// included, and any other char.
        #[test]
        fn json_length_is_what_serde_json_writes(
            chars in prop::collection::vec(
                prop_oneof![(0u8..0x80).prop_map(char::from), any::<char>()],
                0..64,
            )
        ) {
            let text = String::from_iter(chars);
            prop_assert_eq!(encoded_len(&text), serde_json::to_string(&text).unwrap().len());
        }

        /// The same for text that is mostly plain, so that whole words hold nothing to
        /// escape and the few that must be escaped fall anywhere in a word.
        #[test]
        fn json_length_of_mostly_plain_text(
            text in "([a-z ~\u{7f}\u{e9}]{0,20}[\"\\\\\n\t\u{0}\u{1}\u{1f}]?){0,6}"
        ) {
            prop_assert_eq!(encoded_len(&text), serde_json::to_string(&text).unwrap().len());
        }

        /// Lines are what splitting on `\n` gives, wherever in a word the newlines fall,
        /// beside multi-byte chars.
        #[test]
        fn lines_are_split_on_newlines(text in "[a\n\r\u{b}\u{e9}\u{1f600}]{0,80}") {
            let lines: Vec<&str> = Line::all(&text).iter().map(|l| l.0).collect();
            prop_assert_eq!(lines, text.split('\n').collect::<Vec<_>>());
        }

        /// Lines compare as strings do, whichever of a line's words differs or whether
        /// only the bytes after its last whole word do.
        #[test]
        fn lines_compare_as_strings_do(
            line in "[ab]{0,40}",
            at in any::<prop::sample::Index>(),
            edit in prop_oneof![Just(None), Just(Some('a')), Just(Some('b')), Just(Some('ü'))],
        ) {
            let mut other = line.clone();
            if let Some(c) = edit {
                let at = at.index(line.len() + 1);
                other.replace_range(at..(at + 1).min(line.len()), c.encode_utf8(&mut [0; 4]));
            }
            prop_assert_eq!(Line(&line) == Line(&other), line == other);
        }
    }

    fn text() -> impl Strategy<Value = String> {
        // Few distinct lines so that random pairs share runs, plus \r and trailing newlines.
        let line = prop_oneof!["a", "b", "c", "d\r", "", "é ü", "\"q\""];
        (prop::collection::vec(line, 0..60), any::<bool>()).prop_map(|(lines, trailing)| {
            let mut text = lines.join("\n");
            if trailing {
                text.push('\n');
            }
            text
        })
    }

    /// The diff of the texts' lines split whole, with nothing set aside as shared first.
    fn untrimmed(old: &str, new: &str, form: Form) -> Vec<DiffChunk> {
        let (old_lines, new_lines) = (Line::all(old), Line::all(new));
        let ops = capture_diff_slices_deadline(Algorithm::Myers, &old_lines, &new_lines, None);
        chunks(steps(&ops, &old_lines, &new_lines, 0), form)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5c2a_7c4d), ..ProptestConfig::default() })]

        /// Setting the shared start and end aside changes the work, not the answer's size:
        /// as many lines removed and added as when the whole texts are diffed, and the new
        /// text rebuilt. (Where a change sits among repeated lines may differ: the whole
        /// diff can slide one into what is set aside here.)
        #[test]
        fn shared_lines_set_aside_change_as_few_lines(
            old in text(),
            edits in prop::collection::vec((any::<prop::sample::Index>(), text()), 0..3),
        ) {
            // Mostly texts that share a long start and end, as versions of one file do.
            let mut new = old.clone();
            for (at, insert) in edits {
                let at = at.index(new.len() + 1);
                let at = (0..=at).rev().find(|i| new.is_char_boundary(*i)).unwrap_or(0);
                new.insert_str(at, &insert);
            }
            as_few_lines(&old, &new)?;
        }

        #[test]
        fn any_pair_changes_as_few_lines(old in text(), new in text()) {
            as_few_lines(&old, &new)?;
        }
    }

    /// The lines `chunks` remove and add.
    fn changed(chunks: &[DiffChunk]) -> (usize, usize) {
        chunks.iter().fold((0, 0), |(removed, added), c| match c {
            DiffChunk::Remove(lines) => (removed + lines.len(), added),
            DiffChunk::Add(lines) => (removed, added + lines.len()),
            _ => (removed, added),
        })
    }

    /// Also: what is set aside is every line the texts share at their start and their end,
    /// as the diff of whole texts would find them.
    fn as_few_lines(old: &str, new: &str) -> Result<(), TestCaseError> {
        if old != new {
            let (a, b) = (Line::all(old), Line::all(new));
            let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            let tail = a[head..]
                .iter()
                .rev()
                .zip(b[head..].iter().rev())
                .take_while(|(x, y)| x == y)
                .count();
            let shared = Shared::of(old, new);
            prop_assert_eq!((shared.head_lines, shared.tail_lines), (head, tail));
        }
        for form in [Form::Full, Form::Compact] {
            let chunks = diff(old, new, form);
            prop_assert_eq!(changed(&chunks), changed(&untrimmed(old, new, form)));
            prop_assert_eq!(apply(old, &chunks).unwrap(), new);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5c2a_7c4d), ..ProptestConfig::default() })]

        #[test]
        fn applying_either_form_rebuilds_the_new_text(old in text(), new in text()) {
            crate::testing::properties::diff_round_trip(&old, &new);
        }

        #[test]
        fn full_form_holds_every_line_of_both(old in text(), new in text()) {
            let chunks = diff(&old, &new, Form::Full);
            let (mut was, mut now) = (Vec::new(), Vec::new());
            for c in &chunks {
                match c {
                    DiffChunk::Equal(l) => { was.extend(l.clone()); now.extend(l.clone()); }
                    DiffChunk::Remove(l) => was.extend(l.clone()),
                    DiffChunk::Add(l) => now.extend(l.clone()),
                    DiffChunk::Skip(_) => prop_assert!(false, "full form never skips"),
                }
            }
            prop_assert_eq!(was.join("\n"), old);
            prop_assert_eq!(now.join("\n"), new);
        }
    }
}
