-- Search without a slow case: one index on the conversation and the words.
--
-- Every search reads one conversation at a time (each of the caller's
-- conversations gives its own newest hits). With the words alone in the
-- index, a word found in a few messages of a big conversation was answered
-- by combining the word's entries with every entry of that conversation in
-- `messages_by_time`: 90 to 180 ms in a conversation of a million messages
-- (BENCHMARKS.md). An index on both (`btree_gin` lets a GIN index hold the
-- conversation id beside the words) finds those few messages directly, in a
-- few milliseconds, whatever the size of the conversation. The search
-- statement walks a conversation's newest messages first and uses this index
-- only for what the walk did not find (ScrollbackStore+Search.swift), so a
-- common word still costs what it did.
--
-- It replaces the index on the words alone (no statement searches without
-- a conversation), so a send still writes one text search index: its words
-- and one more entry, the conversation's. Built in this migration's
-- transaction, it holds back sends while it is built (about 25 s for a
-- million messages on the benchmark's machine; docs/operations.md).
--
-- `btree_gin` ships with PostgreSQL (contrib) and is a trusted extension:
-- the database's owner may create it. It goes in `public` so that it
-- outlives any one schema of the database (several stores may share a
-- database, each in its own schema); a database administrator may also
-- create it beforehand, in any schema. The lock keeps two stores that
-- migrate at once from both creating it.
SELECT pg_advisory_xact_lock(hashtext('scrollback.extensions'));
CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

CREATE INDEX messages_search_by_conversation ON messages
    USING gin (conversation_id, search_vector) WITH (fastupdate = off)
    WHERE search_vector IS NOT NULL;
DROP INDEX messages_search;
