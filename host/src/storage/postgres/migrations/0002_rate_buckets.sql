-- Hosted mode's per-agent token buckets, shared by every instance on this database, so that
-- two instances allow an agent the configured rate and not twice it. `granted` is whether
-- the last call taken from the bucket was let through (its `tokens` are what was left).
CREATE TABLE rate_buckets (
    agent_id text COLLATE "C" PRIMARY KEY,
    tokens   double precision NOT NULL,
    granted  boolean NOT NULL,
    taken_at timestamptz NOT NULL
);
