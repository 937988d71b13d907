-- The transactional outbox: every change that other systems hear about
-- (webhooks, the push gateway) writes its event rows in the transaction of
-- the change itself, by the triggers below, so an acknowledged change always
-- has its events and a rolled-back one never does, whichever statement or
-- function made the change.
--
-- A sink is a destination that instances deliver to (`webhook`, `push`); an
-- instance configured with one registers it here at start. Events are
-- written once per registered sink, so a deployment without any writes
-- none, and a sink sees the events from its registration on.
CREATE TABLE outbox_sinks (
    name          text        PRIMARY KEY CHECK (name IN ('webhook', 'push')),
    registered_at timestamptz NOT NULL DEFAULT now()
);

-- The id of an event, shared by its rows of every sink: what receivers see
-- as the event's id, the same on every attempt.
CREATE SEQUENCE outbox_events;

-- One row per event and sink, delivered in `id` order per conversation and
-- sink. The row ids of one conversation follow its versions: every change
-- that takes a version holds the conversation's row lock until it commits.
CREATE TABLE outbox (
    id              bigserial   PRIMARY KEY,
    event           bigint      NOT NULL,
    sink            text        NOT NULL,
    type            text        NOT NULL,
    conversation_id uuid        NOT NULL,
    seq             bigint,
    version         bigint,
    -- The user the event is about: the sender, the member added or removed,
    -- the reader.
    user_id         text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- pending -> delivered, or dead once its retry window is over.
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- A worker's claim: no other worker takes the row until it ends.
    leased_until    timestamptz,
    last_error      text,
    finished_at     timestamptz,
    -- The recipients a push event has already reached (a retry skips them).
    done_users      text[]
);

CREATE INDEX outbox_pending ON outbox (sink, conversation_id, id) WHERE state = 'pending';
CREATE INDEX outbox_due ON outbox (sink, id) WHERE state = 'pending';
CREATE INDEX outbox_finished ON outbox (finished_at) WHERE state <> 'pending';

-- Writes the rows of `events` (type, conversation_id, seq, version, user_id)
-- once per registered sink. Statement triggers with transition tables: one
-- call per statement, however many rows it changed (a group of sends is one
-- statement), and only a scan of `outbox_sinks` when no sink is registered.
CREATE FUNCTION outbox_messages_inserted() RETURNS trigger LANGUAGE plpgsql
-- The outbox of the schema the trigger fires in, whatever the writer's search_path.
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM outbox_sinks) THEN
        WITH e AS MATERIALIZED (
            SELECT nextval('outbox_events') AS event, n.conversation_id, n.seq, n.version, n.sender
            FROM (SELECT * FROM new_rows ORDER BY conversation_id, seq) n
        )
        INSERT INTO outbox (event, sink, type, conversation_id, seq, version, user_id)
        SELECT e.event, s.name, 'message.created', e.conversation_id, e.seq, e.version, e.sender
        FROM e CROSS JOIN outbox_sinks s
        ORDER BY e.event, s.name;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_messages_inserted AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_messages_inserted();

-- An edit, a deletion or a change of reactions moves the message's version;
-- a thread's reply count moving (a reply was sent) is the reply's own event.
CREATE FUNCTION outbox_messages_updated() RETURNS trigger LANGUAGE plpgsql
-- The outbox of the schema the trigger fires in, whatever the writer's search_path.
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM outbox_sinks) THEN
        WITH e AS MATERIALIZED (
            SELECT nextval('outbox_events') AS event, c.*
            FROM (
                SELECT n.conversation_id, n.seq, n.version, n.sender,
                       CASE WHEN n.deleted AND NOT o.deleted THEN 'message.deleted'
                            WHEN n.body IS DISTINCT FROM o.body AND NOT n.deleted THEN 'message.edited'
                            WHEN n.reaction_emojis IS DISTINCT FROM o.reaction_emojis
                              OR n.reaction_counts IS DISTINCT FROM o.reaction_counts THEN 'reaction.changed'
                       END AS type
                FROM new_rows n JOIN old_rows o USING (conversation_id, seq)
                WHERE n.version <> o.version
                ORDER BY n.conversation_id, n.version
            ) c
            WHERE c.type IS NOT NULL
        )
        INSERT INTO outbox (event, sink, type, conversation_id, seq, version, user_id)
        SELECT e.event, s.name, e.type, e.conversation_id, e.seq, e.version, e.sender
        FROM e CROSS JOIN outbox_sinks s
        ORDER BY e.event, s.name;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_messages_updated AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_messages_updated();

-- Members added and removed, and read markers that moved forward.
CREATE FUNCTION outbox_members_changed() RETURNS trigger LANGUAGE plpgsql
-- The outbox of the schema the trigger fires in, whatever the writer's search_path.
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM outbox_sinks) THEN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO outbox (event, sink, type, conversation_id, user_id)
            SELECT e.event, s.name, 'member.added', e.conversation_id, e.user_id
            FROM (SELECT nextval('outbox_events') AS event, n.conversation_id, n.user_id
                  FROM (SELECT * FROM new_rows ORDER BY conversation_id, user_id) n OFFSET 0) e
            CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
        ELSIF TG_OP = 'DELETE' THEN
            INSERT INTO outbox (event, sink, type, conversation_id, user_id)
            SELECT e.event, s.name, 'member.removed', e.conversation_id, e.user_id
            FROM (SELECT nextval('outbox_events') AS event, o.conversation_id, o.user_id
                  FROM (SELECT * FROM old_rows ORDER BY conversation_id, user_id) o OFFSET 0) e
            CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
        ELSE
            INSERT INTO outbox (event, sink, type, conversation_id, seq, user_id)
            SELECT e.event, s.name, 'read.moved', e.conversation_id, e.read_seq, e.user_id
            FROM (SELECT nextval('outbox_events') AS event, n.conversation_id, n.user_id, n.read_seq
                  FROM (SELECT n.* FROM new_rows n JOIN old_rows o USING (conversation_id, user_id)
                        WHERE n.read_seq > o.read_seq ORDER BY n.conversation_id, n.user_id) n OFFSET 0) e
            CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_members_added AFTER INSERT ON members
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_members_changed();
CREATE TRIGGER outbox_members_removed AFTER DELETE ON members
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_members_changed();
CREATE TRIGGER outbox_read_moved AFTER UPDATE ON members
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_members_changed();

CREATE FUNCTION outbox_conversations_created() RETURNS trigger LANGUAGE plpgsql
-- The outbox of the schema the trigger fires in, whatever the writer's search_path.
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM outbox_sinks) THEN
        INSERT INTO outbox (event, sink, type, conversation_id, version, user_id)
        SELECT e.event, s.name, 'conversation.created', e.id, e.version, e.created_by
        FROM (SELECT nextval('outbox_events') AS event, n.id, n.version, n.created_by
              FROM (SELECT * FROM new_rows ORDER BY id) n OFFSET 0) e
        CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_conversations_created AFTER INSERT ON conversations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_conversations_created();
