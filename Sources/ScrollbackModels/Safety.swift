import Foundation

/// A user the caller blocked (`PUT /v1/blocks/{user_id}`).
public struct BlockedUser: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case createdAt = "created_at"
    }

    public var userId: String
    public var createdAt: Date

    public init(userId: String, createdAt: Date) {
        self.userId = userId
        self.createdAt = createdAt
    }
}

/// `GET /v1/blocks`: the users the caller blocked, by user id.
public struct BlockList: Codable, Sendable, Hashable {
    public var blocks: [BlockedUser]

    public init(blocks: [BlockedUser]) {
        self.blocks = blocks
    }
}

/// Why something is reported.
public enum ReportReason: String, Codable, Sendable, CaseIterable, Hashable {
    case spam
    case harassment
    case hate
    case violence
    case sexual
    case selfHarm = "self_harm"
    case other
}

/// `POST /v1/reports`: a message (`conversation_id` and `seq`) or a user
/// (`user_id`), a `reason` (one of `ReportReason`, kept as sent so that
/// another is refused with the list) and an optional note.
public struct CreateReportRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case seq
        case userId = "user_id"
        case reason
        case note
    }

    public var conversationId: UUID?
    public var seq: Int64?
    public var userId: String?
    public var reason: String
    public var note: String?

    /// A report of message `seq` of conversation `conversationId`.
    public init(conversationId: UUID, seq: Int64, reason: ReportReason, note: String? = nil) {
        self.conversationId = conversationId
        self.seq = seq
        self.reason = reason.rawValue
        self.note = note
    }

    /// A report of user `userId`.
    public init(userId: String, reason: ReportReason, note: String? = nil) {
        self.userId = userId
        self.reason = reason.rawValue
        self.note = note
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(conversationId?.uuidString.lowercased(), forKey: .conversationId)
        try container.encodeIfPresent(seq, forKey: .seq)
        try container.encodeIfPresent(userId, forKey: .userId)
        try container.encode(reason, forKey: .reason)
        try container.encodeIfPresent(note, forKey: .note)
    }
}

/// A report as its reporter sees it.
public struct Report: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case id
        case conversationId = "conversation_id"
        case seq
        case userId = "user_id"
        case reason
        case note
        case status
        case createdAt = "created_at"
    }

    public var id: UUID
    public var conversationId: UUID?
    public var seq: Int64?
    public var userId: String?
    public var reason: ReportReason
    public var note: String?
    /// `open` until the operator resolves it (`POST /v1/admin/reports/{id}/resolve`).
    public var status: ReportStatus
    public var createdAt: Date

    public init(
        id: UUID, conversationId: UUID?, seq: Int64?, userId: String?, reason: ReportReason, note: String?,
        status: ReportStatus, createdAt: Date
    ) {
        self.id = id
        self.conversationId = conversationId
        self.seq = seq
        self.userId = userId
        self.reason = reason
        self.note = note
        self.status = status
        self.createdAt = createdAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(conversationId?.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(userId, forKey: .userId)
        try container.encode(reason, forKey: .reason)
        try container.encode(note, forKey: .note)
        try container.encode(status, forKey: .status)
        try container.encode(createdAt, forKey: .createdAt)
    }
}
