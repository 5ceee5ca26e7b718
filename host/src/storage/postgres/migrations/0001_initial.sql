-- The first schema: the same tables as SQLite's, in PostgreSQL's types.
-- Names and paths compare as bytes ("C"), as in SQLite, so listings and resource cursors
-- are in the same order on both. Contents are bytea: text cannot hold NUL, a file may.

CREATE FUNCTION scratchpad_rfc3339(t timestamptz) RETURNS text
    LANGUAGE sql STABLE
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

CREATE TABLE agents (
    agent_id         text COLLATE "C" PRIMARY KEY,
    total_bytes      bigint NOT NULL DEFAULT 0,
    file_count       bigint NOT NULL DEFAULT 0,
    log_entry_count  bigint NOT NULL DEFAULT 0,
    total_operations bigint NOT NULL DEFAULT 0
);

-- One row per path ever written; a deleted file keeps its row (current_version NULL) so
-- that its version numbers never repeat.
CREATE TABLE files (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id        text COLLATE "C" NOT NULL,
    path            text COLLATE "C" NOT NULL,
    last_version    bigint NOT NULL,
    current_version bigint,
    current_bytes   bigint,
    updated_at      timestamptz,
    UNIQUE (agent_id, path)
);

CREATE TABLE versions (
    file_id    bigint NOT NULL REFERENCES files (id),
    version    bigint NOT NULL,
    bytes      bigint NOT NULL,
    content    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (file_id, version)
);

-- A summary goes with the version it summarises.
CREATE TABLE summaries (
    file_id    bigint NOT NULL,
    version    bigint NOT NULL,
    model      text NOT NULL,
    summary    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (file_id, version, model),
    FOREIGN KEY (file_id, version) REFERENCES versions ON DELETE CASCADE
);

-- The last id a log ever gave (ids never repeat), its entry count and its retention.
CREATE TABLE logs (
    agent_id        text COLLATE "C" NOT NULL,
    path            text COLLATE "C" NOT NULL,
    last_id         bigint NOT NULL,
    entries         bigint NOT NULL DEFAULT 0,
    keep_last       bigint,
    max_age_seconds bigint,
    PRIMARY KEY (agent_id, path)
);

CREATE TABLE log_entries (
    agent_id   text COLLATE "C" NOT NULL,
    path       text COLLATE "C" NOT NULL,
    id         bigint NOT NULL,
    is_text    boolean NOT NULL,
    body       bytea NOT NULL,
    bytes      bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, path, id)
);

-- One document per current file version and per log entry: the guest's words as lexemes.
CREATE TABLE search_docs (
    agent_id text COLLATE "C" NOT NULL,
    path     text COLLATE "C" NOT NULL,
    is_log   boolean NOT NULL,
    ref      bigint NOT NULL,
    doc      tsvector NOT NULL,
    PRIMARY KEY (agent_id, is_log, path, ref)
);
CREATE INDEX search_docs_doc ON search_docs USING gin (doc);
