//! Answers that fit: long content served in parts of whole lines that each fit the agent's
//! `max_response_tokens`.
//!
//! Some clients refuse a tool result over 25,000 tokens; an agent that asks for a large file
//! should get a useful part and a cursor, not an error from its own client. An answer's
//! tokens are estimated from its JSON size ([`crate::limits::tokens`]).

use crate::ToolError;
use crate::diff::encoded_len;

/// A run of lines of some content.
#[derive(Debug, PartialEq, Eq)]
pub struct Part {
    /// The lines, each with its `\n`: the parts of a content, joined, give it byte for byte.
    pub text: String,
    /// The number of the first line (1-based).
    pub first_line: u64,
    /// Where the next part starts, if anything is left.
    pub next_line: Option<u64>,
    /// Set when the part ends inside a line longer than one answer: the byte in `next_line`
    /// where the next part starts.
    pub next_column: Option<u64>,
    /// Lines after this part (a line it ends inside counts as left).
    pub lines_left: u64,
}

/// Where a part starts: a line (1-based) and a byte in it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Start {
    /// The line; none for the first.
    pub line: Option<u64>,
    /// The byte in that line; none for its start.
    pub column: Option<u64>,
}

/// The lines of `content` from `start`, at most `limit` of them, as many as fit `budget`
/// bytes of JSON. Lines end after each `\n`; a last line without one counts too. A line
/// longer than the budget is cut at a character boundary and continued by `next_column`.
pub fn part(
    content: &str,
    start: Start,
    limit: Option<u64>,
    budget: u64,
) -> Result<Part, ToolError> {
    let total = content.split_inclusive('\n').count() as u64;
    let first_line = start.line.unwrap_or(1);
    if first_line == 0 || (first_line > total && !(first_line == 1 && total == 0)) {
        return Err(ToolError::InvalidArgument(format!(
            "offset must be a line number from 1 to {} (got {first_line})",
            total.max(1)
        )));
    }
    if limit == Some(0) {
        return Err(ToolError::InvalidArgument(
            "limit must be 1 or more lines (got 0)".to_owned(),
        ));
    }
    let mut lines = content.split_inclusive('\n').skip(first_line as usize - 1);
    let column = start.column.unwrap_or(0);
    let mut text = String::new();
    let mut used = 2u64;
    if let Some(line) = lines.next() {
        let rest = usize::try_from(column)
            .ok()
            .and_then(|c| line.get(c..))
            .filter(|rest| !rest.is_empty() || column == 0)
            .ok_or_else(|| {
                ToolError::InvalidArgument(format!(
                    "column must be a character boundary inside line {first_line}, which is {} \
                     bytes (got {column})",
                    line.len()
                ))
            })?;
        let cost = encoded_len(rest) as u64 - 2;
        if used + cost > budget {
            // Too long for one answer: as much of it as fits, at least one character.
            let mut end = 0;
            for (at, c) in rest.char_indices() {
                let step = encoded_len(c.encode_utf8(&mut [0; 4])) as u64 - 2;
                if used + step > budget && at > 0 {
                    break;
                }
                used += step;
                end = at + c.len_utf8();
            }
            text.push_str(&rest[..end]);
            return Ok(Part {
                text,
                first_line,
                next_line: Some(first_line),
                next_column: Some(column + end as u64),
                lines_left: total + 1 - first_line,
            });
        }
        text.push_str(rest);
        used += cost;
    }
    let mut taken = u64::from(!content.is_empty());
    let most = limit.unwrap_or(u64::MAX);
    for line in lines {
        let cost = encoded_len(line) as u64 - 2;
        if taken == most || used + cost > budget {
            break;
        }
        text.push_str(line);
        used += cost;
        taken += 1;
    }
    let next = first_line + taken;
    let lines_left = (total + 1).saturating_sub(next);
    Ok(Part {
        text,
        first_line,
        next_line: (lines_left > 0).then_some(next),
        next_column: None,
        lines_left,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64) -> Start {
        Start {
            line: Some(line),
            column: None,
        }
    }

    /// Reads `content` part by part under `budget`, checking each part fits.
    fn all_parts(content: &str, budget: u64) -> String {
        let (mut start, mut joined) = (Start::default(), String::new());
        loop {
            let p = part(content, start, None, budget).unwrap();
            assert!(encoded_len(&p.text) as u64 <= budget, "{p:?}");
            joined.push_str(&p.text);
            match p.next_line {
                Some(line) => {
                    start = Start {
                        line: Some(line),
                        column: p.next_column,
                    }
                }
                None => return joined,
            }
        }
    }

    #[test]
    fn parts_join_to_the_content_and_each_fits() {
        let content = (1..=100).map(|i| format!("line {i}\n")).collect::<String>() + "tail";
        assert_eq!(all_parts(&content, 100), content);
    }

    #[test]
    fn offset_limit_and_counts() {
        let content = "a\nb\nc\nd\n";
        let p = part(content, at(2), Some(2), 1_000).unwrap();
        let expected = Part {
            text: "b\nc\n".into(),
            first_line: 2,
            next_line: Some(4),
            next_column: None,
            lines_left: 1,
        };
        assert_eq!(p, expected);
        let last = part(content, at(4), None, 1_000).unwrap();
        assert_eq!((last.next_line, last.lines_left), (None, 0));
        assert_eq!(
            part(content, at(5), None, 1_000).unwrap_err(),
            ToolError::InvalidArgument("offset must be a line number from 1 to 4 (got 5)".into())
        );
        assert_eq!(
            part(content, at(0), None, 1_000).unwrap_err(),
            ToolError::InvalidArgument("offset must be a line number from 1 to 4 (got 0)".into())
        );
        assert_eq!(
            part(content, Start::default(), Some(0), 1_000).unwrap_err(),
            ToolError::InvalidArgument("limit must be 1 or more lines (got 0)".into())
        );
        assert_eq!(part("", Start::default(), None, 1_000).unwrap().text, "");
    }

    #[test]
    fn a_line_longer_than_an_answer_is_cut_and_continued() {
        let content = format!("{}\nshort\n", "ü".repeat(30));
        let first = part(&content, Start::default(), None, 20).unwrap();
        assert_eq!(
            (first.text.as_str(), first.next_line, first.next_column),
            ("üüüüüüüüü", Some(1), Some(18))
        );
        let inside = Start {
            line: Some(1),
            column: Some(1),
        };
        assert!(matches!(
            part(&content, inside, None, 20),
            Err(ToolError::InvalidArgument(m)) if m.starts_with("column must be a character boundary")
        ));
        assert_eq!(all_parts(&content, 20), content);
    }
}
