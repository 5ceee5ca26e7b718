//! Full-text search in PostgreSQL's own terms: a `tsvector` per document, a GIN index,
//! `ts_rank`.
//!
//! PostgreSQL's text parser has its own idea of a word (it keeps `config.toml` or an e-mail
//! address whole), so it is not used: a document's lexemes are the guest's words
//! ([`scratchpad_guest::tools::search::words`]), given as they are by `array_to_tsvector`,
//! and the query is built of the same words. A search therefore finds on PostgreSQL what it
//! finds on SQLite; only the order of equally good hits may differ (BM25 there, `ts_rank`
//! here).
//!
//! Every lexeme is the agent's id, a colon and the word (`alice:plan`): the GIN index's
//! entry for a key then lists one agent's documents, so what a search reads, and so what it
//! costs, depends on that agent's data alone, however many other agents hold the word.
//! `ts_rank` reads only the document itself, so no ranking depends on others either. (Agent
//! ids are `[A-Za-z0-9_-]`, so no id holds a colon and no two agents share a key.)

use crate::storage::StoreError;
use std::collections::HashSet;

/// PostgreSQL refuses lexemes of 2 KiB and more; a word that long is not indexed.
const MAX_LEXEME_BYTES: usize = 2_046;

/// A `tsvector` holds at most 1 MiB. Lexemes are added until this many bytes (each word's
/// length and its entry's 4 bytes) have been used; a document with more distinct words is
/// found by its first ones only.
const MAX_DOC_BYTES: usize = 1_000_000;

/// `word` as `agent`'s lexeme, when it fits.
fn lexeme(agent: &str, word: &str) -> Option<String> {
    let lexeme = format!("{agent}:{word}");
    (lexeme.len() <= MAX_LEXEME_BYTES).then_some(lexeme)
}

/// `agent`'s lexemes for the distinct words of `text`, in order of first use, within the
/// limits above.
pub fn lexemes(agent: &str, text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut used = 0;
    let mut out = Vec::new();
    for (_, word) in scratchpad_guest::tools::search::words(text) {
        let Some(lexeme) = lexeme(agent, &word) else {
            continue;
        };
        if seen.contains(&lexeme) {
            continue;
        }
        used += lexeme.len() + 4;
        if used > MAX_DOC_BYTES {
            break;
        }
        seen.insert(lexeme.clone());
        out.push(lexeme);
    }
    out
}

/// The `tsquery` text for the guest's terms in `agent`'s documents, all of them or any.
/// `None` when nothing can match. Terms are checked to be words, so no query syntax can
/// reach PostgreSQL.
pub fn query(agent: &str, terms: &[String], match_all: bool) -> Result<Option<String>, StoreError> {
    if let Some(bad) = terms
        .iter()
        .find(|t| t.is_empty() || !t.chars().all(char::is_alphanumeric))
    {
        return Err(StoreError::Refused(format!(
            "search term {bad:?} is not a word of letters and digits"
        )));
    }
    let lexemes: Vec<Option<String>> = terms.iter().map(|t| lexeme(agent, t)).collect();
    if match_all && lexemes.iter().any(Option::is_none) {
        return Ok(None);
    }
    let quoted: Vec<String> = lexemes
        .into_iter()
        .flatten()
        .map(|l| format!("'{l}'"))
        .collect();
    Ok((!quoted.is_empty()).then(|| quoted.join(if match_all { " & " } else { " | " })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexemes_are_the_guests_distinct_words() {
        assert_eq!(
            lexemes("a-1", "Config.toml: config, PORT=8080 port"),
            ["a-1:config", "a-1:toml", "a-1:port", "a-1:8080"]
        );
    }

    #[test]
    fn lexemes_stop_at_the_documents_limit() {
        let text: String = (0..300_000).map(|i| format!("w{i} ")).collect();
        let kept = lexemes("a", &text);
        let used: usize = kept.iter().map(|w| w.len() + 4).sum();
        assert!(
            used <= MAX_DOC_BYTES && kept.len() > 50_000,
            "{}",
            kept.len()
        );
        assert!(lexemes("a", &"x".repeat(3_000)).is_empty());
    }

    #[test]
    fn queries_join_quoted_words_and_refuse_syntax() {
        let t = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let q = |w: &[&str], all| query("ag", &t(w), all);
        assert_eq!(q(&["a", "b"], true).unwrap().unwrap(), "'ag:a' & 'ag:b'");
        assert_eq!(q(&["a", "b"], false).unwrap().unwrap(), "'ag:a' | 'ag:b'");
        for bad in ["a'b", "a & b", "", "x:*"] {
            assert!(q(&[bad], false).is_err(), "{bad:?}");
        }
        let long = "y".repeat(3_000);
        assert_eq!(q(&["a", &long], true).unwrap(), None);
        assert_eq!(q(&["a", &long], false).unwrap().unwrap(), "'ag:a'");
    }
}
