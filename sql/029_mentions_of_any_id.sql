-- Mentions of any user id. A user id may now hold spaces, `|`, `:` and any
-- script (`auth0|5f7c8ec7c33c6c004bbafe82`, `名前🙂`), which the plain form
-- cannot name: `@` then the longest run of `A-Z a-z 0-9 . _ @ -`, trailing
-- `.`, `-` and `_` trimmed, as before. The bracketed form names any id:
-- `@[` then the id then the first `]` not escaped; inside, `\]` is `]` and
-- `\\` is `\` (a `\` before anything else is itself). Both forms start where
-- the plain one did (at the start of the body or after a character that
-- cannot be part of a plain id), and one pass reads them left to right, so a
-- plain `@name` inside brackets is part of the bracketed id, not a mention
-- of its own. Everything else is as in sql/017: the members mentioned, not
-- the sender, not a member who blocked the sender, in the order they first
-- appear, at most 50; nothing for a deleted message.
CREATE OR REPLACE FUNCTION mentions_in(m messages) RETURNS TABLE (user_id text)
LANGUAGE sql STABLE AS $$
    SELECT found.user_id
    FROM (
        SELECT CASE WHEN match[1] IS NOT NULL THEN regexp_replace(match[1], '\\([]\\])', '\1', 'g')
                    ELSE rtrim(match[2], '._-') END AS user_id,
               min(n) AS first
        FROM regexp_matches(
                 m.body, '(?<![A-Za-z0-9._@-])@(?:\[((?:[^]\\]|\\.)*)\]|([A-Za-z0-9._@-]+))', 'g')
             WITH ORDINALITY AS r (match, n)
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
