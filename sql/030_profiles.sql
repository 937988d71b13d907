-- Profiles: what a user is called and what they look like, and the app's
-- own data about them.
--
-- `display_name` and `avatar` are what the user (`PATCH /v1/users/me`) or
-- the operator (`PUT /v1/admin/users/{id}/profile`) set. `token_name` and
-- `token_picture` are the OpenID Connect claims `name` and `picture` of the
-- user's latest token: they show while the user has set nothing of their
-- own, and follow the identity provider when it renames them. `avatar` is
-- `{url, width, height, blurhash}` (only `url` is required). `data` is the
-- app's own JSON object, never interpreted.
--
-- `profile_version` takes the next value of `profile_versions` on every
-- change that shows (0: never changed): a client keeps the profile of the
-- highest version it has seen, whichever answer or frame brought it.
-- `sort_name` orders user search: the name a user shows, in lower case.
CREATE SEQUENCE profile_versions;

ALTER TABLE users
    ADD COLUMN display_name    text,
    ADD COLUMN avatar          jsonb,
    ADD COLUMN data            jsonb,
    ADD COLUMN token_name      text,
    ADD COLUMN token_picture   text,
    ADD COLUMN profile_version bigint NOT NULL DEFAULT 0,
    ADD COLUMN sort_name       text COLLATE "C"
        GENERATED ALWAYS AS (lower(COALESCE(display_name, token_name, id))) STORED;

CREATE INDEX users_by_sort_name ON users (sort_name, id);

-- User search (`GET /v1/users?q=`): a user is found by a prefix of any word
-- of the name they show or of their id. The words are written by the
-- statements that write a profile, folded by `ProfileWords`
-- (ScrollbackModels): lower case, without diacritics, split at anything
-- that is not a letter or a digit, plus the whole folded name and id, each
-- cut to 100 characters (the longest query). `source` is `i` for the id's
-- words, `n` for the shown name's. A prefix is a range of `word` in byte
-- order (COLLATE "C"), so `LIKE 'pre%'` reads the index.
CREATE TABLE user_words (
    user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    source  "char" NOT NULL,
    word    text COLLATE "C" NOT NULL,
    PRIMARY KEY (user_id, source, word)
);

CREATE INDEX user_words_by_word ON user_words (word, user_id);

-- The ids of the users recorded so far. Their words are folded here as
-- `ProfileWords` folds an id of ASCII letters, digits and punctuation (lower
-- case, split at anything else); an id with other letters is folded again
-- by the next profile write of that user.
INSERT INTO user_words (user_id, source, word)
SELECT DISTINCT u.id, 'i', left(w.word, 100)
FROM users u
CROSS JOIN LATERAL unnest(array_prepend(lower(u.id), regexp_split_to_array(lower(u.id), '[^a-z0-9]+'))) AS w (word)
WHERE w.word <> ''
ON CONFLICT DO NOTHING;
