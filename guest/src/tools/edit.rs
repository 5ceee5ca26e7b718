//! Edits against a known version: exact-text replacements and line-range replacements.
//!
//! A text edit must match exactly once, so an edit never lands somewhere the caller did not
//! mean; the error says how many times it matched, and for none, whether it matches once
//! the line endings or surrounding whitespace are ignored (the usual slip of a model copying
//! text). Lines are the content split on `\n`, as in diffs, so a line edit is lossless.

use crate::api::{Edit, LineEdit, TextEdit};

/// The content after one edit, or why the edit does not apply.
pub fn apply(content: &str, edit: &Edit) -> Result<String, String> {
    match edit {
        Edit::Text(t) => replace_text(content, t),
        Edit::Lines(l) => replace_lines(content, l),
    }
}

fn replace_text(content: &str, edit: &TextEdit) -> Result<String, String> {
    if edit.old.is_empty() {
        return Err("old must not be empty (to add text, use a line edit)".to_owned());
    }
    let mut found = content.match_indices(edit.old.as_str());
    match (found.next(), found.next()) {
        (Some((at, _)), None) => {
            let mut out = String::with_capacity(content.len() + edit.new.len());
            out.push_str(&content[..at]);
            out.push_str(&edit.new);
            out.push_str(&content[at + edit.old.len()..]);
            Ok(out)
        }
        (None, _) => {
            let hint = if content.contains(edit.old.trim()) {
                " (it does once its leading and trailing whitespace is trimmed: copy the text exactly)"
            } else {
                ""
            };
            Err(format!(
                "old text {} does not occur in the file{hint}",
                crate::names::quoted(&edit.old)
            ))
        }
        (Some(_), Some(_)) => Err(format!(
            "old text {} occurs {} times; it must occur once (include more of the surrounding text)",
            crate::names::quoted(&edit.old),
            content.matches(edit.old.as_str()).count()
        )),
    }
}

fn replace_lines(content: &str, edit: &LineEdit) -> Result<String, String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let count = lines.len() as u64;
    let (start, end) = (edit.start, edit.end);
    if start == 0 || start > count + 1 || end + 1 < start || end > count {
        // A reader pages "a\nb\n" as two lines; said plainly, the third is the empty one.
        let last = if content.ends_with('\n') {
            format!(", line {count} being the empty one after the last newline")
        } else {
            String::new()
        };
        return Err(format!(
            "lines {start} to {end} are not a range of this version's {count} lines{last} \
             (start is 1 to {}; end is start - 1, to insert, up to {count})",
            count + 1
        ));
    }
    let (start, end) = (start as usize, end as usize);
    let mut out: Vec<&str> = Vec::with_capacity(lines.len() + edit.lines.len());
    out.extend(&lines[..start - 1]);
    out.extend(edit.lines.iter().map(String::as_str));
    out.extend(&lines[end..]);
    Ok(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(old: &str, new: &str) -> Edit {
        Edit::Text(TextEdit {
            old: old.into(),
            new: new.into(),
        })
    }

    fn lines(start: u64, end: u64, new: &[&str]) -> Edit {
        Edit::Lines(LineEdit {
            start,
            end,
            lines: new.iter().map(|l| (*l).to_owned()).collect(),
        })
    }

    #[test]
    fn a_text_edit_must_match_once() {
        assert_eq!(apply("a b c", &text("b", "B")).unwrap(), "a B c");
        assert_eq!(
            apply("a b b", &text("b", "B")).unwrap_err(),
            r#"old text "b" occurs 2 times; it must occur once (include more of the surrounding text)"#
        );
        assert!(
            apply("a b", &text("x", "y"))
                .unwrap_err()
                .starts_with(r#"old text "x" does not occur"#)
        );
        assert!(
            apply("a b", &text("b\n", "y"))
                .unwrap_err()
                .contains("whitespace is trimmed")
        );
        assert_eq!(
            apply("a", &text("", "y")).unwrap_err(),
            "old must not be empty (to add text, use a line edit)"
        );
    }

    #[test]
    fn line_edits_replace_insert_and_delete() {
        let doc = "one\ntwo\nthree\n";
        assert_eq!(
            apply(doc, &lines(2, 2, &["TWO"])).unwrap(),
            "one\nTWO\nthree\n"
        );
        assert_eq!(
            apply(doc, &lines(2, 1, &["new"])).unwrap(),
            "one\nnew\ntwo\nthree\n"
        );
        assert_eq!(apply(doc, &lines(1, 2, &[])).unwrap(), "three\n");
        // The trailing "" after the last newline is line 4: appending goes before it.
        assert_eq!(
            apply(doc, &lines(4, 3, &["four"])).unwrap(),
            "one\ntwo\nthree\nfour\n"
        );
        for (start, end) in [(0, 0), (3, 1), (2, 5), (6, 5)] {
            assert_eq!(
                apply(doc, &lines(start, end, &[])).unwrap_err(),
                format!(
                    "lines {start} to {end} are not a range of this version's 4 lines, line 4 being the empty one after the last newline (start is 1 to 5; end is start - 1, to insert, up to 4)"
                )
            );
        }
        assert_eq!(
            apply("one\ntwo", &lines(4, 3, &[])).unwrap_err(),
            "lines 4 to 3 are not a range of this version's 2 lines (start is 1 to 3; end is start - 1, to insert, up to 2)"
        );
    }
}
