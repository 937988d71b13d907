import Foundation
import ScrollbackModels

/// The operator's calls, for an app's own Swift backend holding a server
/// token (`scrollback token --server`): acting on behalf of any user, system
/// messages, the moderation queue and the audit log. Every call made with a
/// server token is in the audit log. Not for apps: a server token must never
/// reach a device.
extension ScrollbackClient {
    /// A copy of this client (made with a server token) whose user routes act
    /// for `user`, with `user`'s rights: `client.onBehalf(of: "buyer")
    /// .distinctConversation(with: ["seller"])` opens the buyer's
    /// conversation with the seller.
    public func onBehalf(of user: String) -> ScrollbackClient {
        var copy = self
        copy.onBehalfOf = user
        return copy
    }

    /// Posts a system message in conversation `id`: no user sent it
    /// (`Message.isSystem`), it takes the next seq, counts as unread for
    /// every member and no member can edit it. Retried with the same
    /// `clientId` while the answer is missing, so it is stored once.
    public func sendSystemMessage(_ body: String, to id: UUID, clientId: String? = nil) async throws(ScrollbackError)
        -> SendResult
    {
        let request = SystemMessageRequest(body: body, clientId: clientId ?? UUID().uuidString.lowercased())
        let reply = try await retrying { () async throws(ScrollbackError) in
            try await self.exchange(.POST, "/v1/admin/conversations/\(id.wire)/messages", body: request)
        }
        let envelope: MessageEnvelope = try Self.decode(reply.body)
        return SendResult(message: envelope.message, replayed: reply.status == 200)
    }

    /// The moderation queue: reports in `status`, newest first; pass the
    /// previous page's `next` as `before`.
    public func moderationReports(status: ReportStatus = .open, limit: Int? = nil, before: String? = nil)
        async throws(ScrollbackError) -> ModerationReportPage
    {
        try await call(
            .GET, "/v1/admin/reports",
            query: [("status", status.rawValue), ("limit", limit.map(String.init)), ("before", before)])
    }

    /// One report, with the message as it was reported and its resolution.
    public func moderationReport(_ id: UUID) async throws(ScrollbackError) -> ModerationReport {
        try await call(.GET, "/v1/admin/reports/\(id.wire)")
    }

    /// Resolves report `id` with `action`, applied with the owner's rights
    /// (`conversation`: where to remove or ban a reported user). Safe to
    /// retry: the same action again answers the same resolution.
    @discardableResult
    public func resolveReport(
        _ id: UUID, action: ModerationAction, note: String? = nil, conversation: UUID? = nil
    ) async throws(ScrollbackError) -> ModerationReport {
        let request = ResolveReportRequest(action: action, note: note, conversationId: conversation)
        return try await retrying { () async throws(ScrollbackError) in
            try await self.call(.POST, "/v1/admin/reports/\(id.wire)/resolve", body: request)
        }
    }

    /// The calls made with server tokens, newest first; pass the previous
    /// page's `next` as `before`.
    public func auditLog(limit: Int? = nil, before: String? = nil) async throws(ScrollbackError) -> AuditPage {
        try await call(.GET, "/v1/admin/audit", query: [("limit", limit.map(String.init)), ("before", before)])
    }
}
