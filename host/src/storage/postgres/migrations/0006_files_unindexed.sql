-- A file's search document is made by the first search after the file's write, not by the
-- write: `unindexed` marks a file whose current version has no document yet (the write set
-- it and deleted the old document; the search that stores the new one clears it). The
-- partial index lets a search find just those files of its agent, however many it has.
-- Every file written before this migration has its document, so none is marked.
ALTER TABLE files ADD COLUMN unindexed boolean NOT NULL DEFAULT false;
CREATE INDEX files_unindexed ON files (agent_id, path) WHERE unindexed;
