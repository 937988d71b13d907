-- Sends without the search index's pauses.
--
-- By default a GIN index gathers new entries in a pending list
-- (`fastupdate`) and merges the list into the index once it outgrows
-- `gin_pending_list_limit` (4 MB by default); the insert that crosses the
-- limit does the whole merge. On a messages table of millions of rows that
-- send took 0.4 to 0.9 s, every few thousand sends (BENCHMARKS.md). As
-- PostgreSQL's documentation puts it, "if consistent response time is more
-- important than update speed, use of pending entries can be disabled by
-- turning off the fastupdate storage parameter": each send then puts its
-- words in the index itself, a little more work every time and never a
-- pause (2 to 4 % fewer sends a second at the peak in that measurement).
--
-- The change takes the index's lock for a moment. Entries already pending
-- are merged here, rather than by whichever send would have crossed the
-- limit.

ALTER INDEX messages_search SET (fastupdate = off);

SELECT gin_clean_pending_list('messages_search'::regclass);
