import Foundation

/// One event as a webhook receives it: the body of each POST.
///
/// `id` is the same on every attempt of the event (receivers drop
/// repeats by it); events of one conversation arrive in the order they
/// happened (`version` order for the versioned ones). `data` is the wire
/// object the API returns for what the event is about, as stored when the
/// event is delivered: a message deleted since has no body.
public struct WebhookEvent: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, type, version, seq, data
        case createdAt = "created_at"
        case conversationId = "conversation_id"
    }

    public var id: String
    public var type: EventType
    public var createdAt: Date
    public var conversationId: UUID
    /// The conversation's version the change took (messages and their
    /// reactions, and new conversations); nil for members and read markers.
    public var version: Int64?
    /// The message's seq, or the read marker's.
    public var seq: Int64?
    public var data: EventData

    public init(
        id: String, type: EventType, createdAt: Date, conversationId: UUID, version: Int64?, seq: Int64?,
        data: EventData
    ) {
        self.id = id
        self.type = type
        self.createdAt = createdAt
        self.conversationId = conversationId
        self.version = version
        self.seq = seq
        self.data = data
    }

    public enum EventType: String, Codable, Sendable, CaseIterable {
        case messageCreated = "message.created"
        case messageEdited = "message.edited"
        case messageDeleted = "message.deleted"
        case reactionChanged = "reaction.changed"
        case memberAdded = "member.added"
        case memberRemoved = "member.removed"
        case memberUpdated = "member.updated"
        case readMoved = "read.moved"
        case conversationCreated = "conversation.created"
        case reportCreated = "report.created"
        case userUpdated = "user.updated"
    }

    /// What an event is about.
    public enum EventData: Sendable, Equatable {
        /// `message.*` and `reaction.changed`: the message (every `me` false).
        case message(Message)
        /// `member.added`, `member.removed`, `member.updated`, `read.moved`.
        case member(MemberEventData)
        /// `conversation.created`.
        case conversation(ConversationEventData)
        /// `report.created`.
        case report(ReportEventData)
        /// `user.updated`: the profile as it shows when the event is
        /// delivered (its `version` is the event's); of no conversation, so
        /// `conversation_id` is the nil UUID.
        case user(UserProfile)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        type = try container.decode(EventType.self, forKey: .type)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        conversationId = try container.decode(UUID.self, forKey: .conversationId)
        version = try container.decodeIfPresent(Int64.self, forKey: .version)
        seq = try container.decodeIfPresent(Int64.self, forKey: .seq)
        switch type {
        case .messageCreated, .messageEdited, .messageDeleted, .reactionChanged:
            data = .message(try container.decode(Message.self, forKey: .data))
        case .memberAdded, .memberRemoved, .memberUpdated, .readMoved:
            data = .member(try container.decode(MemberEventData.self, forKey: .data))
        case .conversationCreated:
            data = .conversation(try container.decode(ConversationEventData.self, forKey: .data))
        case .reportCreated:
            data = .report(try container.decode(ReportEventData.self, forKey: .data))
        case .userUpdated:
            data = .user(try container.decode(UserProfile.self, forKey: .data))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(createdAt, forKey: .createdAt)
        // Lowercase, as every id the API writes.
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(version, forKey: .version)
        try container.encode(seq, forKey: .seq)
        switch data {
        case .message(let message): try container.encode(message, forKey: .data)
        case .member(let member): try container.encode(member, forKey: .data)
        case .conversation(let conversation): try container.encode(conversation, forKey: .data)
        case .report(let report): try container.encode(report, forKey: .data)
        case .user(let profile): try container.encode(profile, forKey: .data)
        }
    }
}

/// The member an event is about; `read_seq` on `read.moved`.
public struct MemberEventData: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case readSeq = "read_seq"
        case role
        case data
    }

    public var userId: String
    public var readSeq: Int64?
    /// `member.updated`: the member's new role.
    public var role: MemberRole?
    /// `member.updated`: the member's data as stored when the event is
    /// delivered; absent when none.
    public var data: CustomData?

    public init(userId: String, readSeq: Int64? = nil, role: MemberRole? = nil, data: CustomData? = nil) {
        self.userId = userId
        self.readSeq = readSeq
        self.role = role
        self.data = data
    }
}

/// A report as the operator's systems receive it (`report.created`): who
/// filed it, why, and what: a message as it was reported, or a user. The
/// event's `conversation_id` is the nil uuid for a report of a user.
public struct ReportEventData: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, reporter, reason, note, seq
        case conversationId = "conversation_id"
        case userId = "user_id"
        case message
    }

    /// The message as it was reported.
    public typealias ReportedMessage = ScrollbackModels.ReportedMessage

    public var id: UUID
    public var reporter: String
    public var reason: ReportReason
    public var note: String?
    public var conversationId: UUID?
    public var seq: Int64?
    public var userId: String?
    public var message: ReportedMessage?

    public init(
        id: UUID, reporter: String, reason: ReportReason, note: String?, conversationId: UUID?, seq: Int64?,
        userId: String?, message: ReportedMessage?
    ) {
        self.id = id
        self.reporter = reporter
        self.reason = reason
        self.note = note
        self.conversationId = conversationId
        self.seq = seq
        self.userId = userId
        self.message = message
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(reporter, forKey: .reporter)
        try container.encode(reason, forKey: .reason)
        try container.encode(note, forKey: .note)
        try container.encode(conversationId?.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(userId, forKey: .userId)
        try container.encode(message, forKey: .message)
    }
}

/// A new conversation: who created it, with what title and members (as
/// stored when the event is delivered).
public struct ConversationEventData: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, title, members, description, data
        case createdBy = "created_by"
        case createdAt = "created_at"
    }

    public var id: UUID
    public var title: String?
    public var createdBy: String
    public var createdAt: Date
    public var members: [String]
    /// As in `Conversation`: absent when none.
    public var description: String?
    public var data: CustomData?

    public init(
        id: UUID, title: String?, createdBy: String, createdAt: Date, members: [String], description: String? = nil,
        data: CustomData? = nil
    ) {
        self.id = id
        self.title = title
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.members = members
        self.description = description
        self.data = data
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(members, forKey: .members)
        try container.encodeIfPresent(description, forKey: .description)
        try container.encodeIfPresent(data, forKey: .data)
    }
}

/// One POST to the push gateway (`SCROLLBACK_PUSH_GATEWAY_URL`): what to
/// show one user on their devices, with the counts their badge should show.
public struct PushNotification: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case id, type, devices, seq, sender, excerpt, mention, attachments, counts
        case eventId = "event_id"
        case userId = "user_id"
        case conversationId = "conversation_id"
    }

    /// `message`: a new message to show; `counts`: silent, only the badge
    /// (the user read on another device).
    public enum Kind: String, Codable, Sendable {
        case message
        case counts
    }

    /// Unique per user and event, the same on every attempt.
    public var id: String
    public var eventId: String
    public var type: Kind
    public var userId: String
    public var devices: [PushDevice]
    public var conversationId: UUID
    /// The new message's seq (`message`), or the read marker's (`counts`).
    public var seq: Int64?
    public var sender: String?
    /// The start of the body; nil with `SCROLLBACK_PUSH_CONTENT=none`.
    public var excerpt: String?
    /// The message mentions the user.
    public var mention: Bool
    /// How many attachments the message carries.
    public var attachments: Int
    public var counts: UnreadCounts

    public init(
        id: String, eventId: String, type: Kind, userId: String, devices: [PushDevice], conversationId: UUID,
        seq: Int64?, sender: String?, excerpt: String?, mention: Bool, attachments: Int, counts: UnreadCounts
    ) {
        self.id = id
        self.eventId = eventId
        self.type = type
        self.userId = userId
        self.devices = devices
        self.conversationId = conversationId
        self.seq = seq
        self.sender = sender
        self.excerpt = excerpt
        self.mention = mention
        self.attachments = attachments
        self.counts = counts
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(eventId, forKey: .eventId)
        try container.encode(type, forKey: .type)
        try container.encode(userId, forKey: .userId)
        try container.encode(devices, forKey: .devices)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(sender, forKey: .sender)
        try container.encode(excerpt, forKey: .excerpt)
        try container.encode(mention, forKey: .mention)
        try container.encode(attachments, forKey: .attachments)
        try container.encode(counts, forKey: .counts)
    }
}

/// A device a push goes to.
public struct PushDevice: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case deviceId = "device_id"
        case platform, token
        case appId = "app_id"
        case environment
    }

    public var deviceId: String
    public var platform: DevicePlatform
    public var token: String
    /// As the device registered them (see `Device`); absent when none.
    public var appId: String?
    public var environment: DeviceEnvironment?

    public init(
        deviceId: String, platform: DevicePlatform, token: String, appId: String? = nil,
        environment: DeviceEnvironment? = nil
    ) {
        self.deviceId = deviceId
        self.platform = platform
        self.token = token
        self.appId = appId
        self.environment = environment
    }
}

/// The user's unread messages and unread conversations, as their inbox
/// counts them (every conversation, muted ones too).
public struct UnreadCounts: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case unreadMessages = "unread_messages"
        case unreadConversations = "unread_conversations"
    }

    public var unreadMessages: Int64
    public var unreadConversations: Int64

    public init(unreadMessages: Int64, unreadConversations: Int64) {
        self.unreadMessages = unreadMessages
        self.unreadConversations = unreadConversations
    }
}

/// What the push gateway may answer (2xx): tokens its services refused as
/// no longer valid, whose devices Scrollback then forgets.
public struct PushGatewayAnswer: Codable, Sendable, Equatable {
    public var rejected: [String]

    public init(rejected: [String]) {
        self.rejected = rejected
    }
}
