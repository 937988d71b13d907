-- Every send is stored by this one function: a send alone, a reply, and the
-- sends of a group (ScrollbackStore's SendGroups), so the rules of a send
-- live in one place. It replaces `send_group` (008), which knew no replies,
-- and the statement a send alone or a reply ran, which wrote the same rules
-- a second time.
--
-- The arrays hold one send each, at the same position (`client_ids` and
-- `reply_tos` may hold NULLs). The conversations are locked first, in id
-- order, so two calls never wait for each other in a cycle; only then are
-- they read: the statement that stores runs with a snapshot taken after
-- every lock was granted (a function's statements each take their own), so
-- it sees every member removed, every message stored and every message
-- deleted before. A single statement that waited for a lock would still
-- read with its earlier snapshot.
--
-- For each send, by its position:
--   * not a member, or no such conversation: `is_member` false, nothing stored;
--   * an earlier message of its sender with its `client_id`: that message's
--     seq, `same_body` saying whether the bodies agree (a replay, or a
--     conflict), whatever the reply asks for;
--   * a reply whose parent is missing or deleted: `parent_state` says
--     which, nothing stored;
--   * otherwise stored with its conversation's next seq and version, in the
--     order of the arrays: seqs stay dense. A reply joins its parent's
--     thread, and the thread's root takes the version after the reply's,
--     with its summary (reply count, last reply, the first
--     `participants_shown` participants) updated.
-- Each conversation's counters move once. The caller notifies the change
-- feed from what this returns (`conversation_version` is the conversation's
-- version after the send), so that the notification's format is written in
-- one place (FeedEvent in ScrollbackStore), and reads the messages back once
-- the commit is done.
CREATE FUNCTION store_sends(
    conversation_ids uuid[], senders text[], bodies text[], client_ids text[], reply_tos bigint[],
    participants_shown integer)
RETURNS TABLE (
    send_position bigint, is_member boolean, parent_state text, created boolean, same_body boolean,
    conversation_id uuid, seq bigint, conversation_version bigint)
LANGUAGE plpgsql
-- One plan for every call: planned for its values each time (what PL/pgSQL
-- does while a generic plan looks costlier than the first few custom ones,
-- and with arrays of unknown length it always does), this statement cost a
-- send more than twice the rest of its work.
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
        SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id, s.reply_to, p.root,
               c.last_seq + row_number() OVER w AS seq,
               c.version + sum(CASE WHEN s.reply_to IS NULL THEN 1 ELSE 2 END) OVER w AS conversation_version
        FROM sends s
        JOIN conversations c ON c.id = s.conversation_id
        LEFT JOIN parents p ON p.n = s.n
        WHERE s.member AND NOT EXISTS (SELECT 1 FROM earlier x WHERE x.n = s.n)
          AND (s.reply_to IS NULL OR NOT p.deleted)
        WINDOW w AS (PARTITION BY s.conversation_id ORDER BY s.n)
    ), stored AS (
        INSERT INTO messages AS m (
            conversation_id, seq, sender, body, client_id, version, sent_body_hash, reply_to, thread_root)
        SELECT n.conversation_id, n.seq, n.sender, n.body, n.client_id,
               n.conversation_version - CASE WHEN n.reply_to IS NULL THEN 0 ELSE 1 END,
               CASE WHEN n.client_id IS NULL THEN NULL ELSE md5(n.body) END, n.reply_to, n.root
        FROM numbered n
        RETURNING m.conversation_id, m.seq, m.created_at
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
           n.seq IS NOT NULL, COALESCE(x.same, true), s.conversation_id, COALESCE(n.seq, x.seq),
           n.conversation_version
    FROM sends s
    LEFT JOIN numbered n ON n.n = s.n
    LEFT JOIN earlier x ON x.n = s.n
    LEFT JOIN parents p ON p.n = s.n;
END
$$;

-- An instance of the previous version still running during a rolling
-- upgrade finds no `send_group`: the database refuses its group as a whole,
-- and it stores each send of it alone, with the statement it has for that.
DROP FUNCTION send_group(uuid[], text[], text[], text[]);
