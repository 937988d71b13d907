-- A conversation's details told live (`conversation_updated`).
--
-- Its title, description, image, data and slow mode are its details: what
-- a conversation's header and its row in a list show besides messages.
-- Whatever changes them (`PATCH /v1/conversations/{id}`, its picture, the
-- operator, an import), the trigger below counts the change in
-- `details_version`, records the transaction in `details_xid` and
-- `changed_xid` (so an inbox read from an earlier cursor finds the
-- conversation, and knows its details are among what changed), and sends
-- `c:` and the id on the change feed, delivered at commit: every instance
-- reads the details and tells the conversation's subscribers.
--
-- It fires only for a statement that sets one of those columns (`UPDATE
-- OF`): a send, which updates the conversation's counters, pays nothing.
-- A statement that sets them to what they were changes no version.
ALTER TABLE conversations
    ADD COLUMN details_version bigint NOT NULL DEFAULT 0,
    ADD COLUMN details_xid xid8 NOT NULL DEFAULT '0';

CREATE FUNCTION conversation_details_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (OLD.title, OLD.description, OLD.image, OLD.data, OLD.slow_mode_seconds)
       IS NOT DISTINCT FROM (NEW.title, NEW.description, NEW.image, NEW.data, NEW.slow_mode_seconds) THEN
        RETURN NEW;
    END IF;
    NEW.details_version := OLD.details_version + 1;
    NEW.details_xid := pg_current_xact_id();
    NEW.changed_xid := pg_current_xact_id();
    PERFORM pg_notify(feed_channel(), 'c:' || NEW.id::text);
    RETURN NEW;
END
$$;

CREATE TRIGGER conversations_details_changed
    BEFORE UPDATE OF title, description, image, data, slow_mode_seconds ON conversations
    FOR EACH ROW EXECUTE FUNCTION conversation_details_changed();
