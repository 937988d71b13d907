-- Two more kinds of events in the outbox (013): `member.updated`, a
-- member's role changed (016), and `report.created`, a report filed (017).
-- `subject` carries what such an event needs beyond its conversation, seq
-- and user: the new role, or the report's id. A report of a user belongs to
-- no conversation: its events are ordered among themselves under the nil
-- conversation id.
ALTER TABLE outbox ADD COLUMN subject text;

-- Members added and removed, read markers that moved forward (013), and
-- roles that changed.
CREATE OR REPLACE FUNCTION outbox_members_changed() RETURNS trigger LANGUAGE plpgsql
-- The outbox of the schema the trigger fires in, whatever the writer's search_path.
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM outbox_sinks) THEN
        IF TG_OP = 'INSERT' THEN
            INSERT INTO outbox (event, sink, type, conversation_id, user_id)
            SELECT e.event, s.name, 'member.added', e.conversation_id, e.user_id
            FROM (SELECT nextval('outbox_events') AS event, n.conversation_id, n.user_id
                  FROM (SELECT * FROM new_rows ORDER BY conversation_id, user_id) n OFFSET 0) e
            CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
        ELSIF TG_OP = 'DELETE' THEN
            INSERT INTO outbox (event, sink, type, conversation_id, user_id)
            SELECT e.event, s.name, 'member.removed', e.conversation_id, e.user_id
            FROM (SELECT nextval('outbox_events') AS event, o.conversation_id, o.user_id
                  FROM (SELECT * FROM old_rows ORDER BY conversation_id, user_id) o OFFSET 0) e
            CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
        ELSE
            INSERT INTO outbox (event, sink, type, conversation_id, seq, user_id, subject)
            SELECT e.event, s.name, e.type, e.conversation_id, e.read_seq, e.user_id, e.subject
            FROM (SELECT nextval('outbox_events') AS event, c.*
                  FROM (SELECT 'read.moved' AS type, n.conversation_id, n.user_id, n.read_seq, NULL::text AS subject
                        FROM new_rows n JOIN old_rows o USING (conversation_id, user_id)
                        WHERE n.read_seq > o.read_seq
                        UNION ALL
                        SELECT 'member.updated', n.conversation_id, n.user_id, NULL, n.role
                        FROM new_rows n JOIN old_rows o USING (conversation_id, user_id)
                        WHERE n.role <> o.role
                        ORDER BY conversation_id, user_id, type DESC) c OFFSET 0) e
            CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION outbox_reports_created() RETURNS trigger LANGUAGE plpgsql
-- The outbox of the schema the trigger fires in, whatever the writer's search_path.
SET search_path FROM CURRENT AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM outbox_sinks) THEN
        INSERT INTO outbox (event, sink, type, conversation_id, seq, user_id, subject)
        SELECT e.event, s.name, 'report.created', e.conversation_id, e.seq, e.reporter, e.id::text
        FROM (SELECT nextval('outbox_events') AS event, n.id, n.reporter, n.seq,
                     COALESCE(n.conversation_id, '00000000-0000-0000-0000-000000000000') AS conversation_id
              FROM (SELECT * FROM new_rows ORDER BY created_at, id) n OFFSET 0) e
        CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER outbox_reports_created AFTER INSERT ON reports
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_reports_created();
