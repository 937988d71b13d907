-- Conversations, their members, and their messages.
--
-- Ordering comes from the database: each conversation counts its messages in
-- last_seq, and a message's seq is taken from it in the same statement that
-- inserts the message, under the conversation row's lock. Every table that
-- grows with messages has conversation_id first in its primary key.

CREATE TABLE users (
    id           text        PRIMARY KEY,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Orders the conversation list by last activity without reading clocks:
-- creating a conversation or sending a message takes the next value.
CREATE SEQUENCE conversation_activity;

CREATE TABLE conversations (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    title        text,
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seq     bigint      NOT NULL DEFAULT 0,
    activity     bigint      NOT NULL DEFAULT nextval('conversation_activity')
);

CREATE TABLE members (
    conversation_id uuid        NOT NULL REFERENCES conversations (id),
    user_id         text        NOT NULL,
    joined_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, user_id)
);

-- "My conversations" starts from the member side.
CREATE INDEX members_by_user ON members (user_id, conversation_id);

CREATE TABLE messages (
    conversation_id uuid        NOT NULL REFERENCES conversations (id),
    seq             bigint      NOT NULL CHECK (seq > 0),
    sender          text        NOT NULL,
    body            text        NOT NULL,
    client_id       text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (conversation_id, seq)
);

-- Idempotent sends: one message per (conversation, sender, client_id).
CREATE UNIQUE INDEX messages_client_id
    ON messages (conversation_id, sender, client_id)
    WHERE client_id IS NOT NULL;
