-- The statements that prune or delete versions delete their summaries too, as SQLite's store
-- does, so the cascade from `versions` goes: its trigger ran a delete of its own for every
-- version a write pruned, most writes. A summary still never outlives its version: a read call
-- stores one under its agent's lock, as every write call runs, and only while the version is
-- kept. The reference from `versions` to `files` goes too: a file's row is never deleted, and
-- a version takes its file's id from that row in the statement that stores it; its check was
-- a second trigger at every write. `verify` checks both relations. (Safe to run again: a
-- test re-runs the migrations from 5.)
ALTER TABLE summaries DROP CONSTRAINT IF EXISTS summaries_file_id_version_fkey;
ALTER TABLE versions DROP CONSTRAINT IF EXISTS versions_file_id_fkey;
