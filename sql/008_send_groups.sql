-- Sends committed in groups: one call stores many sends, in one transaction,
-- with one notification (see ScrollbackStore's SendGroups).
--
-- The arrays hold one send each, at the same position (`client_ids` may
-- hold NULLs). The conversations are locked first, in id order, so two
-- groups never wait for each other in a cycle; only then are they read: the
-- statement that stores runs with a snapshot taken after every lock was
-- granted (a function's statements each take their own), so it sees every
-- member removed and every message stored before. A single statement that
-- waited for a lock would still read with its earlier snapshot.
--
-- For each send, by its position:
--   * not a member, or no such conversation: `is_member` false, nothing stored;
--   * an earlier message of its sender with its `client_id`: that message,
--     `same_body` saying whether the bodies agree (a replay, or a conflict);
--   * otherwise stored with its conversation's next seq and version, in
--     the order of the arrays: seqs stay dense.
-- Each conversation's counters move once, and one notification names every
-- conversation that changed: `g:` then `id:last_seq:version` for each,
-- joined with `:`.
CREATE FUNCTION send_group(conversation_ids uuid[], senders text[], bodies text[], client_ids text[])
RETURNS TABLE (send_position bigint, is_member boolean, created boolean, same_body boolean, message messages)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM 1 FROM conversations c WHERE c.id = ANY (conversation_ids) ORDER BY c.id FOR NO KEY UPDATE;

    RETURN QUERY
    WITH sends AS (
        SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id,
               EXISTS (
                   SELECT 1 FROM members mb WHERE mb.conversation_id = s.conversation_id AND mb.user_id = s.sender
               ) AS member
        FROM unnest(conversation_ids, senders, bodies, client_ids) WITH ORDINALITY
            AS s (conversation_id, sender, body, client_id, n)
    ), earlier AS (
        SELECT s.n, e AS message, COALESCE(e.sent_body_hash = md5(s.body), e.body = s.body) AS same
        FROM sends s
        JOIN messages e ON e.conversation_id = s.conversation_id AND e.sender = s.sender AND e.client_id = s.client_id
        WHERE s.member
    ), numbered AS (
        SELECT s.n, s.conversation_id, s.sender, s.body, s.client_id,
               c.last_seq + row_number() OVER w AS seq, c.version + row_number() OVER w AS version
        FROM sends s
        JOIN conversations c ON c.id = s.conversation_id
        WHERE s.member AND NOT EXISTS (SELECT 1 FROM earlier x WHERE x.n = s.n)
        WINDOW w AS (PARTITION BY s.conversation_id ORDER BY s.n)
    ), stored AS (
        INSERT INTO messages AS m (conversation_id, seq, sender, body, client_id, version, sent_body_hash)
        SELECT n.conversation_id, n.seq, n.sender, n.body, n.client_id, n.version,
               CASE WHEN n.client_id IS NULL THEN NULL ELSE md5(n.body) END
        FROM numbered n
        RETURNING m.conversation_id, m.seq, m.version, m AS message
    ), bumped AS (
        UPDATE conversations c
        SET last_seq = b.last_seq, version = b.version, activity = nextval('conversation_activity'),
            changed_xid = pg_current_xact_id()
        FROM (
            SELECT st.conversation_id, max(st.seq) AS last_seq, max(st.version) AS version
            FROM stored st GROUP BY st.conversation_id
        ) b
        WHERE c.id = b.conversation_id
    )
    SELECT s.n, s.member, st.seq IS NOT NULL, COALESCE(x.same, true),
           CASE WHEN st.seq IS NOT NULL THEN st.message ELSE x.message END
    FROM sends s
    LEFT JOIN numbered n ON n.n = s.n
    LEFT JOIN stored st ON st.conversation_id = n.conversation_id AND st.seq = n.seq
    LEFT JOIN earlier x ON x.n = s.n;

    -- After the statement above: the conversations it moved, as they are now.
    PERFORM pg_notify(
        'scrollback_feed', 'g:' || string_agg(c.id::text || ':' || c.last_seq || ':' || c.version, ':' ORDER BY c.id))
    FROM conversations c
    WHERE c.id = ANY (conversation_ids) AND c.changed_xid = pg_current_xact_id()
    HAVING count(*) > 0;
END
$$;
