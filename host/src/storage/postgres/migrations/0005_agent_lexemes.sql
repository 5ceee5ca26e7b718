-- Each lexeme carries its agent ("agent:word"), so that the GIN index's posting list for a
-- key holds one agent's documents: a search reads that agent's postings only, however many
-- other agents' documents hold the same word. Documents stored before this migration are
-- rewritten the same way; a word never holds a colon, so a lexeme that does is already
-- prefixed and is kept as it is.
UPDATE search_docs d SET doc = COALESCE(
    (SELECT array_to_tsvector(array_agg(
                CASE WHEN position(':' IN l.lexeme) > 0 THEN l.lexeme
                     ELSE d.agent_id || ':' || l.lexeme END))
     FROM unnest(d.doc) AS l),
    ''::tsvector);
