//! Files' search documents, made by the search that needs them.
//!
//! Why lazily: a file's document changes with every write, and writing it (its lexemes, the
//! row and its GIN entries) was a fifth of a PostgreSQL write (in turns with the build
//! before: writes 0.80x without it). A write now deletes its file's document and marks the
//! file `unindexed`; a log entry, written once and never changed, still gets its document
//! with it. So a file has the document of its current version, or is marked and has none.
//!
//! A search first reads, in its own snapshot, the marked files under its prefix (a partial
//! index holds just those), makes their documents from their content, and searches them
//! together with the stored ones: it sees every write its snapshot sees, and costs one more
//! round trip. What it made is then stored, and the marks cleared in the same statement, so
//! the next search need not make it again: in a write call's own transaction (it holds its
//! agent's lock), after a read call's snapshot in the short transaction that counts it, and
//! only if the agent's lock can be taken there without waiting. With the lock, no write of
//! the agent can run between the check that a version is still current and its document's
//! insert, so no document of an older version is ever left behind; without it, the next
//! search makes the documents again.

use super::super::conn::{Owned, col, text};
use super::super::search;
use super::PgTxn;
use crate::storage::{Mode, StoreError};
use tokio_postgres::Row;

/// The rows of [`UNINDEXED`] one round trip reads: it bounds what a search holds of
/// contents at once, whatever an agent wrote since its last search.
const PAGE_ROWS: i64 = 64;

/// A page of agent `$1`'s files marked `unindexed` under prefix `$2`, with their current
/// content, in path order after path `$3`.
const UNINDEXED: &str = "SELECT f.path, f.current_version, v.content
     FROM files f JOIN versions v ON v.file_id = f.id AND v.version = f.current_version
     WHERE f.agent_id = $1 AND f.unindexed
       AND f.path >= $2 AND starts_with(f.path, $2) AND f.path > $3
     ORDER BY f.path
     LIMIT $4";

/// Stores agent `$1`'s documents (paths `$2`, versions `$3`, lexemes `$4` as in
/// [`Unindexed`]) of versions that are still current, and clears their files' marks. The
/// caller holds the agent's lock.
const STORE: &str = "WITH current AS (
         UPDATE files f SET unindexed = false
         FROM unnest($2::text[], $3::bigint[], $4::text[]) AS u(path, ref, lexemes)
         WHERE f.agent_id = $1 AND f.path = u.path AND f.current_version = u.ref
         RETURNING u.path, u.ref, u.lexemes)
     INSERT INTO search_docs (agent_id, path, is_log, ref, doc)
     SELECT $1, path, false, ref, array_to_tsvector(string_to_array(lexemes, ' '))
     FROM current
     ON CONFLICT DO NOTHING";

/// Agent `$1`'s documents matching tsquery `$2` under prefix `$3`, best first, `$4` of them
/// after the first `$5`: the stored ones and those made for marked files (paths `$6`,
/// versions `$7`, lexemes `$8` as in [`Unindexed`]), ranked together. No file is in both.
const SEARCH: &str = "WITH made AS (
         SELECT u.path, u.ref, array_to_tsvector(string_to_array(u.lexemes, ' ')) AS doc
         FROM unnest($6::text[], $7::bigint[], $8::text[]) AS u(path, ref, lexemes)),
     docs AS (
         SELECT path, is_log, ref, doc FROM search_docs
         WHERE agent_id = $1 AND doc @@ $2::text::tsquery AND starts_with(path, $3)
         UNION ALL
         SELECT path, false, ref, doc FROM made
         WHERE doc @@ $2::text::tsquery AND starts_with(path, $3))
     SELECT path, is_log, ref FROM docs
     ORDER BY ts_rank(doc, $2::text::tsquery) DESC, path, is_log, ref
     LIMIT $4 OFFSET $5";

/// The connection's statements never use bitmap scans (see `Pool::connect`), but the GIN
/// index can only be read by one: for a search's transaction they may, again.
const BITMAP_SCANS: &str = "SET LOCAL enable_bitmapscan = on";

/// Takes agent `$1`'s lock for the rest of the transaction if no other transaction holds
/// it; whether it did.
const TRY_LOCK: &str = "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))";

/// Documents of current file versions that the index does not hold yet, as parameters of
/// the search and of [`STORE`]: one element of each list a document.
#[derive(Default)]
pub(super) struct Unindexed {
    /// Each file's path.
    paths: Vec<String>,
    /// Its current version.
    versions: Vec<i64>,
    /// Its lexemes ([`search::lexemes`]) joined by spaces: no lexeme holds one (agent ids
    /// are letters, digits, `_` and `-`, words letters and digits).
    lexemes: Vec<String>,
}

impl Unindexed {
    pub(super) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Makes the documents of a page of [`UNINDEXED`]'s rows.
    fn add(&mut self, agent: &str, page: &[Row]) -> Result<(), StoreError> {
        for r in page {
            let content = text(col(r, 2)?)?;
            self.paths.push(col(r, 0)?);
            self.versions.push(col(r, 1)?);
            self.lexemes
                .push(search::lexemes(agent, &content).join(" "));
        }
        Ok(())
    }

    /// Adds `other`'s documents, for one [`STORE`]: a path in both is stored once.
    fn append(&mut self, other: Unindexed) {
        self.paths.extend(other.paths);
        self.versions.extend(other.versions);
        self.lexemes.extend(other.lexemes);
    }

    /// [`STORE`]'s parameters for `agent`.
    fn store_params(self, agent: &str) -> Vec<Owned> {
        vec![
            Box::new(agent.to_owned()),
            Box::new(self.paths),
            Box::new(self.versions),
            Box::new(self.lexemes),
        ]
    }
}

impl PgTxn {
    /// A page of agent `agent`'s documents that match `tsquery` under `prefix`, best first:
    /// the stored ones and those of the files marked `unindexed`, made from the call's
    /// snapshot (and made once a call for a prefix). A write call stores what it made in its
    /// transaction at once; a read call keeps it to store after its snapshot.
    pub(super) fn matching(
        &mut self,
        agent: &str,
        tsquery: &str,
        prefix: &str,
        (limit, offset): (i64, i64),
    ) -> Result<Vec<Row>, StoreError> {
        if self
            .unindexed
            .as_ref()
            .is_none_or(|(under, _)| under != prefix)
        {
            self.keep_for_storing();
            let made = self.read_unindexed(agent, prefix)?;
            let made = if self.mode == Mode::Write && !made.is_empty() {
                // Stored before the search below, which then finds them among the rest.
                self.conn_for(agent)?
                    .defer(STORE, made.store_params(agent))?;
                Unindexed::default()
            } else {
                made
            };
            self.unindexed = Some((prefix.to_owned(), made));
        }
        let (under, made) = self.unindexed.take().unwrap_or_default();
        let conn = self.conn_for(agent)?;
        conn.defer_batch(BITMAP_SCANS.into());
        let found = conn.query(
            SEARCH,
            &[
                &agent,
                &tsquery,
                &prefix,
                &limit,
                &offset,
                &made.paths,
                &made.versions,
                &made.lexemes,
            ],
        );
        self.unindexed = Some((under, made));
        found
    }

    /// Reads, a page at a time, the files marked under `prefix`, and makes their documents.
    /// (Sending the first page with a search of the stored documents, to answer in one round
    /// trip when none is marked, made a search after a write search twice: a search of a
    /// hundred documents took 3.2 ms after a write, against 2.6-2.9 ms this way.)
    fn read_unindexed(&mut self, agent: &str, prefix: &str) -> Result<Unindexed, StoreError> {
        let mut made = Unindexed::default();
        loop {
            let after = made.paths.last().cloned().unwrap_or_default();
            let page = self
                .conn_for(agent)?
                .query(UNINDEXED, &[&agent, &prefix, &after, &PAGE_ROWS])?;
            made.add(agent, &page)?;
            if page.len() < PAGE_ROWS as usize {
                return Ok(made);
            }
        }
    }

    /// Moves the documents the call's searches made from its snapshot to those it stores
    /// at its end: a new snapshot (after [`PgTxn::pause`]) or another prefix looks again.
    pub(super) fn keep_for_storing(&mut self) {
        if let Some((_, made)) = self.unindexed.take() {
            self.to_store.append(made);
        }
    }

    /// After a read call's snapshot, in the transaction begun to count it: stores the
    /// documents its searches made if the agent's lock can be taken now. Sent with the
    /// count; the lock is the one round trip this adds.
    pub(super) fn store_after_read(&mut self, agent: &str) -> Result<(), StoreError> {
        self.keep_for_storing();
        let made = std::mem::take(&mut self.to_store);
        if made.is_empty() {
            return Ok(());
        }
        let conn = self.conn_mut()?;
        let locked: bool = col(&conn.query_one(TRY_LOCK, &[&agent])?, 0)?;
        if locked {
            conn.defer(STORE, made.store_params(agent))?;
        }
        Ok(())
    }
}
