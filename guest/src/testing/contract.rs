//! The storage contract as one suite: what every implementation of [`Storage`] must do, run
//! against each of them (the in-memory test store here, the self-contained component's store
//! in `store/`, the server's SQLite and PostgreSQL backends in the integration tests).
//!
//! The suite drives a store through a [`Harness`], which runs each step as one committed
//! write call of one agent (as a tool call would be) and lets the store's clock move. Each
//! check panics with what the contract says and what the store did.

use crate::bindings::scratchpad::mcp::storage::{MatchRef, Retention};
use crate::names::{AgentId, FilePath, Prefix};
use crate::ports::Storage;
use crate::{LogValue, StorageError};

/// How the suite reaches one store.
pub trait Harness {
    /// Runs `step` as one write call of `agent` and commits it.
    fn call(&self, agent: &str, step: &mut dyn FnMut(&dyn Storage));
    /// Lets `ms` milliseconds pass on the store's clock.
    fn wait(&self, ms: u64);
}

fn agent(a: &str) -> AgentId {
    AgentId::parse(a).expect("a valid agent id")
}

fn path(p: &str) -> FilePath {
    FilePath::parse(p).expect("a valid path")
}

fn prefix(p: &str) -> Prefix {
    Prefix::parse(Some(p)).expect("a valid prefix")
}

fn refused<T: std::fmt::Debug>(result: Result<T, StorageError>, words: &str) {
    match result {
        Err(StorageError::Refused(m)) if m.contains(words) => {}
        other => panic!("the contract refuses this ({words}); the store answered {other:?}"),
    }
}

/// Runs the whole suite on a store that holds nothing yet.
pub fn check(h: &dyn Harness) {
    versions(h);
    summaries(h);
    deletion(h);
    listing_and_isolation(h);
    logs(h);
    log_age(h);
    search(h);
}

/// Versions rise, are kept until pruned, and are counted in bytes.
fn versions(h: &dyn Harness) {
    let (a, p) = (agent("contract-v"), path("plan.md"));
    h.call(a.as_str(), &mut |s| {
        assert_eq!(s.stat_file(&a, &p).unwrap(), None, "a path never written");
        for (v, content) in [(1, "one"), (2, "two!"), (3, "three")] {
            s.put_version(&a, &p, v, content).unwrap();
        }
    });
    h.call(a.as_str(), &mut |s| {
        let state = s.stat_file(&a, &p).unwrap().expect("written");
        assert_eq!(state.last_version, 3);
        let kept: Vec<(u64, u64)> = state.kept.iter().map(|k| (k.version, k.bytes)).collect();
        assert_eq!(
            kept,
            [(1, 3), (2, 4), (3, 5)],
            "kept versions and their sizes"
        );
        let hashes: Vec<&str> = state.kept.iter().map(|k| k.sha256.as_str()).collect();
        assert_eq!(
            hashes,
            [
                crate::ports::content_hash("one"),
                crate::ports::content_hash("two!"),
                crate::ports::content_hash("three")
            ],
            "each version keeps the hash of the content it was written with"
        );
        assert_eq!(s.read_version(&a, &p, 2).unwrap().as_deref(), Some("two!"));
        assert_eq!(
            s.read_version(&a, &p, 9).unwrap(),
            None,
            "a version never written"
        );
        refused(
            s.put_version(&a, &p, 3, "again"),
            "not above its last version 3",
        );
        refused(
            s.put_version(&a, &p, 2, "back"),
            "not above its last version 3",
        );
        refused(
            s.prune_versions(&a, &p, 4),
            "would drop the current version 3",
        );
        refused(
            s.prune_versions(&a, &path("never.md"), 1),
            "which has no versions",
        );
        let usage = s.get_usage(&a).unwrap();
        assert_eq!((usage.file_count, usage.total_bytes), (1, 12));
    });
    // A call sees its own writes at once, whatever a store sends ahead or holds back.
    let q = path("seen.md");
    h.call(a.as_str(), &mut |s| {
        assert_eq!(s.stat_file(&a, &q).unwrap(), None, "a path never written");
        s.put_version(&a, &q, 1, "fresh").unwrap();
        let usage = s.get_usage(&a).unwrap();
        assert_eq!(
            (usage.file_count, usage.total_bytes),
            (2, 17),
            "the counters count the version just stored"
        );
        assert_eq!(s.read_version(&a, &q, 1).unwrap().as_deref(), Some("fresh"));
        s.delete_file(&a, &q).unwrap();
    });
    h.call(a.as_str(), &mut |s| {
        s.prune_versions(&a, &p, 3).unwrap();
        let state = s.stat_file(&a, &p).unwrap().expect("written");
        let kept: Vec<u64> = state.kept.iter().map(|k| k.version).collect();
        assert_eq!(kept, [3], "pruning keeps from `keep_from` on");
        assert_eq!(s.read_version(&a, &p, 1).unwrap(), None, "a pruned version");
        assert_eq!(
            s.get_usage(&a).unwrap().total_bytes,
            5,
            "pruned bytes are freed"
        );
    });
    // Pruning right after a version is stored, of that path or of another, in any order: a
    // store that folds a prune into the version before it must keep each to its own path,
    // and a second prune with an earlier `keep_from` prunes nothing more.
    let (r, t) = (path("pruned/r.md"), path("pruned/t.md"));
    h.call(a.as_str(), &mut |s| {
        for v in 1..=3 {
            s.put_version(&a, &r, v, "r").unwrap();
            s.put_version(&a, &t, v, "t").unwrap();
        }
    });
    h.call(a.as_str(), &mut |s| {
        // Looked at first, as a tool does, so that nothing need be read between the steps.
        s.stat_file(&a, &t).unwrap();
        s.put_version(&a, &r, 4, "r").unwrap();
        s.prune_versions(&a, &t, 3).unwrap();
        s.put_version(&a, &t, 4, "t").unwrap();
        s.prune_versions(&a, &t, 4).unwrap();
        s.prune_versions(&a, &t, 2).unwrap();
    });
    h.call(a.as_str(), &mut |s| {
        let kept = |f: &FilePath| -> Vec<u64> {
            let state = s.stat_file(&a, f).unwrap().expect("written");
            state.kept.iter().map(|k| k.version).collect()
        };
        assert_eq!(
            kept(&r),
            [1, 2, 3, 4],
            "a prune of another path left this one"
        );
        assert_eq!(kept(&t), [4], "pruned from the later keep_from of two");
        let usage = s.get_usage(&a).unwrap();
        assert_eq!(
            (usage.file_count, usage.total_bytes),
            (3, 5 + 4 + 1),
            "the bytes of exactly the pruned versions are freed"
        );
    });
}

/// A summary belongs to one kept version and one model, and goes with its version.
fn summaries(h: &dyn Harness) {
    let (a, p) = (agent("contract-s"), path("notes.md"));
    h.call(a.as_str(), &mut |s| {
        s.put_version(&a, &p, 1, "first").unwrap();
        s.put_version(&a, &p, 2, "second").unwrap();
        s.put_summary(&a, &p, 1, "m", "of one").unwrap();
        s.put_summary(&a, &p, 2, "m", "of two").unwrap();
        s.put_summary(&a, &p, 2, "other", "by another model")
            .unwrap();
        refused(s.put_summary(&a, &p, 7, "m", "of nothing"), "not kept");
    });
    h.call(a.as_str(), &mut |s| {
        let cached = |v, m| s.cached_summary(&a, &p, v, m).unwrap();
        assert_eq!(cached(2, "m").as_deref(), Some("of two"));
        assert_eq!(cached(2, "other").as_deref(), Some("by another model"));
        assert_eq!(cached(2, "third"), None, "summaries are per model");
        s.prune_versions(&a, &p, 2).unwrap();
        assert_eq!(
            s.cached_summary(&a, &p, 1, "m").unwrap(),
            None,
            "a pruned version's summary"
        );
        refused(s.put_summary(&a, &p, 1, "m", "late"), "not kept");
    });
}

/// Deleting keeps the last version number, frees the counters, and takes summaries along.
fn deletion(h: &dyn Harness) {
    let (a, p) = (agent("contract-d"), path("gone.md"));
    h.call(a.as_str(), &mut |s| {
        s.put_version(&a, &p, 1, "soon gone").unwrap();
        s.put_summary(&a, &p, 1, "m", "short").unwrap();
        assert!(
            !s.delete_file(&a, &path("never.md")).unwrap(),
            "deleting a path never written"
        );
    });
    h.call(a.as_str(), &mut |s| {
        assert!(s.delete_file(&a, &p).unwrap(), "deleting a file");
        assert!(!s.delete_file(&a, &p).unwrap(), "deleting it again");
        let state = s.stat_file(&a, &p).unwrap().expect("its numbers are kept");
        assert_eq!(
            (state.last_version, state.kept.len()),
            (1, 0),
            "a deleted file"
        );
        assert_eq!(s.cached_summary(&a, &p, 1, "m").unwrap(), None);
        let usage = s.get_usage(&a).unwrap();
        assert_eq!((usage.file_count, usage.total_bytes), (0, 0));
        refused(
            s.put_version(&a, &p, 1, "reborn"),
            "not above its last version 1",
        );
        s.put_version(&a, &p, 2, "reborn").unwrap();
    });
}

/// Listing is by prefix and path order, of existing files only, and of one agent only.
fn listing_and_isolation(h: &dyn Harness) {
    let (a, b) = (agent("contract-l"), agent("contract-other"));
    h.call(b.as_str(), &mut |s| {
        s.put_version(&b, &path("docs/b.md"), 1, "not yours")
            .unwrap();
    });
    h.call(a.as_str(), &mut |s| {
        for name in [
            "docs/z.md",
            "docs/a.md",
            "docs_x.md",
            "top.md",
            "docs/del.md",
        ] {
            s.put_version(&a, &path(name), 1, name).unwrap();
        }
        s.delete_file(&a, &path("docs/del.md")).unwrap();
    });
    h.call(a.as_str(), &mut |s| {
        let listed = |p: &str| -> Vec<String> {
            let files = s.list_files(&a, &prefix(p)).unwrap();
            files.into_iter().map(|f| f.path).collect()
        };
        assert_eq!(listed("docs/"), ["docs/a.md", "docs/z.md"]);
        assert_eq!(
            listed(""),
            ["docs/a.md", "docs/z.md", "docs_x.md", "top.md"],
            "every existing file, in path order"
        );
        let files = s.list_files(&a, &prefix("top")).unwrap();
        assert_eq!(
            (files[0].version, files[0].bytes),
            (1, 6),
            "a listed file's version and size"
        );
        assert_eq!(s.stat_file(&a, &path("docs/b.md")).unwrap(), None);
        assert_eq!(s.read_version(&a, &path("docs/b.md"), 1).unwrap(), None);
        assert_eq!(s.get_usage(&a).unwrap().file_count, 4);
    });
}

/// Log ids rise and are never reused; reads page from a cursor; trimming frees counters.
fn logs(h: &dyn Harness) {
    let (a, p) = (agent("contract-g"), path("events.log"));
    let text = |t: &str| LogValue::Text(t.into());
    h.call(a.as_str(), &mut |s| {
        let empty = s.log_info(&a, &p).unwrap();
        assert_eq!(
            (empty.last_id, empty.entries),
            (0, 0),
            "a log never written"
        );
        let json = LogValue::Json(r#"{"k":1}"#.into());
        let ids: Vec<u64> = [text("one"), text("two"), json.clone()]
            .iter()
            .map(|e| s.append_log(&a, &p, e, crate::tools::search::entry_text(e).len() as u64))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(ids, [1, 2, 3]);
        refused(s.append_log(&a, &p, &text("four"), 99), "counted 99 bytes");
    });
    h.call(a.as_str(), &mut |s| {
        let page = s.read_log(&a, &p, 1, 10).unwrap();
        let got: Vec<(u64, LogValue)> = page.into_iter().map(|e| (e.id, e.entry)).collect();
        assert_eq!(
            got,
            [(2, text("two")), (3, LogValue::Json(r#"{"k":1}"#.into()))]
        );
        assert_eq!(s.read_log(&a, &p, 0, 1).unwrap().len(), 1, "a page's limit");
        let usage = s.get_usage(&a).unwrap();
        assert_eq!((usage.log_entry_count, usage.total_bytes), (3, 13));
        assert_eq!(s.trim_log(&a, &p, 3, None).unwrap(), 2, "entries below 3");
        let info = s.log_info(&a, &p).unwrap();
        assert_eq!((info.last_id, info.entries), (3, 1));
        let usage = s.get_usage(&a).unwrap();
        assert_eq!((usage.log_entry_count, usage.total_bytes), (1, 7));
        let keep = Retention {
            keep_last: Some(5),
            max_age_seconds: Some(60),
        };
        s.set_log_retention(&a, &p, keep).unwrap();
        assert_eq!(s.log_info(&a, &p).unwrap().retention, keep);
    });
    h.call(a.as_str(), &mut |s| {
        s.trim_log(&a, &p, 4, None).unwrap();
        let next = s.append_log(&a, &p, &text("after"), 5).unwrap();
        assert_eq!(next, 4, "an emptied log's ids go on from its last");
    });
}

/// `older_than_seconds` trims by age, on the store's clock.
fn log_age(h: &dyn Harness) {
    let (a, p) = (agent("contract-t"), path("aging.log"));
    let entry = LogValue::Text("entry".into());
    h.call(a.as_str(), &mut |s| {
        s.append_log(&a, &p, &entry, 5).unwrap();
    });
    h.wait(1_300);
    h.call(a.as_str(), &mut |s| {
        s.append_log(&a, &p, &entry, 5).unwrap();
        assert_eq!(
            s.trim_log(&a, &p, 0, Some(3600)).unwrap(),
            0,
            "nothing is an hour old"
        );
        assert_eq!(
            s.trim_log(&a, &p, 0, Some(1)).unwrap(),
            1,
            "the entry written over a second ago"
        );
        let left: Vec<u64> = s
            .read_log(&a, &p, 0, 10)
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(left, [2]);
        assert_eq!(s.get_usage(&a).unwrap().log_entry_count, 1);
    });
}

/// Search finds the current version of files and log entries, by whole word, of one agent.
fn search(h: &dyn Harness) {
    let (a, b) = (agent("contract-q"), agent("contract-q2"));
    let terms = |words: &[&str]| -> Vec<String> { words.iter().map(|w| w.to_string()).collect() };
    h.call(b.as_str(), &mut |s| {
        s.put_version(&b, &path("theirs.md"), 1, "zebra crossing")
            .unwrap();
    });
    h.call(a.as_str(), &mut |s| {
        let f = path("notes/zoo.md");
        s.put_version(&a, &f, 1, "an old zebra").unwrap();
        s.put_version(&a, &f, 2, "a zebra and a lion").unwrap();
        s.put_version(&a, &path("other.md"), 1, "lion only")
            .unwrap();
        s.put_version(&a, &path("gone.md"), 1, "zebra gone")
            .unwrap();
        s.delete_file(&a, &path("gone.md")).unwrap();
        let line = LogValue::Text("saw a zebra today".into());
        s.append_log(&a, &path("seen.log"), &line, 17).unwrap();
    });
    h.call(a.as_str(), &mut |s| {
        let find = |words: &[&str], all: bool, under: &str| {
            let mut hits: Vec<(String, MatchRef)> = s
                .search(&a, &terms(words), all, &prefix(under), 20, 0)
                .unwrap()
                .into_iter()
                .map(|m| (m.path, m.at))
                .collect();
            hits.sort_by(|x, y| x.0.cmp(&y.0));
            hits
        };
        assert_eq!(
            find(&["zebra"], false, ""),
            [
                ("notes/zoo.md".to_string(), MatchRef::File(2)),
                ("seen.log".to_string(), MatchRef::LogEntry(1)),
            ],
            "current versions and log entries of this agent only"
        );
        assert_eq!(
            find(&["zebra", "lion"], true, ""),
            [("notes/zoo.md".to_string(), MatchRef::File(2))],
            "every term"
        );
        assert_eq!(find(&["zebra", "lion"], false, "").len(), 3, "any term");
        assert_eq!(
            find(&["zebra"], false, "notes/"),
            [("notes/zoo.md".to_string(), MatchRef::File(2))]
        );
        assert_eq!(find(&["zeb"], false, ""), [], "whole words only");
        let page = s
            .search(&a, &terms(&["zebra", "lion"]), false, &prefix(""), 2, 2)
            .unwrap();
        assert_eq!(page.len(), 1, "offset and limit page the hits");
    });
}
