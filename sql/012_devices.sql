-- The devices a user's apps registered for push notifications: one row per
-- (user, device id the app chose), with the platform's token. A token
-- belongs to one user at a time: registering it for another user (the app
-- signed in as someone else on that phone) takes it from the first, so a
-- phone never shows another account's messages.
CREATE TABLE devices (
    user_id    text        NOT NULL,
    device_id  text        NOT NULL,
    platform   text        NOT NULL CHECK (platform IN ('apns', 'fcm', 'web')),
    token      text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, device_id)
);

CREATE UNIQUE INDEX devices_token ON devices (platform, token);
