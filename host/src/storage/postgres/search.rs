//! Full-text search in PostgreSQL's own terms: a `tsvector` per document, a GIN index,
//! `ts_rank`.
//!
//! PostgreSQL's text parser has its own idea of a word (it keeps `config.toml` or an e-mail
//! address whole), so it is not used: a document's lexemes are the guest's words
//! ([`scratchpad_guest::tools::search::words`]), given as they are by `array_to_tsvector`,
//! and the query is built of the same words. A search therefore finds on PostgreSQL what it
//! finds on SQLite; only the order of equally good hits may differ (BM25 there, `ts_rank`
//! here).

use crate::storage::StoreError;
use std::collections::HashSet;

/// PostgreSQL refuses lexemes of 2 KiB and more; a word that long is not indexed.
const MAX_LEXEME_BYTES: usize = 2_046;

/// A `tsvector` holds at most 1 MiB. Lexemes are added until this many bytes (each word's
/// length and its entry's 4 bytes) have been used; a document with more distinct words is
/// found by its first ones only.
const MAX_DOC_BYTES: usize = 1_000_000;

/// The distinct words of `text`, in order of first use, within the limits above.
pub fn lexemes(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut used = 0;
    let mut out = Vec::new();
    for (_, word) in scratchpad_guest::tools::search::words(text) {
        if word.len() > MAX_LEXEME_BYTES || seen.contains(&word) {
            continue;
        }
        used += word.len() + 4;
        if used > MAX_DOC_BYTES {
            break;
        }
        seen.insert(word.clone());
        out.push(word);
    }
    out
}

/// The `tsquery` text for the guest's terms, all of them or any. `None` when nothing can
/// match. Terms are checked to be words, so no query syntax can reach PostgreSQL.
pub fn query(terms: &[String], match_all: bool) -> Result<Option<String>, StoreError> {
    if let Some(bad) = terms
        .iter()
        .find(|t| t.is_empty() || !t.chars().all(char::is_alphanumeric))
    {
        return Err(StoreError::Refused(format!(
            "search term {bad:?} is not a word of letters and digits"
        )));
    }
    let fits = |t: &&String| t.len() <= MAX_LEXEME_BYTES;
    if match_all && !terms.iter().all(|t| fits(&t)) {
        return Ok(None);
    }
    let quoted: Vec<String> = terms
        .iter()
        .filter(fits)
        .map(|t| format!("'{t}'"))
        .collect();
    Ok((!quoted.is_empty()).then(|| quoted.join(if match_all { " & " } else { " | " })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexemes_are_the_guests_distinct_words() {
        assert_eq!(
            lexemes("Config.toml: config, PORT=8080 port"),
            ["config", "toml", "port", "8080"]
        );
    }

    #[test]
    fn lexemes_stop_at_the_documents_limit() {
        let text: String = (0..300_000).map(|i| format!("w{i} ")).collect();
        let kept = lexemes(&text);
        let used: usize = kept.iter().map(|w| w.len() + 4).sum();
        assert!(
            used <= MAX_DOC_BYTES && kept.len() > 50_000,
            "{}",
            kept.len()
        );
        assert!(lexemes(&"x".repeat(3_000)).is_empty());
    }

    #[test]
    fn queries_join_quoted_words_and_refuse_syntax() {
        let t = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(query(&t(&["a", "b"]), true).unwrap().unwrap(), "'a' & 'b'");
        assert_eq!(query(&t(&["a", "b"]), false).unwrap().unwrap(), "'a' | 'b'");
        for bad in ["a'b", "a & b", "", "x:*"] {
            assert!(query(&t(&[bad]), false).is_err(), "{bad:?}");
        }
        let long = "y".repeat(3_000);
        assert_eq!(query(&t(&["a", &long]), true).unwrap(), None);
        assert_eq!(query(&t(&["a", &long]), false).unwrap().unwrap(), "'a'");
    }
}
