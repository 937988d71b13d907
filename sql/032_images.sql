-- Pictures kept by this server: a user's avatar (`PUT /v1/users/me/avatar`)
-- and a conversation's image (`PUT /v1/conversations/{id}/image`), each a
-- PNG, JPEG, GIF or WebP of at most `APILimits.maxImageBytes`, checked by
-- ScrollbackMedia as uploads are. One row per user or conversation: a new
-- picture replaces the old one in the same transaction as the profile or
-- the conversation that names it, and goes with its owner (an erasure
-- deletes the user's row, and so their avatar).
--
-- The profile's `avatar` (or the conversation's `image`) is then
-- `{url, width, height, blurhash}` with `url` the server path that serves
-- these bytes and `?v=` the start of their SHA-256, so a client's cache of
-- a URL never holds an older picture.
CREATE TABLE images (
    user_id         text REFERENCES users (id) ON DELETE CASCADE,
    conversation_id uuid REFERENCES conversations (id) ON DELETE CASCADE,
    content_type    text NOT NULL,
    bytes           bytea NOT NULL,
    sha256          text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((user_id IS NULL) <> (conversation_id IS NULL))
);

CREATE UNIQUE INDEX images_of_users ON images (user_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX images_of_conversations ON images (conversation_id) WHERE conversation_id IS NOT NULL;

-- A conversation's picture: `{url, width, height, blurhash}`, set by its
-- owner or an admin (an upload, above) or by the operator (a URL).
ALTER TABLE conversations ADD COLUMN image jsonb;
