-- The change feed's channel belongs to the schema.
--
-- PostgreSQL's notification channels are per database, not per schema: with
-- one channel name, every instance listening in any schema of the database
-- received every other schema's notifications, read them, and found nothing
-- of its own in them (the conversation ids are another schema's). Tests run
-- each in a schema of their own in one database, so every test's listeners
-- read every test's writes; under a load test beside them a listener fell
-- tens of seconds behind its own schema's writes, and its instance's page
-- cache and live delivery with it.
--
-- Each schema now has its channel, named by `feed_channel()`, which the
-- statements that write notify on and the listener LISTENs to (it asks the
-- function for the name). In the `public` schema, where the server keeps its
-- tables, the name is `scrollback_feed`, as before, so instances of an
-- earlier version keep hearing the new ones. In another schema it is
-- `scrollback_feed:` and the schema's name (or the md5 of the name when
-- that would pass PostgreSQL's 63 bytes).
--
-- The function is a constant, fixed here from the schema the migration runs
-- in: PostgreSQL inlines it into a statement's plan.

DO $$
DECLARE
    channel text := CASE
        WHEN current_schema() = 'public' THEN 'scrollback_feed'
        WHEN octet_length('scrollback_feed:' || current_schema()) <= 63 THEN 'scrollback_feed:' || current_schema()
        ELSE 'scrollback_feed:' || md5(current_schema())
    END;
BEGIN
    EXECUTE format(
        'CREATE FUNCTION feed_channel() RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS %L',
        'SELECT ' || quote_literal(channel) || '::text');
END
$$;
