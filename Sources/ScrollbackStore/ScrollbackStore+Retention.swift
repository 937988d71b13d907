import Foundation
import PostgresNIO
import ScrollbackModels

/// Retention (sql/022): messages older than their conversation's
/// `retention_days` (NULL: the server's default; 0: kept forever) are
/// removed oldest first, in short transactions, and `first_seq` moves past
/// them, taking the conversation's next version so that windows and page
/// caches learn of it.
extension ScrollbackStore {
    /// Sets conversation `id`'s retention: `days` (0: kept forever), or nil
    /// for the server's default. `StoreError.conversationNotFound` when
    /// there is no such conversation.
    public func setRetention(_ days: Int?, for id: UUID) async throws -> ConversationRetention {
        let rows = try await rows(
            """
            UPDATE conversations SET retention_days = \(days.map(Int32.init)) WHERE id = \(id)
            RETURNING retention_days, first_seq
            """,
            writes: true, as: .retention)
        guard let (stored, first) = try rows.first?.decode((Int32?, Int64).self) else {
            throw StoreError.conversationNotFound
        }
        return ConversationRetention(conversationId: id, retentionDays: stored.map(Int.init), firstSeq: first)
    }

    /// One pass of the sweeper: every conversation whose oldest message is
    /// past its retention (`defaultDays` where it has none of its own) loses
    /// its messages older than that, `batch` seqs per transaction; answers
    /// how many messages went.
    public func sweepRetention(defaultDays: Int?, batch: Int = 1_000) async throws -> Int {
        let due = try await rows(
            """
            SELECT c.id, COALESCE(c.retention_days, \(defaultDays.map(Int32.init))) FROM conversations c
            WHERE COALESCE(c.retention_days, \(defaultDays.map(Int32.init))) > 0
              AND EXISTS (
                  SELECT 1 FROM messages m
                  WHERE m.conversation_id = c.id AND m.seq = c.first_seq
                    AND m.created_at < now() - make_interval(days => COALESCE(c.retention_days, \(defaultDays.map(Int32.init)))))
            """,
            writes: false, as: .retention)
        var removed = 0
        for row in due {
            let (id, days) = try row.decode((UUID, Int32).self)
            while true {
                let count = try await purge(id, olderThanDays: Int(days), batch: batch)
                removed += count
                if count < batch { break }
            }
        }
        return removed
    }

    /// Removes up to `batch` of conversation `id`'s oldest messages that
    /// are older than `days`, in one transaction under the conversation's
    /// lock: their reactions, mentions and attachments (bytes collected by
    /// the upload sweeper) with them. Answers how many.
    func purge(_ id: UUID, olderThanDays days: Int, batch: Int) async throws -> Int {
        defer { pageCache.invalidate(id) }
        return try await withTransaction(as: .retention) { [logger] connection -> Int in
            let head = try await connection.query(
                """
                SELECT c.first_seq, c.last_seq,
                       (SELECT min(m.seq) FROM messages m
                        WHERE m.conversation_id = c.id AND m.seq >= c.first_seq AND m.seq < c.first_seq + \(Int64(batch))
                          AND m.created_at >= now() - make_interval(days => \(Int32(days))))
                FROM conversations c WHERE c.id = \(id) FOR NO KEY UPDATE
                """,
                logger: logger
            ).collect()
            guard let (first, last, kept) = try head.first?.decode((Int64, Int64, Int64?).self) else { return 0 }
            let cut = kept ?? min(first + Int64(batch), last + 1)
            guard cut > first else { return 0 }
            for statement: PostgresQuery in [
                "DELETE FROM reactions WHERE conversation_id = \(id) AND seq >= \(first) AND seq < \(cut)",
                "DELETE FROM mentions WHERE conversation_id = \(id) AND seq >= \(first) AND seq < \(cut)",
                """
                UPDATE uploads SET removed_at = now()
                WHERE conversation_id = \(id) AND message_seq >= \(first) AND message_seq < \(cut) AND removed_at IS NULL
                """,
                "DELETE FROM messages WHERE conversation_id = \(id) AND seq >= \(first) AND seq < \(cut)",
                """
                UPDATE conversations SET first_seq = \(cut), version = version + 1, changed_xid = pg_current_xact_id()
                WHERE id = \(id)
                RETURNING \(unescaped: FeedEvent.notify("u", "id::text", "(first_seq - 1)::text", "version::text"))
                """,
            ] {
                _ = try await connection.query(statement, logger: logger).collect()
            }
            return Int(cut - first)
        }
    }
}
