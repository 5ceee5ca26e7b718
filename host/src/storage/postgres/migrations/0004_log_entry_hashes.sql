-- The hash of each log entry's body as it was written (lowercase hex SHA-256 of its bytes,
-- what ports::content_hash gives), so that damage to a log shows in `verify` as damage to a
-- version does. Entries stored before this migration get the hash of their body as it is now.
ALTER TABLE log_entries ADD COLUMN sha256 text NOT NULL DEFAULT '';
UPDATE log_entries SET sha256 = encode(sha256(body), 'hex');
