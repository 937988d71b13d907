-- Custom data: an app's own JSON object (`data`) on messages, conversations
-- and members, and an app-defined kind of message (`type`). The server
-- stores and returns them and never reads them: no index, no search. Their
-- rule (an object of at most 4 KiB, keys of at most 64 characters, nesting
-- at most 4 deep; a type of a-z 0-9 _ . - starting with a letter) is
-- checked before a statement runs (`CustomData`, `MessageType`).
ALTER TABLE messages ADD COLUMN data jsonb;
ALTER TABLE messages ADD COLUMN type text;

-- A conversation's description, set like its title (owner or admin).
ALTER TABLE conversations ADD COLUMN description text;
ALTER TABLE conversations ADD COLUMN data jsonb;

-- A member's data: set by the member for their own membership, or by the
-- owner or an admin.
ALTER TABLE members ADD COLUMN data jsonb;

-- The function that stores every send (026), with each send's data and
-- type: `datas` and `types` hold one value per send, or are empty when no
-- send of the call has any (unnest pads them with NULL), so a send without
-- them binds two empty arrays and stores NULLs.
CREATE FUNCTION store_sends(
    conversation_ids uuid[], senders text[], bodies text[], client_ids text[], reply_tos bigint[],
    attachment_ids uuid[], attachment_sends integer[], participants_shown integer, exempt_roles text[],
    datas jsonb[], types text[])
RETURNS TABLE (
    send_position bigint, is_member boolean, parent_state text, attachments_usable boolean, created boolean,
    same_body boolean, conversation_id uuid, seq bigint, conversation_version bigint, slow_wait double precision)
LANGUAGE plpgsql
-- One plan for every call (see 010).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    any_slow_mode boolean;
BEGIN
    -- The conversations locked in one order (two groups that share
    -- conversations never wait for each other in a cycle), their slow mode
    -- read under the lock.
    SELECT bool_or(l.slow_mode_seconds > 0) INTO any_slow_mode
    FROM (
        SELECT c.slow_mode_seconds FROM conversations c
        WHERE c.id = ANY (conversation_ids) ORDER BY c.id FOR NO KEY UPDATE
    ) l;

    IF NOT COALESCE(any_slow_mode, false) AND cardinality(attachment_ids) = 0
        AND cardinality(array_remove(reply_tos, NULL)) = 0
    THEN
        -- The common case: no attachment, no reply, no slow mode. The same
        -- answers as the statement below gives these sends, from a plan
        -- with none of its parts for them.
        RETURN QUERY
        WITH sends AS (
            SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id, s.data, s.type,
                   mb.user_id IS NOT NULL
                       OR (s.sender = '' AND EXISTS (SELECT 1 FROM conversations sc WHERE sc.id = s.conversation_id))
                       AS member
            FROM unnest(conversation_ids, senders, bodies, client_ids, datas, types) WITH ORDINALITY
                AS s (conversation_id, sender, body, client_id, data, type, n)
            LEFT JOIN members mb ON mb.conversation_id = s.conversation_id AND mb.user_id = s.sender
        ), earlier AS (
            SELECT s.n, e.seq, COALESCE(e.sent_body_hash = md5(s.body), e.body = s.body) AS same
            FROM sends s
            JOIN messages e ON e.conversation_id = s.conversation_id AND e.sender = s.sender AND e.client_id = s.client_id
            WHERE s.member
        ), numbered AS (
            -- Each new send takes one version: none is a reply.
            SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id, s.data, s.type,
                   c.last_seq + row_number() OVER w AS seq, c.version + row_number() OVER w AS conversation_version
            FROM sends s
            JOIN conversations c ON c.id = s.conversation_id
            WHERE s.member AND NOT EXISTS (SELECT 1 FROM earlier x WHERE x.n = s.n)
            WINDOW w AS (PARTITION BY s.conversation_id ORDER BY s.n)
        ), stored AS (
            INSERT INTO messages AS m (conversation_id, seq, sender, body, client_id, version, sent_body_hash, data, type)
            SELECT n.conversation_id, n.seq, n.sender, n.body, n.client_id, n.conversation_version,
                   CASE WHEN n.client_id IS NULL THEN NULL ELSE md5(n.body) END, n.data, n.type
            FROM numbered n
        ), bumped AS (
            UPDATE conversations c
            SET last_seq = b.last_seq, version = b.version, activity = nextval('conversation_activity'),
                changed_xid = pg_current_xact_id()
            FROM (
                SELECT n.conversation_id, max(n.seq) AS last_seq, max(n.conversation_version) AS version
                FROM numbered n GROUP BY n.conversation_id
            ) b
            WHERE c.id = b.conversation_id
        )
        SELECT s.n, s.member, 'usable', true, n.seq IS NOT NULL, COALESCE(x.same, true), s.conversation_id,
               COALESCE(n.seq, x.seq), n.conversation_version, NULL::double precision
        FROM sends s
        LEFT JOIN numbered n ON n.n = s.n
        LEFT JOIN earlier x ON x.n = s.n;
        RETURN;
    END IF;

    RETURN QUERY
    WITH sends AS (
        SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id, s.reply_to, s.data, s.type,
               -- The system (sender ''): a member of every conversation, with the
               -- owner's rights. A member's send pays one comparison for it.
               mb.user_id IS NOT NULL
                   OR (s.sender = '' AND EXISTS (SELECT 1 FROM conversations sc WHERE sc.id = s.conversation_id))
                   AS member,
               COALESCE(mb.role, 'owner') AS role
        FROM unnest(conversation_ids, senders, bodies, client_ids, reply_tos, datas, types) WITH ORDINALITY
            AS s (conversation_id, sender, body, client_id, reply_to, data, type, n)
        LEFT JOIN members mb ON mb.conversation_id = s.conversation_id AND mb.user_id = s.sender
    ), listed AS (
        -- Each attachment of each send, with whether it may be sent by it.
        SELECT a.send_n, a.ord, u.id, u.kind, u.content_type, u.size, u.filename, u.width, u.height, u.blurhash,
               u.id IS NOT NULL AND u.uploader = s.sender AND u.kind IS NOT NULL AND u.message_seq IS NULL
                   AND u.removed_at IS NULL AND u.expires_at > now()
                   AND row_number() OVER (PARTITION BY a.id ORDER BY a.send_n) = 1 AS usable
        FROM unnest(attachment_ids, attachment_sends) WITH ORDINALITY AS a (id, send_n, ord)
        JOIN sends s ON s.n = a.send_n
        LEFT JOIN uploads u ON u.conversation_id = s.conversation_id AND u.id = a.id
    ), attached AS (
        SELECT l.send_n, bool_and(l.usable) AS usable,
               jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                   'id', l.id, 'kind', l.kind, 'content_type', l.content_type, 'size', l.size,
                   'filename', l.filename, 'width', l.width, 'height', l.height, 'blurhash', l.blurhash))
                   ORDER BY l.ord) AS list
        FROM listed l GROUP BY l.send_n
    ), earlier AS (
        SELECT s.n, e.seq, COALESCE(e.sent_body_hash = md5(s.body), e.body = s.body) AS same
        FROM sends s
        JOIN messages e ON e.conversation_id = s.conversation_id AND e.sender = s.sender AND e.client_id = s.client_id
        WHERE s.member
    ), slowed AS (
        -- The new sends that slow mode holds back, with how long to wait.
        SELECT w.n, w.wait FROM (
            SELECT s.n,
                   GREATEST(EXTRACT(EPOCH FROM (ls.sent_at - now())) + c.slow_mode_seconds, 0)
                       + CASE WHEN row_number() OVER (PARTITION BY s.conversation_id, s.sender ORDER BY s.n) > 1
                              THEN c.slow_mode_seconds ELSE 0 END AS wait
            FROM sends s
            JOIN conversations c ON c.id = s.conversation_id AND c.slow_mode_seconds > 0
            LEFT JOIN slow_mode_sends ls ON ls.conversation_id = s.conversation_id AND ls.user_id = s.sender
            WHERE s.member AND s.role <> ALL (exempt_roles) AND NOT EXISTS (SELECT 1 FROM earlier x WHERE x.n = s.n)
        ) w
        WHERE w.wait > 0
    ), parents AS (
        SELECT s.n, COALESCE(p.thread_root, p.seq) AS root, p.deleted
        FROM sends s
        JOIN messages p ON p.conversation_id = s.conversation_id AND p.seq = s.reply_to
        WHERE s.member
    ), numbered AS (
        -- A reply takes two versions: its own, then its root's.
        SELECT s.n, s.conversation_id, s.sender, s.role, s.body, s.client_id, s.reply_to, s.data, s.type, p.root,
               at.list AS attachments,
               c.last_seq + row_number() OVER w AS seq,
               c.version + sum(CASE WHEN s.reply_to IS NULL THEN 1 ELSE 2 END) OVER w AS conversation_version,
               c.slow_mode_seconds
        FROM sends s
        JOIN conversations c ON c.id = s.conversation_id
        LEFT JOIN parents p ON p.n = s.n
        LEFT JOIN attached at ON at.send_n = s.n
        WHERE s.member AND NOT EXISTS (SELECT 1 FROM earlier x WHERE x.n = s.n)
          AND NOT EXISTS (SELECT 1 FROM slowed sl WHERE sl.n = s.n)
          AND (s.reply_to IS NULL OR NOT p.deleted) AND COALESCE(at.usable, true)
        WINDOW w AS (PARTITION BY s.conversation_id ORDER BY s.n)
    ), stored AS (
        INSERT INTO messages AS m (
            conversation_id, seq, sender, body, client_id, version, sent_body_hash, reply_to, thread_root, attachments,
            data, type)
        SELECT n.conversation_id, n.seq, n.sender, n.body, n.client_id,
               n.conversation_version - CASE WHEN n.reply_to IS NULL THEN 0 ELSE 1 END,
               CASE WHEN n.client_id IS NULL THEN NULL ELSE md5(n.body) END, n.reply_to, n.root, n.attachments,
               n.data, n.type
        FROM numbered n
        RETURNING m.conversation_id, m.seq, m.created_at
    ), paced AS (
        INSERT INTO slow_mode_sends AS p (conversation_id, user_id, sent_at)
        SELECT DISTINCT n.conversation_id, n.sender, now()
        FROM numbered n
        WHERE n.slow_mode_seconds > 0 AND n.role <> ALL (exempt_roles)
        ON CONFLICT (conversation_id, user_id) DO UPDATE SET sent_at = EXCLUDED.sent_at
    ), sent AS (
        UPDATE uploads u SET message_seq = n.seq, position = l.ord
        FROM listed l JOIN numbered n ON n.n = l.send_n
        WHERE u.conversation_id = n.conversation_id AND u.id = l.id
    ), roots AS (
        UPDATE messages r
        SET reply_count = r.reply_count + t.replies, last_reply_at = t.last_reply_at, version = t.version,
            thread_participants = CASE
                WHEN cardinality(COALESCE(r.thread_participants, '{}')) >= participants_shown
                THEN r.thread_participants
                ELSE COALESCE(r.thread_participants, '{}') || ARRAY(
                    SELECT u.sender
                    FROM (
                        SELECT x.sender, min(x.ord) AS first
                        FROM unnest(t.senders) WITH ORDINALITY AS x (sender, ord)
                        WHERE x.sender <> ALL (COALESCE(r.thread_participants, '{}'))
                        GROUP BY x.sender
                    ) u
                    ORDER BY u.first
                    LIMIT participants_shown - cardinality(COALESCE(r.thread_participants, '{}')))
                END
        FROM (
            SELECT n.conversation_id, n.root, count(*) AS replies, max(st.created_at) AS last_reply_at,
                   max(n.conversation_version) AS version, array_agg(n.sender ORDER BY n.n) AS senders
            FROM numbered n
            JOIN stored st ON st.conversation_id = n.conversation_id AND st.seq = n.seq
            WHERE n.reply_to IS NOT NULL
            GROUP BY n.conversation_id, n.root
        ) t
        WHERE r.conversation_id = t.conversation_id AND r.seq = t.root
    ), bumped AS (
        UPDATE conversations c
        SET last_seq = b.last_seq, version = b.version, activity = nextval('conversation_activity'),
            changed_xid = pg_current_xact_id()
        FROM (
            SELECT n.conversation_id, max(n.seq) AS last_seq, max(n.conversation_version) AS version
            FROM numbered n GROUP BY n.conversation_id
        ) b
        WHERE c.id = b.conversation_id
    )
    SELECT s.n, s.member,
           CASE WHEN s.reply_to IS NULL OR NOT p.deleted THEN 'usable' WHEN p.n IS NULL THEN 'missing' ELSE 'deleted' END,
           COALESCE(at.usable, true), n.seq IS NOT NULL, COALESCE(x.same, true), s.conversation_id,
           COALESCE(n.seq, x.seq), n.conversation_version, sl.wait::double precision
    FROM sends s
    LEFT JOIN numbered n ON n.n = s.n
    LEFT JOIN earlier x ON x.n = s.n
    LEFT JOIN parents p ON p.n = s.n
    LEFT JOIN attached at ON at.send_n = s.n
    LEFT JOIN slowed sl ON sl.n = s.n;
END
$$;

-- The call of 026, for instances of the previous version during a rolling
-- upgrade: the same function, with no data and no type.
CREATE OR REPLACE FUNCTION store_sends(
    conversation_ids uuid[], senders text[], bodies text[], client_ids text[], reply_tos bigint[],
    attachment_ids uuid[], attachment_sends integer[], participants_shown integer, exempt_roles text[])
RETURNS TABLE (
    send_position bigint, is_member boolean, parent_state text, attachments_usable boolean, created boolean,
    same_body boolean, conversation_id uuid, seq bigint, conversation_version bigint, slow_wait double precision)
LANGUAGE sql AS $$
    SELECT s.send_position, s.is_member, s.parent_state, s.attachments_usable, s.created, s.same_body,
           s.conversation_id, s.seq, s.conversation_version, s.slow_wait
    FROM store_sends(conversation_ids, senders, bodies, client_ids, reply_tos, attachment_ids, attachment_sends,
                     participants_shown, exempt_roles, '{}'::jsonb[], '{}'::text[]) s
$$;

-- `member.updated` (018) also when a member's data changed: the event
-- carries the member's role and, read when it is delivered, their data.
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
                        WHERE n.role <> o.role OR n.data IS DISTINCT FROM o.data
                        ORDER BY conversation_id, user_id, type DESC) c OFFSET 0) e
            CROSS JOIN outbox_sinks s ORDER BY e.event, s.name;
        END IF;
    END IF;
    RETURN NULL;
END $$;
