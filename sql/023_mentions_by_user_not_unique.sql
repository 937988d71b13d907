-- A user's mentions across conversations, newest first, without UNIQUE:
-- `position` comes from one sequence, so nothing relied on it, and a
-- unique index that does not hold `conversation_id` could not be kept once
-- mentions are split by conversation (docs/sharding.md). The same index
-- otherwise, built beside the old one and renamed in its place.
CREATE INDEX mentions_by_user_any ON mentions (user_id, position);
DROP INDEX mentions_by_user;
ALTER INDEX mentions_by_user_any RENAME TO mentions_by_user;
