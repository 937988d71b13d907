-- Retention: messages older than a conversation's `retention_days` (NULL:
-- the server's default, SCROLLBACK_RETENTION_DAYS; 0: kept forever) are
-- removed by a sweeper, oldest first, and `first_seq` moves to the oldest
-- seq still stored: pages have no older messages there, and seqs stay
-- dense from `first_seq` to `last_seq`.
ALTER TABLE conversations
    ADD COLUMN first_seq      bigint  NOT NULL DEFAULT 1,
    ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 0 AND 36500);
