import Foundation
import PostgresNIO
import ScrollbackModels

/// The operator's side (`sql/020_operator.sql`): the audit log of server
/// calls and the moderation queue. System messages are sends of
/// `UserID.system` (`send(to:from:body:clientID:)`).
extension ScrollbackStore {
    // MARK: - The audit log

    /// Records a server call before it acts; `finishAudit` adds how it ended.
    public func beginAudit(actor: String, onBehalfOf: UserID?, method: String, path: String) async throws -> Int64 {
        let rows = try await rows(
            """
            INSERT INTO audit_log (actor, on_behalf_of, method, path)
            VALUES (\(actor), \(onBehalfOf?.rawValue), \(method), \(path)) RETURNING id
            """,
            writes: true, as: .audit)
        guard let id = try rows.first?.decode(Int64.self) else { throw MalformedRow() }
        return id
    }

    /// The status a recorded call answered with, and what its route adds.
    public func finishAudit(_ id: Int64, status: Int, detail: [String: String]) async throws {
        let detailJSON = detail.isEmpty ? nil : String(decoding: try JSONEncoder().encode(detail), as: UTF8.self)
        _ = try await rows(
            "UPDATE audit_log SET status = \(status), detail = \(detailJSON)::jsonb WHERE id = \(id)",
            writes: true, as: .audit)
    }

    /// Server calls, newest first, from before entry `before` (nil: the newest).
    public func auditLog(before: Int64?, limit: Int) async throws -> (entries: [AuditEntry], next: Int64?) {
        let rows = try await rows(
            """
            SELECT id, at, actor, on_behalf_of, method, path, status, detail::text FROM audit_log
            WHERE id < \(before ?? Int64.max)
            ORDER BY id DESC LIMIT \(limit + 1)
            """,
            writes: false, as: .audit)
        var entries: [AuditEntry] = []
        for row in rows.prefix(limit) {
            let (id, at, actor, onBehalfOf, method, path, status, detail) = try row.decode(
                (Int64, Date, String, String?, String, String, Int?, String?).self)
            let details = try detail.map { try JSONDecoder().decode([String: String].self, from: Data($0.utf8)) }
            entries.append(
                AuditEntry(
                    id: id, at: at, actor: actor, onBehalfOf: onBehalfOf, method: method, path: path, status: status,
                    detail: details))
        }
        return (entries, rows.count > limit ? entries.last?.id : nil)
    }

    // MARK: - The moderation queue

    /// Reports in `status`, newest first, from after report `after` (nil:
    /// the newest), each with the message as it was reported.
    public func moderationReports(status: ReportStatus, after: UUID?, limit: Int) async throws
        -> (reports: [ModerationReport], next: UUID?)
    {
        let rows = try await rows(
            """
            SELECT \(unescaped: Self.moderationColumns) FROM reports r
            WHERE r.status = \(status.rawValue)
              AND (\(after)::uuid IS NULL
                   OR (r.created_at, r.id) < (SELECT created_at, id FROM reports WHERE id = \(after)))
            ORDER BY r.created_at DESC, r.id DESC LIMIT \(limit + 1)
            """,
            writes: false, as: .moderation)
        let reports = try rows.prefix(limit).map(Self.moderationReport)
        return (reports, rows.count > limit ? reports.last?.report.id : nil)
    }

    /// One report as the queue lists it.
    public func moderationReport(_ id: UUID) async throws -> ModerationReport {
        let rows = try await rows(
            "SELECT \(unescaped: Self.moderationColumns) FROM reports r WHERE r.id = \(id)",
            writes: false, as: .moderation)
        guard let row = rows.first else { throw StoreError.reportNotFound }
        return try Self.moderationReport(row)
    }

    /// Resolves report `id` with `action`, applying it as the system (with
    /// the owner's rights in the conversation): deleting the reported
    /// message, or removing or banning its sender (a reported user, from
    /// `conversation`). The first resolution claims the report, then its
    /// action is applied, then the report is marked resolved. Resolving
    /// again with the same action answers the resolution (applying it again
    /// if the first call stopped before marking it); with another,
    /// `reportResolvedOtherwise`, and nothing is applied.
    public func resolveReport(
        _ id: UUID, action: ModerationAction, note: String?, conversation: UUID?, by actor: String
    ) async throws -> ModerationReport {
        let current = try await moderationReport(id)
        let report = current.report
        // What the action acts on: nothing, the reported message, or a member.
        enum Target {
            case message(conversation: UUID, seq: Int64)
            case member(UserID, in: UUID)
        }
        let target: Target?
        switch (action, report.conversationId, report.seq, report.userId) {
        case (.none, _, _, _):
            target = nil
        case (.deleteMessage, let reported?, let seq?, _):
            target = .message(conversation: reported, seq: seq)
        case (.deleteMessage, _, _, _):
            throw StoreError.resolutionNotApplicable(.noMessage)
        case (_, let reported?, _, _):
            guard let sender = current.message?.sender, !sender.isEmpty else {
                throw StoreError.resolutionNotApplicable(.systemSender)
            }
            target = .member(UserID(rawValue: sender), in: reported)
        case (_, nil, _, let user?):
            guard let conversation else { throw StoreError.resolutionNotApplicable(.needsConversation) }
            target = .member(UserID(rawValue: user), in: conversation)
        case (_, nil, _, nil):
            throw MalformedRow()
        }
        let targetConversation: UUID? =
            switch target {
            case .message(let conversation, _), .member(_, let conversation): conversation
            case nil: nil
            }
        // The first resolution claims the report; only the claimed action is
        // ever applied, so moderators resolving it at once with different
        // actions cannot both act. (Two statements: the read after the
        // claim sees a claim that committed while this one waited.)
        _ = try await rows(
            """
            UPDATE reports
            SET action = \(action.rawValue), action_conversation_id = \(targetConversation), resolved_by = \(actor),
                resolution_note = \(note)
            WHERE id = \(id) AND action IS NULL
            """,
            writes: true, as: .moderation)
        let claims = try await rows(
            "SELECT action, action_conversation_id FROM reports WHERE id = \(id)", writes: false, as: .moderation)
        guard let (claimed, claimedConversation) = try claims.first?.decode((String?, UUID?).self) else {
            throw StoreError.reportNotFound
        }
        guard claimed == action.rawValue, claimedConversation == targetConversation else {
            throw StoreError.reportResolvedOtherwise
        }
        // Each action changes nothing when applied again: a retry, or a
        // resolution that stopped before it was marked, applies it as is.
        if current.resolution == nil {
            switch (action, target) {
            case (.deleteMessage, .message(let conversation, let seq)?):
                _ = try await delete(seq, in: conversation, by: .system)
            case (.removeUser, .member(let user, let conversation)?):
                do {
                    try await removeMember(user, from: conversation, by: .system)
                } catch StoreError.memberNotFound {
                    // Removed already (by this call's first attempt, or by anyone).
                }
            case (.banUser, .member(let user, let conversation)?):
                try await removeMember(user, from: conversation, by: .system, ban: true)
            default:
                break  // `none`
            }
        }
        _ = try await rows(
            "UPDATE reports SET status = 'resolved', resolved_at = now() WHERE id = \(id) AND status = 'open'",
            writes: true, as: .moderation)
        return try await moderationReport(id)
    }

    private static let moderationColumns = """
        \(reportColumns), r.reporter, r.message_sender, r.message_body, r.message_version,
        r.action, r.resolution_note, r.action_conversation_id, r.resolved_by, r.resolved_at
        """

    private static func moderationReport(_ row: PostgresRow) throws -> ModerationReport {
        var reader = RowReader(row)
        let report = try decodeReport(&reader)
        let reporter = try reader.required(String.self)
        let message = ReportedMessage(
            sender: try reader.next(String.self), body: try reader.next(String.self), version: try reader.next(Int64.self))
        let (action, note, conversation, by, at) = (
            try reader.next(String.self), try reader.next(String.self), try reader.next(UUID.self),
            try reader.next(String.self), try reader.next(Date.self)
        )
        var resolution: ReportResolution?
        if let action = action.flatMap(ModerationAction.init(rawValue:)), let by, let at {
            resolution = ReportResolution(action: action, note: note, conversationId: conversation, resolvedBy: by, resolvedAt: at)
        }
        return ModerationReport(report: report, reporter: reporter, message: message, resolution: resolution)
    }
}
