-- The benchmark's data set, loaded in bulk (not through the API) into a
-- database the server's own migrations created. Reproducible: one fixed
-- random seed, one process, a fixed start time.
--
--   psql -v conversations=10000 -v messages=100 -v big=1000000 -v users=500 -f scripts/bench-data.sql
--
-- :conversations conversations of :messages messages each, arriving
-- interleaved as real traffic does (so a conversation's rows are spread over
-- the table), plus one conversation of :big messages; 2 or 3 members per
-- conversation drawn from :users users. Seqs are dense 1..N, version = seq,
-- created_at grows with arrival, and each conversation's last_seq, version
-- and activity agree with its messages. bench_targets tells the benchmark
-- which conversations to address and as whom.
--
-- For the search: every tenth message of a conversation (seq divisible by
-- 10) starts with the word `lunch`, and about 40 messages in all start with
-- `zeppelin` (scrollback-bench's search workloads look for these two). The
-- search vectors are made here, as the trigger would (triggers do not fire
-- while loading in bulk), so the server's backfill finds nothing to do.
--
-- Threads and reactions, so that pages carry them as real ones do: in every
-- conversation the first message is a thread root and every fourth message
-- from seq 2 on (seq 2, 6, 10, ...) replies to it, with the root's summary
-- as the send of each reply would keep it; every fifth message has a 👍 of
-- the conversation's first member.
\set ON_ERROR_STOP on
SET max_parallel_workers_per_gather = 0;  -- one process draws every random() in a fixed order
SET session_replication_role = replica;   -- no per-row foreign key triggers while loading in bulk
SET work_mem = '1GB';
SELECT setseed(0.42);

INSERT INTO users (id, created_at)
SELECT 'user' || u, timestamptz '2025-01-01 00:00:00+00'
FROM generate_series(1, :users) u;

-- n = 0 is the big conversation; 1..:conversations the many.
CREATE TEMP TABLE plan AS
SELECT n,
       md5('conversation ' || n)::uuid AS id,
       CASE WHEN n = 0 THEN :big ELSE :messages END::bigint AS message_count,
       ARRAY(SELECT DISTINCT 'user' || (1 + floor(random() * :users)::int)
             FROM generate_series(1, 2 + n % 2)) AS members
FROM generate_series(0, :conversations) n;

INSERT INTO conversations (id, title, created_by, created_at, last_seq, version, activity)
SELECT id, 'Conversation ' || n, members[1], timestamptz '2025-01-01 00:00:00+00', message_count, message_count, 0
FROM plan ORDER BY n;

INSERT INTO members (conversation_id, user_id, joined_at)
SELECT p.id, m.user_id, timestamptz '2025-01-01 00:00:00+00'
FROM plan p CROSS JOIN LATERAL unnest(p.members) AS m(user_id)
ORDER BY p.n, m.user_id;

-- Messages in arrival order: a conversation's k-th message arrives at a
-- random moment within the k-th part of the conversation's life, so all
-- conversations talk at once and each one's seqs still arrive in order.
INSERT INTO messages (conversation_id, seq, sender, body, created_at, version, search_vector,
                      reply_to, thread_root, reaction_emojis, reaction_counts)
SELECT id, seq, sender, body,
       timestamptz '2025-01-01 00:00:01+00' + arrival * interval '1 second', seq,
       to_tsvector((SELECT config FROM search_settings), body),
       CASE WHEN seq % 4 = 2 THEN 1 END, CASE WHEN seq % 4 = 2 THEN 1 END,
       CASE WHEN seq % 5 = 0 THEN ARRAY['👍'] END, CASE WHEN seq % 5 = 0 THEN ARRAY[1] END
FROM (
    SELECT id, seq, sender, body, row_number() OVER (ORDER BY position, id) AS arrival
    FROM (
        SELECT p.id, s.seq,
               p.members[1 + s.seq % cardinality(p.members)] AS sender,
               left(CASE WHEN (p.n * 7919 + s.seq) % 50000 = 0 THEN 'zeppelin '
                         WHEN s.seq % 10 = 0 THEN 'lunch ' ELSE '' END
                    || repeat(md5(random()::text) || ' ' || substr(md5(random()::text), 1, 9) || ' ', 6),
                    80 + floor(random() * 121)::int) AS body,
               (s.seq - 1 + random()) / p.message_count AS position
        FROM plan p CROSS JOIN LATERAL generate_series(1, p.message_count) AS s(seq)
    ) drawn
) arrived
ORDER BY arrival;

-- The reactions behind the aggregates, and each root's thread summary.
INSERT INTO reactions (conversation_id, seq, emoji, user_id, created_at)
SELECT m.conversation_id, m.seq, '👍', p.members[1], m.created_at
FROM messages m JOIN plan p ON p.id = m.conversation_id
WHERE m.reaction_emojis IS NOT NULL
ORDER BY m.conversation_id, m.seq;

UPDATE messages r
SET reply_count = t.replies, last_reply_at = t.last_reply_at,
    thread_participants = ARRAY(
        SELECT sender FROM messages
        WHERE conversation_id = r.conversation_id AND thread_root = r.seq
        GROUP BY sender ORDER BY min(seq) LIMIT 10)
FROM (
    SELECT conversation_id, thread_root, count(*) AS replies, max(created_at) AS last_reply_at
    FROM messages WHERE thread_root IS NOT NULL
    GROUP BY conversation_id, thread_root
) t
WHERE r.conversation_id = t.conversation_id AND r.seq = t.thread_root;

-- The conversation list's order: the conversation whose last message
-- arrived last is the most active.
UPDATE conversations c
SET activity = last.arrival
FROM (
    SELECT conversation_id, rank() OVER (ORDER BY max(created_at), conversation_id) AS arrival
    FROM messages GROUP BY conversation_id
) last
WHERE c.id = last.conversation_id;
SELECT setval('conversation_activity', (SELECT max(activity) FROM conversations));

CREATE TABLE bench_targets (
    n               integer PRIMARY KEY,
    kind            text    NOT NULL,   -- big, page
    conversation_id uuid    NOT NULL,
    user_id         text    NOT NULL,   -- a member, who makes the requests
    last_seq        bigint  NOT NULL
);
INSERT INTO bench_targets
SELECT n, CASE WHEN n = 0 THEN 'big' ELSE 'page' END, id, members[1], message_count
FROM plan;

UPDATE search_settings SET backfill_done = true, backfill_done_at = now();

RESET session_replication_role;
