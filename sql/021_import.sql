-- History imported from another service (POST /v1/admin/import): each
-- imported message keeps the stable id it had there, so importing the same
-- file again finds it. Messages sent here have none: the partial index
-- costs them nothing.
ALTER TABLE messages ADD COLUMN external_id text;

CREATE UNIQUE INDEX messages_external_id ON messages (conversation_id, external_id)
    WHERE external_id IS NOT NULL;

-- An import sets `scrollback.import` for its transaction: years of history
-- must not push to phones nor fire webhooks. The outbox's statement
-- triggers (013, 018) skip it; every other write is unchanged.
DROP TRIGGER outbox_messages_inserted ON messages;
CREATE TRIGGER outbox_messages_inserted AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('scrollback.import', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION outbox_messages_inserted();

DROP TRIGGER outbox_messages_updated ON messages;
CREATE TRIGGER outbox_messages_updated AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('scrollback.import', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION outbox_messages_updated();

DROP TRIGGER outbox_members_added ON members;
CREATE TRIGGER outbox_members_added AFTER INSERT ON members
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('scrollback.import', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION outbox_members_changed();

DROP TRIGGER outbox_read_moved ON members;
CREATE TRIGGER outbox_read_moved AFTER UPDATE ON members
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('scrollback.import', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION outbox_members_changed();

DROP TRIGGER outbox_conversations_created ON conversations;
CREATE TRIGGER outbox_conversations_created AFTER INSERT ON conversations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    WHEN (current_setting('scrollback.import', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION outbox_conversations_created();
