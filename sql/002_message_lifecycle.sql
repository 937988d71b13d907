-- Edits, deletions, read markers and the per-conversation change log.
--
-- Each conversation counts its changes in `version`: creating, editing or
-- deleting a message takes the next value in the same statement that makes
-- the change, under the conversation row's lock, so versions are dense and
-- commit in order, like seq. A message carries the version of its latest
-- change, so "what changed since V" is a range scan on (conversation_id, version).

ALTER TABLE conversations ADD COLUMN version bigint NOT NULL DEFAULT 0;

ALTER TABLE messages
    ADD COLUMN version   bigint,
    ADD COLUMN edited_at timestamptz,
    ADD COLUMN deleted   boolean NOT NULL DEFAULT false;

-- Before this migration every message had only been created, in seq order.
UPDATE messages SET version = seq;
UPDATE conversations SET version = last_seq;

ALTER TABLE messages ALTER COLUMN version SET NOT NULL;

CREATE UNIQUE INDEX messages_by_version ON messages (conversation_id, version);

-- Jump to a date.
CREATE INDEX messages_by_time ON messages (conversation_id, created_at);

-- The reader's position: every message up to read_seq counts as read.
ALTER TABLE members ADD COLUMN read_seq bigint NOT NULL DEFAULT 0;
