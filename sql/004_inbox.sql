-- The inbox stream: what changed in a user's conversation list since a
-- cursor, and in which order a user's memberships of one conversation came
-- and went.
--
-- A cursor is a transaction id boundary: the `xmin` of the snapshot a read
-- was taken in (every transaction below it had finished, and what committed
-- is in the snapshot). Each row that an inbox shows records the id of the
-- transaction that last changed it (`*_xid`), so "what changed since the
-- cursor" is `xid >= cursor`: it may repeat something already seen, never
-- miss something committed later under a lower id.
--
-- Membership changes of one conversation hold its row locked, so
-- `membership_change` values taken inside them are in commit order: they
-- order a removal and a re-addition of the same user.
--
-- Every column is added with a constant default: nothing is rewritten, and
-- rows from before count as changed long ago.

CREATE SEQUENCE membership_change;

ALTER TABLE conversations ADD COLUMN changed_xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE conversations ALTER COLUMN changed_xid SET DEFAULT pg_current_xact_id();

ALTER TABLE members
    ADD COLUMN joined_xid    xid8   NOT NULL DEFAULT '0',
    ADD COLUMN changed_xid   xid8   NOT NULL DEFAULT '0',
    ADD COLUMN joined_change bigint NOT NULL DEFAULT 0;
ALTER TABLE members
    ALTER COLUMN joined_xid    SET DEFAULT pg_current_xact_id(),
    ALTER COLUMN changed_xid   SET DEFAULT pg_current_xact_id(),
    ALTER COLUMN joined_change SET DEFAULT nextval('membership_change');

-- A user's last removal from a conversation, so an inbox that resumes learns
-- of it. A re-addition leaves the row; the member row's newer
-- `joined_change` says which came last.
CREATE TABLE member_removals (
    user_id         text   NOT NULL,
    conversation_id uuid   NOT NULL REFERENCES conversations (id),
    removed_xid     xid8   NOT NULL DEFAULT pg_current_xact_id(),
    removed_change  bigint NOT NULL DEFAULT nextval('membership_change'),
    PRIMARY KEY (user_id, conversation_id)
);
