-- @mentions: which messages mention which members.
--
-- The parsing rule lives here only, in a trigger, so every way a message is
-- written (a send over HTTP or the live stream, an edit, a deletion) keeps
-- its mentions without the statements that write messages knowing of them.
--
-- A mention is `@` at the start of the body or after a character that
-- cannot be part of a user id, followed by the longest run of user-id
-- characters (A-Z a-z 0-9 . _ @ -), with trailing `.`, `-` and `_` trimmed
-- ("thanks @bob." mentions bob; "a@bob" mentions nobody). Ids compare
-- exactly, case included. It counts only when that id is a member of the
-- conversation when the message is sent or edited, and is not the sender;
-- at most 50 distinct users per message (the first 50 in the body).
--
-- An edit parses the body again: mentions it removed disappear, new ones
-- appear, and those it kept keep their place in the list. A deleted
-- message has none.
--
-- Nothing is backfilled: parsing every stored message would hold the
-- trigger's lock on `messages` (taken by CREATE TRIGGER until this
-- migration commits) for as long as the scan takes, blocking sends.
-- Mentions start with this migration; an older message gets its mentions
-- when it is edited.

-- The order of a user's mentions across conversations (newest first):
-- a mention takes the next value when it is stored. Values are taken in
-- the writing statement, just before it commits, so a pass over the list
-- misses nothing below its cursor but what committed during the pass: such
-- mentions, like new ones, are above its cursor by then and are listed
-- by the next pass from the top.
CREATE SEQUENCE mention_position;

CREATE TABLE mentions (
    conversation_id uuid        NOT NULL REFERENCES conversations (id),
    user_id         text        NOT NULL,
    seq             bigint      NOT NULL,
    position        bigint      NOT NULL DEFAULT nextval('mention_position'),
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- A member's mentions in one conversation above their read marker.
    PRIMARY KEY (conversation_id, user_id, seq)
);

-- A user's mentions, newest first, across conversations (keyset on position).
CREATE UNIQUE INDEX mentions_by_user ON mentions (user_id, position);

-- The mentions of one message, parsed again when it is edited or deleted.
CREATE INDEX mentions_by_message ON mentions (conversation_id, seq);

-- Stores the mentions of the message written (NEW), after removing, on an
-- edit or a deletion, those its body no longer makes.
CREATE FUNCTION record_mentions() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    mentioned text[] := ARRAY(SELECT user_id FROM mentions_in(NEW));
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM mentions
        WHERE conversation_id = NEW.conversation_id AND seq = NEW.seq AND user_id <> ALL (mentioned);
    END IF;
    INSERT INTO mentions (conversation_id, user_id, seq)
    SELECT NEW.conversation_id, u, NEW.seq FROM unnest(mentioned) AS u
    ON CONFLICT (conversation_id, user_id, seq) DO NOTHING;
    RETURN NULL;
END
$$;

-- The members that message `m` mentions, by the rule above, in the order
-- they first appear.
CREATE FUNCTION mentions_in(m messages) RETURNS TABLE (user_id text)
LANGUAGE sql STABLE AS $$
    SELECT found.user_id
    FROM (
        SELECT rtrim(match[1], '._-') AS user_id, min(n) AS first
        FROM regexp_matches(m.body, '(?<![A-Za-z0-9._@-])@([A-Za-z0-9._@-]+)', 'g') WITH ORDINALITY AS r (match, n)
        WHERE NOT m.deleted
        GROUP BY 1
    ) found
    WHERE found.user_id <> m.sender
      AND EXISTS (
          SELECT 1 FROM members mb WHERE mb.conversation_id = m.conversation_id AND mb.user_id = found.user_id)
    ORDER BY found.first
    LIMIT 50
$$;

-- A body without `@` is skipped before the function is called: sends and
-- edits of such messages pay only the WHEN test.
CREATE TRIGGER messages_mentions_on_insert
    AFTER INSERT ON messages
    FOR EACH ROW WHEN (strpos(NEW.body, '@') > 0)
    EXECUTE FUNCTION record_mentions();

CREATE TRIGGER messages_mentions_on_change
    AFTER UPDATE OF body, deleted ON messages
    FOR EACH ROW WHEN (strpos(OLD.body, '@') > 0 OR strpos(NEW.body, '@') > 0)
    EXECUTE FUNCTION record_mentions();
