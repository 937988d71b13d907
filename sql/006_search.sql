-- Full-text search of messages.
--
-- Applies to a large messages table without rewriting it or holding its
-- lock for long: the column is added without a default (a change of the
-- catalog only), and the index is partial on `search_vector IS NOT NULL`,
-- so building it while the column is all NULL reads the table once and
-- writes an empty index. Existing rows get their vector afterwards from the
-- server's background backfill, in short batches in primary-key order
-- (ScrollbackStore+Search.swift), which never touches `version`: a vector
-- is not a change of the message.
--
-- The search matches `search_vector @@ query`, which is false for NULL, so
-- the planner proves the partial index applies; deleted messages have no
-- vector, so they are neither indexed nor found.

ALTER TABLE messages ADD COLUMN search_vector tsvector;

CREATE INDEX messages_search ON messages USING gin (search_vector) WHERE search_vector IS NOT NULL;

-- One row: the text search configuration vectors are made with, and how far
-- the backfill has come with it. `simple` lowercases words without stemming
-- or stop words, so text in any language is found by its words. The server
-- sets `config` from SCROLLBACK_SEARCH_CONFIG at start; a change restarts
-- the backfill from the first message.
CREATE TABLE search_settings (
    only_row           boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
    config             regconfig   NOT NULL DEFAULT 'simple',
    -- The backfill has made vectors for every message up to this primary
    -- key, (nil uuid, 0) being before the first.
    backfill_conversation uuid     NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000',
    backfill_seq       bigint      NOT NULL DEFAULT 0,
    backfill_done      boolean     NOT NULL DEFAULT false,
    backfill_done_at   timestamptz
);

-- Nothing to backfill in a database without messages: those stored from
-- now on get their vectors from the trigger.
INSERT INTO search_settings (backfill_done) SELECT NOT EXISTS (SELECT 1 FROM messages);

-- New and changed messages get their vector in the statement that writes
-- them: none for a tombstone, else the body's words under the configured
-- configuration. The function keeps the search_path it was created with, so
-- it finds this schema's settings whatever the writing session's path is.
CREATE FUNCTION messages_search_vector() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.deleted THEN
        NEW.search_vector := NULL;
    ELSE
        NEW.search_vector := to_tsvector((SELECT config FROM search_settings), NEW.body);
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER messages_search_vector
    BEFORE INSERT OR UPDATE OF body, deleted ON messages
    FOR EACH ROW EXECUTE FUNCTION messages_search_vector();
