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

    /// The message a report kept, from its columns: nil for a report of a
    /// user (none of them), or a body an erasure took.
    public init?(sender: String?, body: String?, version: Int64?) {
        guard let sender, let body, let version else { return nil }
        self.init(sender: sender, body: body, version: version)
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

/// One line of a user's export (`GET /v1/admin/users/{user_id}/export`,
/// NDJSON): `{"type": "<type>", "<type>": {...}}`, the user first, then
/// their memberships (with read markers), messages, reactions, devices,
/// reports and blocks, and last `{"type": "end", "records": N}`: an export
/// without it was cut short.
public enum UserExportRecord: Codable, Sendable, Equatable {
    case user(ExportedUser)
    /// The picture the user uploaded as their avatar (after `user`, when
    /// they have one kept by this server): its bytes, not only its URL.
    case avatar(ExportedImage)
    case membership(ExportedMembership)
    case message(Message)
    case reaction(ExportedReaction)
    case device(ExportedDevice)
    case report(Report)
    case block(BlockedUser)
    /// The last line: the export is whole, with this many records before it.
    case end(records: Int)

    enum CodingKeys: String, CodingKey {
        case type, user, avatar, membership, message, reaction, device, report, block, records
    }

    public var type: String {
        switch self {
        case .user: "user"
        case .avatar: "avatar"
        case .membership: "membership"
        case .message: "message"
        case .reaction: "reaction"
        case .device: "device"
        case .report: "report"
        case .block: "block"
        case .end: "end"
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        switch self {
        case .user(let value): try container.encode(value, forKey: .user)
        case .avatar(let value): try container.encode(value, forKey: .avatar)
        case .membership(let value): try container.encode(value, forKey: .membership)
        case .message(let value): try container.encode(value, forKey: .message)
        case .reaction(let value): try container.encode(value, forKey: .reaction)
        case .device(let value): try container.encode(value, forKey: .device)
        case .report(let value): try container.encode(value, forKey: .report)
        case .block(let value): try container.encode(value, forKey: .block)
        case .end(let records): try container.encode(records, forKey: .records)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        switch try container.decode(String.self, forKey: .type) {
        case "user": self = .user(try container.decode(ExportedUser.self, forKey: .user))
        case "avatar": self = .avatar(try container.decode(ExportedImage.self, forKey: .avatar))
        case "membership": self = .membership(try container.decode(ExportedMembership.self, forKey: .membership))
        case "message": self = .message(try container.decode(Message.self, forKey: .message))
        case "reaction": self = .reaction(try container.decode(ExportedReaction.self, forKey: .reaction))
        case "device": self = .device(try container.decode(ExportedDevice.self, forKey: .device))
        case "report": self = .report(try container.decode(Report.self, forKey: .report))
        case "block": self = .block(try container.decode(BlockedUser.self, forKey: .block))
        case "end": self = .end(records: try container.decode(Int.self, forKey: .records))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: container, debugDescription: "unknown type \(other)")
        }
    }
}

/// A picture as an export holds it: its bytes (base64), their media type
/// and SHA-256 (lower-case hex), as the server checked and keeps them.
public struct ExportedImage: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case contentType = "content_type"
        case sha256
        case base64
    }

    public var contentType: String
    public var sha256: String
    public var base64: String

    public init(contentType: String, sha256: String, bytes: [UInt8]) {
        self.contentType = contentType
        self.sha256 = sha256
        base64 = Data(bytes).base64EncodedString()
    }

    /// The picture's bytes; nil when `base64` is not base64.
    public var bytes: [UInt8]? { Data(base64Encoded: base64).map(Array.init) }
}

public struct ExportedUser: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case id
        case createdAt = "created_at"
        case lastSeenAt = "last_seen_at"
        case displayName = "display_name"
        case avatar
        case data
        case providerName = "provider_name"
        case providerPicture = "provider_picture"
    }

    public var id: String
    /// When the user first called the service; nil for one who never did
    /// (others added them to conversations, or banned, blocked or reported
    /// them).
    public var createdAt: Date?
    public var lastSeenAt: Date?
    /// The profile as set by the user or the operator.
    public var displayName: String?
    public var avatar: ProfileImage?
    /// The app's own data about the user.
    public var data: CustomData?
    /// The identity provider's `name` and `picture` claims, as last taken from a token.
    public var providerName: String?
    public var providerPicture: String?

    public init(
        id: String, createdAt: Date?, lastSeenAt: Date?, displayName: String? = nil, avatar: ProfileImage? = nil,
        data: CustomData? = nil, providerName: String? = nil, providerPicture: String? = nil
    ) {
        self.id = id
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.displayName = displayName
        self.avatar = avatar
        self.data = data
        self.providerName = providerName
        self.providerPicture = providerPicture
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(lastSeenAt, forKey: .lastSeenAt)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(avatar, forKey: .avatar)
        try container.encode(data, forKey: .data)
        try container.encode(providerName, forKey: .providerName)
        try container.encode(providerPicture, forKey: .providerPicture)
    }
}

/// A conversation the user is in (`member`), or was in and left or was
/// removed from (`left`: nothing else is known of it).
public struct ExportedMembership: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case title
        case role
        case joinedAt = "joined_at"
        case readSeq = "read_seq"
        case left
    }

    public var conversationId: UUID
    public var title: String?
    public var role: MemberRole?
    public var joinedAt: Date?
    /// Their read marker.
    public var readSeq: Int64?
    public var left: Bool

    public init(conversationId: UUID, title: String?, role: MemberRole?, joinedAt: Date?, readSeq: Int64?, left: Bool) {
        self.conversationId = conversationId
        self.title = title
        self.role = role
        self.joinedAt = joinedAt
        self.readSeq = readSeq
        self.left = left
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(title, forKey: .title)
        try container.encode(role, forKey: .role)
        try container.encode(joinedAt, forKey: .joinedAt)
        try container.encode(readSeq, forKey: .readSeq)
        try container.encode(left, forKey: .left)
    }
}

public struct ExportedReaction: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case seq
        case emoji
        case createdAt = "created_at"
    }

    public var conversationId: UUID
    public var seq: Int64
    public var emoji: String
    public var createdAt: Date

    public init(conversationId: UUID, seq: Int64, emoji: String, createdAt: Date) {
        self.conversationId = conversationId
        self.seq = seq
        self.emoji = emoji
        self.createdAt = createdAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(emoji, forKey: .emoji)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// A device registered for push; its token is a credential and is left out.
public struct ExportedDevice: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case deviceId = "device_id"
        case platform
        case createdAt = "created_at"
    }

    public var deviceId: String
    public var platform: String
    public var createdAt: Date

    public init(deviceId: String, platform: String, createdAt: Date) {
        self.deviceId = deviceId
        self.platform = platform
        self.createdAt = createdAt
    }
}

/// `DELETE /v1/admin/users/{user_id}`: what the erasure removed.
public struct UserErasure: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case conversations
        case messages
        case reactions
        case devices
    }

    public var userId: String
    /// The conversations they were removed from.
    public var conversations: Int
    /// Their messages made erased tombstones.
    public var messages: Int
    public var reactions: Int
    public var devices: Int

    public init(userId: String, conversations: Int, messages: Int, reactions: Int, devices: Int) {
        self.userId = userId
        self.conversations = conversations
        self.messages = messages
        self.reactions = reactions
        self.devices = devices
    }
}

/// `PUT /v1/admin/conversations/{id}/retention`: `days` to keep messages (0:
/// forever), or null for the server's default (`SCROLLBACK_RETENTION_DAYS`).
public struct RetentionRequest: Codable, Sendable, Equatable {
    public var days: Int?

    public init(days: Int?) {
        self.days = days
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(days, forKey: .days)
    }
}

/// A conversation's retention, and the oldest seq it still stores.
public struct ConversationRetention: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case retentionDays = "retention_days"
        case firstSeq = "first_seq"
    }

    public var conversationId: UUID
    /// Nil: the server's default.
    public var retentionDays: Int?
    public var firstSeq: Int64

    public init(conversationId: UUID, retentionDays: Int?, firstSeq: Int64) {
        self.conversationId = conversationId
        self.retentionDays = retentionDays
        self.firstSeq = firstSeq
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(retentionDays, forKey: .retentionDays)
        try container.encode(firstSeq, forKey: .firstSeq)
    }
}

/// What `POST /v1/admin/users/{user_id}/revoke` answers: the user's tokens
/// issued before `revoked_before` (whole seconds) are refused from now on,
/// on every instance, and their sockets are closed with 4401.
public struct TokenRevocation: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case revokedBefore = "revoked_before"
    }

    public var userId: String
    public var revokedBefore: Date

    public init(userId: String, revokedBefore: Date) {
        self.userId = userId
        self.revokedBefore = revokedBefore
    }
}
