-- Claims carry a token that every mark checks (a worker whose lease ran
-- out changes nothing another worker now holds), and a replayed event's
-- retry window starts again at the replay. Databases that applied 013
-- before these columns were part of it get them here.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS lease_token uuid;
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS replayed_at timestamptz;
COMMENT ON COLUMN outbox.lease_token IS
    'A worker''s claim: no other worker takes the row (nor another row of its conversation) until it ends; every mark checks the claim''s token.';
