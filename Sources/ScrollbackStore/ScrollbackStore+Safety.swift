import Foundation
import PostgresNIO
import ScrollbackModels

/// Blocks and reports (`sql/017_distinct_blocks_reports.sql`).
extension ScrollbackStore {
    /// `blocker` blocks `user` (again: unchanged). Every instance is told
    /// (`FeedEvent.blocks`), so the blocker's pages and frames flag the
    /// blocked user's messages from then on.
    public func block(_ user: UserID, by blocker: UserID) async throws -> BlockedUser {
        let rows = try await rows(
            """
            WITH b AS (
                INSERT INTO blocks AS b (blocker, blocked) VALUES (\(blocker.rawValue), \(user.rawValue))
                ON CONFLICT (blocker, blocked) DO UPDATE SET blocker = b.blocker
                RETURNING blocker, blocked, created_at
            )
            SELECT blocked, created_at, \(unescaped: FeedEvent.notify("k", "blocker")) FROM b
            """,
            writes: true, as: .blocks)
        guard let (blocked, at) = try rows.first?.decode((String, Date).self) else { throw MalformedRow() }
        return BlockedUser(userId: blocked, createdAt: at)
    }

    /// Lifts `blocker`'s block of `user` (none: unchanged).
    public func unblock(_ user: UserID, by blocker: UserID) async throws {
        _ = try await rows(
            """
            WITH d AS (
                DELETE FROM blocks WHERE blocker = \(blocker.rawValue) AND blocked = \(user.rawValue) RETURNING blocker
            )
            SELECT \(unescaped: FeedEvent.notify("k", "blocker")) FROM d
            """,
            writes: true, as: .blocks)
    }

    /// The users `blocker` blocked, by user id.
    public func blocks(of blocker: UserID) async throws -> [BlockedUser] {
        let rows = try await rows(
            "SELECT blocked, created_at FROM blocks WHERE blocker = \(blocker.rawValue) ORDER BY blocked COLLATE \"C\"",
            writes: false, as: .blocks)
        return try rows.map { row in
            let (user, at) = try row.decode((String, Date).self)
            return BlockedUser(userId: user, createdAt: at)
        }
    }

    /// Files `reporter`'s report of message `seq` of conversation `id`,
    /// keeping the message as it is now (sender, body, version). The
    /// reporter must be a member, and the message not deleted. Reporting the
    /// same message again answers the first report (`created` false).
    public func report(
        message seq: Int64, in id: UUID, by reporter: UserID, reason: ReportReason, note: String?
    ) async throws -> (report: Report, created: Bool) {
        let rows = try await rows(
            """
            WITH target AS (
                SELECT m.sender, m.body, m.version, m.deleted FROM messages m
                WHERE m.conversation_id = \(id) AND m.seq = \(seq)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(reporter.rawValue))
            ), filed AS (
                INSERT INTO reports (reporter, conversation_id, seq, reason, note, message_sender, message_body, message_version)
                SELECT \(reporter.rawValue), \(id), \(seq), \(reason.rawValue), \(note), sender, body, version
                FROM target WHERE NOT deleted
                ON CONFLICT (reporter, conversation_id, seq) WHERE seq IS NOT NULL DO NOTHING
                RETURNING id, reason, note, status, created_at
            )
            SELECT EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(reporter.rawValue)),
                   (SELECT deleted FROM target),
                   f.id, f.reason, f.note, f.status, f.created_at
            FROM (SELECT) AS one LEFT JOIN filed f ON true
            """,
            writes: true, as: .reports)
        guard let row = rows.first else { throw MalformedRow() }
        let (isMember, deleted, filedID, reasonText, filedNote, status, at) = try row.decode(
            (Bool, Bool?, UUID?, String?, String?, String?, Date?).self)
        guard isMember else { throw StoreError.conversationNotFound }
        guard let deleted else { throw StoreError.messageNotFound }
        if let filedID, let reasonText, let status, let at {
            let report = Report(
                id: filedID, conversationId: id, seq: seq, userId: nil,
                reason: ReportReason(rawValue: reasonText) ?? .other, note: filedNote, status: ReportStatus(rawValue: status) ?? .open, createdAt: at)
            return (report, true)
        }
        if let earlier = try await earlierReport(by: reporter, conversation: id, seq: seq, user: nil) {
            return (earlier, false)
        }
        if deleted { throw StoreError.messageDeleted }
        throw MalformedRow()
    }

    /// Files `reporter`'s report of `user`, whom the reporter must share a
    /// conversation with. Reporting the same user again answers the first
    /// report (`created` false).
    public func report(
        user: UserID, by reporter: UserID, reason: ReportReason, note: String?
    ) async throws -> (report: Report, created: Bool) {
        let rows = try await rows(
            """
            WITH seen AS (
                SELECT 1 FROM members a JOIN members b ON b.conversation_id = a.conversation_id
                WHERE a.user_id = \(reporter.rawValue) AND b.user_id = \(user.rawValue) LIMIT 1
            ), filed AS (
                INSERT INTO reports (reporter, user_id, reason, note)
                SELECT \(reporter.rawValue), \(user.rawValue), \(reason.rawValue), \(note) WHERE EXISTS (SELECT 1 FROM seen)
                ON CONFLICT (reporter, user_id) WHERE user_id IS NOT NULL DO NOTHING
                RETURNING id, reason, note, status, created_at
            )
            SELECT EXISTS (SELECT 1 FROM seen), f.id, f.reason, f.note, f.status, f.created_at
            FROM (SELECT) AS one LEFT JOIN filed f ON true
            """,
            writes: true, as: .reports)
        guard let row = rows.first else { throw MalformedRow() }
        let (seen, filedID, reasonText, filedNote, status, at) = try row.decode(
            (Bool, UUID?, String?, String?, String?, Date?).self)
        if let filedID, let reasonText, let status, let at {
            let report = Report(
                id: filedID, conversationId: nil, seq: nil, userId: user.rawValue,
                reason: ReportReason(rawValue: reasonText) ?? .other, note: filedNote, status: ReportStatus(rawValue: status) ?? .open, createdAt: at)
            return (report, true)
        }
        if let earlier = try await earlierReport(by: reporter, conversation: nil, seq: nil, user: user) {
            return (earlier, false)
        }
        guard seen else { throw StoreError.reportedUserNotFound }
        throw MalformedRow()
    }

    private func earlierReport(by reporter: UserID, conversation: UUID?, seq: Int64?, user: UserID?) async throws
        -> Report?
    {
        let rows = try await rows(
            """
            SELECT \(unescaped: Self.reportColumns) FROM reports r
            WHERE r.reporter = \(reporter.rawValue)
              AND r.conversation_id IS NOT DISTINCT FROM \(conversation) AND r.seq IS NOT DISTINCT FROM \(seq)
              AND r.user_id IS NOT DISTINCT FROM \(user?.rawValue)
            """,
            writes: false, as: .reports)
        guard let row = rows.first else { return nil }
        var reader = RowReader(row)
        return try Self.decodeReport(&reader)
    }

    /// A report's columns (of `reports r`), in the order `decodeReport` reads them.
    static let reportColumns = "r.id, r.conversation_id, r.seq, r.user_id, r.reason, r.note, r.status, r.created_at"

    /// The report in the next columns of `reader` (`reportColumns`).
    static func decodeReport(_ reader: inout RowReader) throws -> Report {
        Report(
            id: try reader.required(UUID.self), conversationId: try reader.next(UUID.self), seq: try reader.next(Int64.self),
            userId: try reader.next(String.self),
            reason: ReportReason(rawValue: try reader.required(String.self)) ?? .other, note: try reader.next(String.self),
            status: ReportStatus(rawValue: try reader.required(String.self)) ?? .open,
            createdAt: try reader.required(Date.self))
    }

    /// What a report recorded of its message, as it was reported: for the
    /// operator (and the tests that show it outlives edits and deletions).
    public func reportedMessage(_ report: UUID) async throws -> (sender: String, body: String, version: Int64)? {
        let rows = try await rows(
            "SELECT message_sender, message_body, message_version FROM reports WHERE id = \(report)",
            writes: false, as: .reports)
        guard let (sender, body, version) = try rows.first?.decode((String?, String?, Int64?).self),
            let sender, let body, let version
        else { return nil }
        return (sender, body, version)
    }
}

extension ScrollbackStore {
    /// Reports by id, as `report.created` events carry them.
    public func reportsForEvents(_ ids: [UUID]) async throws -> [UUID: ReportEventData] {
        let rows = try await rows(
            """
            SELECT id, reporter, reason, note, conversation_id, seq, user_id, message_sender, message_body, message_version
            FROM reports WHERE id = ANY(\(ids))
            """,
            writes: false, as: .reports)
        var reports: [UUID: ReportEventData] = [:]
        for row in rows {
            let (id, reporter, reason, note, conversation, seq, user, sender, body, version) = try row.decode(
                (UUID, String, String, String?, UUID?, Int64?, String?, String?, String?, Int64?).self)
            let message = ReportedMessage(sender: sender, body: body, version: version)
            reports[id] = ReportEventData(
                id: id, reporter: reporter, reason: ReportReason(rawValue: reason) ?? .other, note: note,
                conversationId: conversation, seq: seq, userId: user, message: message)
        }
        return reports
    }
}
