-- A ban remembers the role its user had when banned (016): lifting it, or
-- banning them again (which replaces its `until`), takes a member who
-- outranks that role, as banning did. Without it an admin could lift, or
-- shorten, a ban the owner placed on an admin. Bans placed before this
-- migration count as a member's.
ALTER TABLE bans ADD COLUMN role text NOT NULL DEFAULT 'member'
    CHECK (role IN ('owner', 'admin', 'member'));
