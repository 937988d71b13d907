-- What a push provider needs of a device besides its token: the app it
-- belongs to (`app_id`: the APNs topic, i.e. the bundle id, or the Android
-- package; a Matrix push gateway's `app_id`) and, for APNs, the environment
-- its token was issued in (`production` or `sandbox`, whose tokens only the
-- sandbox host takes). A `gateway` device is one whose pushes go only to
-- the push gateway, whatever it forwards to.
ALTER TABLE devices
    ADD COLUMN app_id text,
    ADD COLUMN environment text CHECK (environment IN ('production', 'sandbox')),
    DROP CONSTRAINT devices_platform_check,
    ADD CONSTRAINT devices_platform_check CHECK (platform IN ('apns', 'fcm', 'web', 'gateway')),
    ADD CONSTRAINT devices_environment_apns CHECK (environment IS NULL OR platform = 'apns');
