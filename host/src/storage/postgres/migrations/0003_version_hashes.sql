-- The hash of each version's content as it was written (lowercase hex SHA-256 of its UTF-8
-- bytes, what ports::content_hash gives), so that damage to the content shows in `verify`.
-- Versions stored before this migration get the hash of their content as it is now.
ALTER TABLE versions ADD COLUMN sha256 text NOT NULL DEFAULT '';
UPDATE versions SET sha256 = encode(sha256(content), 'hex');
