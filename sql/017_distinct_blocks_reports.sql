-- Distinct conversations (one-to-one, or a small group): `distinct_key` is
-- the sorted ids of the members a conversation was created distinct with,
-- joined by commas (a user id has none). The unique index makes "the"
-- conversation of those members exist once, however many ask for it at
-- once. A change of its members (an addition, a removal) makes it an
-- ordinary conversation: the key is cleared in the same transaction.
ALTER TABLE conversations ADD COLUMN distinct_key text;

CREATE UNIQUE INDEX conversations_distinct ON conversations (distinct_key) WHERE distinct_key IS NOT NULL;

-- Blocks: `blocker` blocked `blocked`. The blocked user cannot start a
-- conversation with the blocker or add them to one; in conversations they
-- share, the blocker's pages and frames flag the blocked user's messages,
-- which never push to the blocker nor count as the blocker's mentions.
CREATE TABLE blocks (
    blocker    text        NOT NULL,
    blocked    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (blocker, blocked),
    CHECK (blocker <> blocked)
);

CREATE INDEX blocks_by_blocked ON blocks (blocked);

-- Reports: a user reports a message (`conversation_id`, `seq`) or a user
-- (`user_id`) for a reason. A message's report keeps the message as it was
-- reported (sender, body, version), whatever happens to it later. One
-- report per reporter and thing reported: reporting again changes nothing.
CREATE TABLE reports (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    reporter        text        NOT NULL,
    conversation_id uuid,
    seq             bigint,
    user_id         text,
    reason          text        NOT NULL
        CHECK (reason IN ('spam', 'harassment', 'hate', 'violence', 'sexual', 'self_harm', 'other')),
    note            text,
    message_sender  text,
    message_body    text,
    message_version bigint,
    status          text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((seq IS NOT NULL AND conversation_id IS NOT NULL AND user_id IS NULL)
           OR (seq IS NULL AND conversation_id IS NULL AND user_id IS NOT NULL))
);

CREATE UNIQUE INDEX reports_of_messages ON reports (reporter, conversation_id, seq) WHERE seq IS NOT NULL;
CREATE UNIQUE INDEX reports_of_users ON reports (reporter, user_id) WHERE user_id IS NOT NULL;
CREATE INDEX reports_newest ON reports (created_at DESC, id DESC);

-- The members that message `m` mentions (007), but not those who blocked
-- its sender: a blocked user's mention never counts as the blocker's.
CREATE OR REPLACE FUNCTION mentions_in(m messages) RETURNS TABLE (user_id text)
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
      AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker = found.user_id AND b.blocked = m.sender)
    ORDER BY found.first
    LIMIT 50
$$;
