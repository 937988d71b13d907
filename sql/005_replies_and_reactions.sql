-- Replies, threads and reactions.
--
-- A reply names the message it answers (`reply_to`) and the root of its
-- thread (`thread_root`: the parent's root, or the parent when that is not
-- itself a reply). A thread root keeps its own summary (`reply_count`,
-- `last_reply_at`, the first `thread_participants`), updated by the send
-- that stores a reply, under the conversation's lock, so a page shows it
-- without counting replies.
--
-- Reactions are rows of their own (one per message, emoji and user); the
-- message keeps their aggregate (`reaction_emojis` and `reaction_counts`,
-- in the order each emoji was first used), rewritten by the statement that
-- adds or removes a reaction. Either change takes the conversation's next
-- version, so `changes` and the live stream carry it like an edit.
--
-- Every column is added without a default, or with a constant one: no row
-- of `messages` is rewritten. The one index on `messages` is partial and
-- built while no row matches it: its build reads the table once.

ALTER TABLE messages
    ADD COLUMN reply_to            bigint,
    ADD COLUMN thread_root         bigint,
    ADD COLUMN reply_count         integer NOT NULL DEFAULT 0,
    ADD COLUMN last_reply_at       timestamptz,
    ADD COLUMN thread_participants text[],
    ADD COLUMN reaction_emojis     text[],
    ADD COLUMN reaction_counts     integer[];

-- A thread's replies in seq order: the keyset of the thread pages.
CREATE INDEX messages_by_thread ON messages (conversation_id, thread_root, seq)
    WHERE thread_root IS NOT NULL;

CREATE TABLE reactions (
    conversation_id uuid        NOT NULL,
    seq             bigint      NOT NULL,
    emoji           text        NOT NULL,
    user_id         text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (conversation_id, seq, emoji, user_id),
    FOREIGN KEY (conversation_id, seq) REFERENCES messages (conversation_id, seq)
);

-- "Which of these did I react with": one user's reactions to one message.
CREATE INDEX reactions_by_user ON reactions (conversation_id, seq, user_id);
