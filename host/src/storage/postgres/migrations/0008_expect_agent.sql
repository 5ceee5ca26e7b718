-- The check a write call makes when it answers its look at a file from what this instance
-- remembers of the agent's last write (see remembered.rs): under the agent's lock, the
-- agent's row must still be the version (`xmin`) that write left, since every change to an
-- agent's data updates its row. If not, it fails with SQLSTATE SPST1, the call's transaction
-- rolls back with nothing stored, and the server runs the call again with a look of its own.
-- (Safe to run again: a test re-runs the migrations from 5.)
CREATE OR REPLACE FUNCTION scratchpad_expect_agent(agent text, row_version text) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM agents WHERE agent_id = agent AND xmin::text = row_version) THEN
        RAISE EXCEPTION 'agent % changed since this instance last wrote it', agent
            USING ERRCODE = 'SPST1';
    END IF;
END
$$;
