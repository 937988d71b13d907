import Foundation

// The operator's API (`/v1/admin/...`, server tokens only): system
// messages, the moderation queue and the audit log.

/// Where a report stands: `open` until the operator resolves it.
public enum ReportStatus: String, Codable, Sendable, CaseIterable, Hashable {
    case open
    case resolved
}

/// What the operator does about a report. `delete_message` needs a report
/// of a message; `remove_user` and `ban_user` act on the message's sender
/// in its conversation, or on a reported user in the `conversation_id` the
/// resolution names.
public enum ModerationAction: String, Codable, Sendable, CaseIterable, Hashable {
    case none
    case deleteMessage = "delete_message"
    case removeUser = "remove_user"
    case banUser = "ban_user"
}

/// `POST /v1/admin/conversations/{id}/messages`: a system message.
public struct SystemMessageRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case body
        case clientId = "client_id"
    }

    public var body: String
    /// Idempotency, as on a member's send: the same `client_id` again
    /// answers the message stored the first time.
    public var clientId: String?

    public init(body: String, clientId: String? = nil) {
        self.body = body
        self.clientId = clientId
    }
}

/// `POST /v1/admin/reports/{id}/resolve`. `action` is kept as sent, so
/// that another word is refused with the list.
public struct ResolveReportRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case action
        case note
        case conversationId = "conversation_id"
    }

    public var action: String
    public var note: String?
    /// For `remove_user` or `ban_user` on a report of a user: the
    /// conversation to remove or ban them from.
    public var conversationId: UUID?

    public init(action: ModerationAction, note: String? = nil, conversationId: UUID? = nil) {
        self.action = action.rawValue
        self.note = note
        self.conversationId = conversationId
    }
}

/// A reported message as it was when reported, whatever happened to it since.
public struct ReportedMessage: Codable, Sendable, Hashable {
    public var sender: String
    public var body: String
    public var version: Int64

    public init(sender: String, body: String, version: Int64) {
        self.sender = sender
        self.body = body
        self.version = version
    }
}

/// How the operator resolved a report.
public struct ReportResolution: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case action
        case note
        case conversationId = "conversation_id"
        case resolvedBy = "resolved_by"
        case resolvedAt = "resolved_at"
    }

    public var action: ModerationAction
    public var note: String?
    /// The conversation the action applied in; nil for `none`.
    public var conversationId: UUID?
    /// The server token's `sub`.
    public var resolvedBy: String
    public var resolvedAt: Date

    public init(action: ModerationAction, note: String?, conversationId: UUID?, resolvedBy: String, resolvedAt: Date) {
        self.action = action
        self.note = note
        self.conversationId = conversationId
        self.resolvedBy = resolvedBy
        self.resolvedAt = resolvedAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(action, forKey: .action)
        try container.encode(note, forKey: .note)
        try container.encode(conversationId?.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(resolvedBy, forKey: .resolvedBy)
        try container.encode(resolvedAt, forKey: .resolvedAt)
    }
}

/// A report as the moderation queue lists it: the report, who filed it,
/// the message as it was reported, and its resolution once resolved.
public struct ModerationReport: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case report
        case reporter
        case message
        case resolution
    }

    public var report: Report
    public var reporter: String
    /// For a report of a message.
    public var message: ReportedMessage?
    public var resolution: ReportResolution?

    public init(report: Report, reporter: String, message: ReportedMessage?, resolution: ReportResolution?) {
        self.report = report
        self.reporter = reporter
        self.message = message
        self.resolution = resolution
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(report, forKey: .report)
        try container.encode(reporter, forKey: .reporter)
        try container.encode(message, forKey: .message)
        try container.encode(resolution, forKey: .resolution)
    }
}

/// `GET /v1/admin/reports`: newest first.
public struct ModerationReportPage: Codable, Sendable, Equatable {
    public var reports: [ModerationReport]
    /// Opaque; pass it back as `before` for the next (older) page. `nil` on
    /// the last page.
    public var next: String?

    public init(reports: [ModerationReport], next: String?) {
        self.reports = reports
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(reports, forKey: .reports)
        try container.encode(next, forKey: .next)
    }
}

/// One call made with a server token.
public struct AuditEntry: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case id
        case at
        case actor
        case onBehalfOf = "on_behalf_of"
        case method
        case path
        case status
        case detail
    }

    /// Increasing: a newer call has a larger id.
    public var id: Int64
    public var at: Date
    /// The server token's `sub`.
    public var actor: String
    /// The user a user route was called for (`On-Behalf-Of`).
    public var onBehalfOf: String?
    public var method: String
    public var path: String
    /// The answer's status; nil while the call runs, or if the instance
    /// stopped during it.
    public var status: Int?
    /// What the call did, where the route says more (a resolution's action).
    public var detail: [String: String]?

    public init(
        id: Int64, at: Date, actor: String, onBehalfOf: String?, method: String, path: String, status: Int?,
        detail: [String: String]?
    ) {
        self.id = id
        self.at = at
        self.actor = actor
        self.onBehalfOf = onBehalfOf
        self.method = method
        self.path = path
        self.status = status
        self.detail = detail
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(at, forKey: .at)
        try container.encode(actor, forKey: .actor)
        try container.encode(onBehalfOf, forKey: .onBehalfOf)
        try container.encode(method, forKey: .method)
        try container.encode(path, forKey: .path)
        try container.encode(status, forKey: .status)
        try container.encode(detail, forKey: .detail)
    }
}

/// `GET /v1/admin/audit`: newest first.
public struct AuditPage: Codable, Sendable, Equatable {
    public var entries: [AuditEntry]
    /// Opaque; pass it back as `before` for the next (older) page. `nil` on
    /// the last page.
    public var next: String?

    public init(entries: [AuditEntry], next: String?) {
        self.entries = entries
        self.next = next
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(entries, forKey: .entries)
        try container.encode(next, forKey: .next)
    }
}
