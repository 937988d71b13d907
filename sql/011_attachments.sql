-- Images and files in messages.
--
-- An upload is announced (`POST .../uploads`), then its bytes arrive, then a
-- send carries it; from then on it is an attachment of that message. One
-- row holds it through all three: what the uploader declared, how many
-- bytes arrived, what the server found the bytes to be once the last one
-- arrived, and the message that sent it.
CREATE TABLE uploads (
    conversation_id uuid        NOT NULL REFERENCES conversations (id),
    id              uuid        NOT NULL DEFAULT gen_random_uuid(),
    uploader        text        NOT NULL,
    filename        text        NOT NULL,
    declared_type   text        NOT NULL,
    size            bigint      NOT NULL CHECK (size > 0),
    blurhash        text,
    -- Where the bytes are: NULL for `upload_chunks`, else the key of an
    -- object in the configured object store.
    object_key      text,
    -- Bytes stored so far, from the first (the chunks are contiguous).
    received        bigint      NOT NULL DEFAULT 0 CHECK (received >= 0 AND received <= size),
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    -- What the bytes are, recorded once they are all there: `kind` NULL
    -- until then.
    kind            text        CHECK (kind IN ('image', 'video', 'file')),
    content_type    text,
    width           integer,
    height          integer,
    sha256          bytea,
    -- The message that sent it, and its place among the message's attachments.
    message_seq     bigint,
    position        smallint,
    -- When its message was deleted: the bytes are collected a grace period later.
    removed_at      timestamptz,
    PRIMARY KEY (conversation_id, id)
);

-- A user's pending uploads (their quota), and what the sweeper collects.
CREATE INDEX uploads_pending ON uploads (uploader) WHERE message_seq IS NULL;
CREATE INDEX uploads_expiring ON uploads (expires_at) WHERE message_seq IS NULL;
CREATE INDEX uploads_removed ON uploads (removed_at) WHERE removed_at IS NOT NULL;
-- The attachments of a message, for its deletion.
CREATE INDEX uploads_by_message ON uploads (conversation_id, message_seq) WHERE message_seq IS NOT NULL;

-- The bytes of uploads kept in the database, in chunks of at most a few
-- hundred KiB, in order from `start`.
CREATE TABLE upload_chunks (
    conversation_id uuid   NOT NULL,
    upload_id       uuid   NOT NULL,
    start           bigint NOT NULL CHECK (start >= 0),
    bytes           bytea  NOT NULL,
    PRIMARY KEY (conversation_id, upload_id, start),
    FOREIGN KEY (conversation_id, upload_id) REFERENCES uploads (conversation_id, id) ON DELETE CASCADE
);

-- Photos and videos are compressed already: stored out of line as they are.
ALTER TABLE upload_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;

-- A message's attachments as its readers get them, in order (NULL: none):
-- written once by the send, removed by a deletion. `[{id, kind,
-- content_type, size, filename, width, height, blurhash}]`.
ALTER TABLE messages ADD COLUMN attachments jsonb;

-- The function that stores every send (010), with attachments: `attachment_ids`
-- holds the upload ids of all the sends, `attachment_sends` the position (from
-- 1) of the send each belongs to, in the order each send lists them. A send
-- whose attachments are not all usable uploads (complete, of its sender and
-- conversation, not expired, not sent before, not taken by an earlier send
-- of the same call) stores nothing: `attachments_usable` is false.
CREATE FUNCTION store_sends(
    conversation_ids uuid[], senders text[], bodies text[], client_ids text[], reply_tos bigint[],
    attachment_ids uuid[], attachment_sends integer[], participants_shown integer)
RETURNS TABLE (
    send_position bigint, is_member boolean, parent_state text, attachments_usable boolean, created boolean,
    same_body boolean, conversation_id uuid, seq bigint, conversation_version bigint)
LANGUAGE plpgsql
-- One plan for every call (see 010).
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1 FROM conversations c WHERE c.id = ANY (conversation_ids) ORDER BY c.id FOR NO KEY UPDATE;

    RETURN QUERY
    WITH sends AS (
        SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id, s.reply_to,
               EXISTS (
                   SELECT 1 FROM members mb WHERE mb.conversation_id = s.conversation_id AND mb.user_id = s.sender
               ) AS member
        FROM unnest(conversation_ids, senders, bodies, client_ids, reply_tos) WITH ORDINALITY
            AS s (conversation_id, sender, body, client_id, reply_to, n)
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
    ), parents AS (
        SELECT s.n, COALESCE(p.thread_root, p.seq) AS root, p.deleted
        FROM sends s
        JOIN messages p ON p.conversation_id = s.conversation_id AND p.seq = s.reply_to
        WHERE s.member
    ), numbered AS (
        -- A reply takes two versions: its own, then its root's.
        SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id, s.reply_to, p.root, at.list AS attachments,
               c.last_seq + row_number() OVER w AS seq,
               c.version + sum(CASE WHEN s.reply_to IS NULL THEN 1 ELSE 2 END) OVER w AS conversation_version
        FROM sends s
        JOIN conversations c ON c.id = s.conversation_id
        LEFT JOIN parents p ON p.n = s.n
        LEFT JOIN attached at ON at.send_n = s.n
        WHERE s.member AND NOT EXISTS (SELECT 1 FROM earlier x WHERE x.n = s.n)
          AND (s.reply_to IS NULL OR NOT p.deleted) AND COALESCE(at.usable, true)
        WINDOW w AS (PARTITION BY s.conversation_id ORDER BY s.n)
    ), stored AS (
        INSERT INTO messages AS m (
            conversation_id, seq, sender, body, client_id, version, sent_body_hash, reply_to, thread_root, attachments)
        SELECT n.conversation_id, n.seq, n.sender, n.body, n.client_id,
               n.conversation_version - CASE WHEN n.reply_to IS NULL THEN 0 ELSE 1 END,
               CASE WHEN n.client_id IS NULL THEN NULL ELSE md5(n.body) END, n.reply_to, n.root, n.attachments
        FROM numbered n
        RETURNING m.conversation_id, m.seq, m.created_at
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
           COALESCE(n.seq, x.seq), n.conversation_version
    FROM sends s
    LEFT JOIN numbered n ON n.n = s.n
    LEFT JOIN earlier x ON x.n = s.n
    LEFT JOIN parents p ON p.n = s.n
    LEFT JOIN attached at ON at.send_n = s.n;
END
$$;

-- The call of 010, for instances of the previous version during a rolling
-- upgrade: the same function, with no attachments.
CREATE OR REPLACE FUNCTION store_sends(
    conversation_ids uuid[], senders text[], bodies text[], client_ids text[], reply_tos bigint[],
    participants_shown integer)
RETURNS TABLE (
    send_position bigint, is_member boolean, parent_state text, created boolean, same_body boolean,
    conversation_id uuid, seq bigint, conversation_version bigint)
LANGUAGE sql AS $$
    SELECT s.send_position, s.is_member, s.parent_state, s.created, s.same_body, s.conversation_id, s.seq,
           s.conversation_version
    FROM store_sends(conversation_ids, senders, bodies, client_ids, reply_tos, '{}', '{}', participants_shown) s
$$;
