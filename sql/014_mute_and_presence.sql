-- Muting: a member who muted a conversation gets no push for it (the
-- inbox's counts still count it). `muted_until` NULL with `muted` is for
-- good; a time in the past is no longer muted.
ALTER TABLE members
    ADD COLUMN muted       boolean     NOT NULL DEFAULT false,
    ADD COLUMN muted_until timestamptz;

-- Presence: the users with a live socket on an instance, per instance, with
-- the instance's heartbeat. An instance that stops beating (killed) takes
-- its users offline when its `expires_at` passes; one that stops cleanly
-- deletes its rows. A user is online while any instance that has not
-- expired holds a socket of theirs.
CREATE TABLE presence_instances (
    instance_id uuid        PRIMARY KEY,
    beat_at     timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

CREATE TABLE presence (
    user_id     text NOT NULL,
    instance_id uuid NOT NULL REFERENCES presence_instances (instance_id) ON DELETE CASCADE,
    sockets     integer NOT NULL CHECK (sockets > 0),
    PRIMARY KEY (user_id, instance_id)
);

CREATE INDEX presence_by_instance ON presence (instance_id);

-- Shown to the members of a user's conversations: when the user's last
-- socket closed (or their instance stopped beating), and whether the user
-- hides their presence (then they always look offline, never seen).
ALTER TABLE users
    ADD COLUMN last_seen_at    timestamptz,
    ADD COLUMN presence_hidden boolean NOT NULL DEFAULT false;
