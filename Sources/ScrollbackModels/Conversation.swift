import Foundation

/// A conversation as the API returns it.
public struct Conversation: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case id
        case title
        case createdBy = "created_by"
        case createdAt = "created_at"
        case lastSeq = "last_seq"
        case members
        case readSeq = "read_seq"
        case unreadCount = "unread_count"
        case unreadMentions = "unread_mentions"
        case lastMessage = "last_message"
        case version
        case activity
        case muted
        case mutedUntil = "muted_until"
        case role
        case slowModeSeconds = "slow_mode_seconds"
        case firstSeq = "first_seq"
        case description
        case data
        case image
    }

    public var id: UUID
    public var title: String?
    /// What the conversation is about, set like the title; nil when none.
    public var description: String?
    /// The app's own data (`CustomData`); nil when none. The server never reads it.
    public var data: CustomData?
    /// The conversation's picture, set by its owner or an admin (uploaded:
    /// `url` is a path on this server) or the operator (a URL elsewhere);
    /// nil when none.
    public var image: ProfileImage?
    public var createdBy: String
    public var createdAt: Date
    /// The seq of the newest message (0 while the conversation is empty).
    public var lastSeq: Int64
    /// Member user ids, sorted.
    public var members: [String]
    /// The caller's read marker: every message up to this seq counts as read.
    public var readSeq: Int64
    /// Messages after the caller's marker, not sent by the caller, not deleted.
    public var unreadCount: Int64
    /// The caller's mentions after their marker (`@user` in a message of
    /// another member, see `GET /v1/mentions`), not deleted.
    public var unreadMentions: Int64
    /// The newest message (a preview for conversation lists); nil while empty.
    public var lastMessage: Message?
    /// The conversation's change count: every message stored, edited or
    /// deleted takes the next version (`GET .../changes?since_version=`).
    public var version: Int64
    /// Where the conversation stands in its members' lists: a larger value
    /// is more recent activity (its creation or its newest message). The
    /// conversation list and the inbox stream order by it.
    public var activity: Int64
    /// Whether the caller muted the conversation (no push for it) and
    /// until when (nil: until unmuted). A mute that ran out is false.
    public var muted: Bool
    public var mutedUntil: Date?
    /// The caller's role in the conversation (`GET .../members` has
    /// everyone's).
    public var role: MemberRole
    /// Slow mode: members (not owners or admins) may send one message per
    /// this many seconds; 0 is off.
    public var slowModeSeconds: Int
    /// The oldest seq the conversation still stores: 1, or past it once
    /// retention removed older messages (`MessagePage.firstSeq`).
    public var firstSeq: Int64

    public init(
        id: UUID, title: String?, createdBy: String, createdAt: Date, lastSeq: Int64, members: [String],
        readSeq: Int64 = 0, unreadCount: Int64 = 0, unreadMentions: Int64 = 0, lastMessage: Message? = nil,
        version: Int64 = 0, activity: Int64 = 0, muted: Bool = false, mutedUntil: Date? = nil,
        role: MemberRole = .member, slowModeSeconds: Int = 0, firstSeq: Int64 = 1, description: String? = nil,
        data: CustomData? = nil, image: ProfileImage? = nil
    ) {
        self.id = id
        self.title = title
        self.image = image
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.lastSeq = lastSeq
        self.members = members
        self.readSeq = readSeq
        self.unreadCount = unreadCount
        self.unreadMentions = unreadMentions
        self.lastMessage = lastMessage
        self.version = version
        self.activity = activity
        self.muted = muted
        self.mutedUntil = mutedUntil
        self.role = role
        self.slowModeSeconds = slowModeSeconds
        self.firstSeq = firstSeq
        self.description = description
        self.data = data
    }

    /// The app's own data as its own type; nil when the conversation has none.
    public func data<T: Decodable>(as type: T.Type) throws -> T? {
        try data?.decode(type)
    }

    /// `version`, `activity`, `unread_mentions` and `slow_mode_seconds` may
    /// be absent (servers before they existed): 0; `muted`: false; `role`:
    /// member; `first_seq`: 1.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        createdBy = try container.decode(String.self, forKey: .createdBy)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        lastSeq = try container.decode(Int64.self, forKey: .lastSeq)
        members = try container.decode([String].self, forKey: .members)
        readSeq = try container.decode(Int64.self, forKey: .readSeq)
        unreadCount = try container.decode(Int64.self, forKey: .unreadCount)
        unreadMentions = try container.decodeIfPresent(Int64.self, forKey: .unreadMentions) ?? 0
        lastMessage = try container.decodeIfPresent(Message.self, forKey: .lastMessage)
        version = try container.decodeIfPresent(Int64.self, forKey: .version) ?? 0
        activity = try container.decodeIfPresent(Int64.self, forKey: .activity) ?? 0
        muted = try container.decodeIfPresent(Bool.self, forKey: .muted) ?? false
        mutedUntil = try container.decodeIfPresent(Date.self, forKey: .mutedUntil)
        role = try container.decodeIfPresent(MemberRole.self, forKey: .role) ?? .member
        slowModeSeconds = try container.decodeIfPresent(Int.self, forKey: .slowModeSeconds) ?? 0
        firstSeq = try container.decodeIfPresent(Int64.self, forKey: .firstSeq) ?? 1
        description = try container.decodeIfPresent(String.self, forKey: .description)
        data = try container.decodeIfPresent(CustomData.self, forKey: .data)
        image = try container.decodeIfPresent(ProfileImage.self, forKey: .image)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        // Present only when set, as `write(to:)` writes them.
        try container.encodeIfPresent(description, forKey: .description)
        try container.encodeIfPresent(data, forKey: .data)
        try container.encodeIfPresent(image, forKey: .image)
        // Lowercase, as PostgreSQL and most clients spell UUIDs.
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(lastSeq, forKey: .lastSeq)
        try container.encode(members, forKey: .members)
        try container.encode(readSeq, forKey: .readSeq)
        try container.encode(unreadCount, forKey: .unreadCount)
        try container.encode(unreadMentions, forKey: .unreadMentions)
        try container.encode(lastMessage, forKey: .lastMessage)
        try container.encode(version, forKey: .version)
        try container.encode(activity, forKey: .activity)
        try container.encode(muted, forKey: .muted)
        try container.encode(mutedUntil, forKey: .mutedUntil)
        try container.encode(role, forKey: .role)
        try container.encode(slowModeSeconds, forKey: .slowModeSeconds)
        try container.encode(firstSeq, forKey: .firstSeq)
    }
}

/// One page of the caller's conversations, most recently active first.
public struct ConversationList: Codable, Sendable, Equatable {
    public var conversations: [Conversation]
    /// Opaque; pass it back as `cursor` for the next page. `nil` on the last page.
    public var nextCursor: String?
    /// True when, since the pass began (the page without a cursor), a
    /// conversation moved above the cursor (a message arrived in one not
    /// listed yet, or the caller joined one) or left the list: paging on would
    /// miss it, so restart from the top and merge by id. Always false on the
    /// first page.
    public var activityChanged: Bool
    /// The profile of each row's last sender and of the other member of
    /// each one-to-one conversation, once, by id.
    public var users: ProfileSet

    public init(
        conversations: [Conversation], nextCursor: String?, activityChanged: Bool = false,
        users: ProfileSet = ProfileSet()
    ) {
        self.conversations = conversations
        self.nextCursor = nextCursor
        self.activityChanged = activityChanged
        self.users = users
    }

    enum CodingKeys: String, CodingKey {
        case conversations
        case nextCursor = "next_cursor"
        case activityChanged = "activity_changed"
        case users
    }

    /// `activity_changed` and `users` may be absent (servers before them): false, none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        conversations = try container.decode([Conversation].self, forKey: .conversations)
        nextCursor = try container.decodeIfPresent(String.self, forKey: .nextCursor)
        activityChanged = try container.decodeIfPresent(Bool.self, forKey: .activityChanged) ?? false
        users = try container.decodeIfPresent(ProfileSet.self, forKey: .users) ?? ProfileSet()
    }

    // Encode `next_cursor: null` explicitly: clients test for it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversations, forKey: .conversations)
        try container.encode(nextCursor, forKey: .nextCursor)
        try container.encode(activityChanged, forKey: .activityChanged)
        try container.encode(users, forKey: .users)
    }

    /// The users the rows name: each last sender (not the system), and the
    /// other member of a conversation of two, as seen by `viewer`.
    public static func namedUsers(_ conversations: [Conversation], viewer: UserID) -> Set<UserID> {
        var users = Message.namedUsers(conversations.compactMap { $0.lastMessage.map { ($0.sender, nil) } })
        for conversation in conversations where conversation.members.count == 2 {
            for member in conversation.members where member != viewer.rawValue { users.insert(UserID(rawValue: member)) }
        }
        return users
    }
}

/// `POST /v1/conversations`
public struct CreateConversationRequest: Codable, Sendable, Equatable {
    public var title: String?
    public var members: [String]?
    /// The conversation of exactly these members (the caller included):
    /// the existing one (200), or a new one (201), never two.
    public var distinct: Bool?
    /// What the conversation is about; absent or null for none.
    public var description: String?
    /// The app's own data; absent or null for none.
    public var data: CustomData?

    public init(
        title: String? = nil, members: [String]? = nil, distinct: Bool? = nil, description: String? = nil,
        data: CustomData? = nil
    ) {
        self.title = title
        self.members = members
        self.distinct = distinct
        self.description = description
        self.data = data
    }

    enum CodingKeys: String, CodingKey {
        case title, members, distinct, description, data
    }

    /// `title` may be null (no title); `members` may be left out but is never
    /// null: openapi.yaml types it as an array, and a client that sends null
    /// has a bug worth a 400 rather than a conversation without its members.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = try container.decodeIfPresent(String.self, forKey: .title)
        members = container.contains(.members) ? try container.decode([String].self, forKey: .members) : nil
        distinct = try container.decodeIfPresent(Bool.self, forKey: .distinct)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        data = try container.decodeIfPresent(CustomData.self, forKey: .data)
    }
}

/// `POST /v1/conversations/{id}/members`
public struct AddMemberRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
    }

    public var userId: String

    public init(userId: String) {
        self.userId = userId
    }
}

/// `PUT /v1/conversations/{id}/read`
public struct ReadMarkerRequest: Codable, Sendable, Equatable {
    public var seq: Int64

    public init(seq: Int64) {
        self.seq = seq
    }
}

/// The caller's read marker in a conversation after an update.
public struct ReadMarker: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case readSeq = "read_seq"
        case unreadCount = "unread_count"
        case unreadMentions = "unread_mentions"
    }

    public var conversationId: UUID
    public var readSeq: Int64
    public var unreadCount: Int64
    /// The caller's mentions after the marker (as in `Conversation`).
    public var unreadMentions: Int64

    public init(conversationId: UUID, readSeq: Int64, unreadCount: Int64, unreadMentions: Int64 = 0) {
        self.conversationId = conversationId
        self.readSeq = readSeq
        self.unreadCount = unreadCount
        self.unreadMentions = unreadMentions
    }

    /// `unread_mentions` may be absent (servers before it existed): 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        conversationId = try container.decode(UUID.self, forKey: .conversationId)
        readSeq = try container.decode(Int64.self, forKey: .readSeq)
        unreadCount = try container.decode(Int64.self, forKey: .unreadCount)
        unreadMentions = try container.decodeIfPresent(Int64.self, forKey: .unreadMentions) ?? 0
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(readSeq, forKey: .readSeq)
        try container.encode(unreadCount, forKey: .unreadCount)
        try container.encode(unreadMentions, forKey: .unreadMentions)
    }
}

extension Conversation: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("activity")
        writer.number(activity)
        writer.key("created_at")
        writer.timestamp(createdAt)
        writer.key("created_by")
        writer.string(createdBy)
        if let data {
            writer.key("data")
            data.write(to: &writer)
        }
        if let description {
            writer.key("description")
            writer.string(description)
        }
        writer.key("first_seq")
        writer.number(firstSeq)
        writer.key("id")
        writer.uuid(id)
        if let image {
            writer.key("image")
            image.write(to: &writer)
        }
        writer.key("last_message")
        if let lastMessage { lastMessage.write(to: &writer) } else { writer.null() }
        writer.key("last_seq")
        writer.number(lastSeq)
        writer.key("members")
        writer.array(members)
        writer.key("muted")
        writer.bool(muted)
        writer.key("muted_until")
        if let mutedUntil { writer.timestamp(mutedUntil) } else { writer.null() }
        writer.key("read_seq")
        writer.number(readSeq)
        writer.key("role")
        writer.string(role.rawValue)
        writer.key("slow_mode_seconds")
        writer.number(slowModeSeconds)
        writer.key("title")
        writer.string(title)
        writer.key("unread_count")
        writer.number(unreadCount)
        writer.key("unread_mentions")
        writer.number(unreadMentions)
        writer.key("version")
        writer.number(version)
        writer.endObject()
    }
}

extension ConversationList: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("activity_changed")
        writer.bool(activityChanged)
        writer.key("conversations")
        writer.array(conversations)
        writer.key("next_cursor")
        writer.string(nextCursor)
        writer.key("users")
        users.write(to: &writer)
        writer.endObject()
    }
}

extension ReadMarker: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("conversation_id")
        writer.uuid(conversationId)
        writer.key("read_seq")
        writer.number(readSeq)
        writer.key("unread_count")
        writer.number(unreadCount)
        writer.key("unread_mentions")
        writer.number(unreadMentions)
        writer.endObject()
    }
}

/// `PUT /v1/conversations/{id}/mute`: until when (absent or null: until unmuted).
public struct MuteRequest: Codable, Sendable, Equatable {
    public var until: Date?

    public init(until: Date? = nil) {
        self.until = until
    }
}

/// Whether the caller muted a conversation, after `PUT` or `DELETE .../mute`.
public struct MuteState: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case muted
        case mutedUntil = "muted_until"
    }

    public var conversationId: UUID
    public var muted: Bool
    /// Nil while muted: until unmuted.
    public var mutedUntil: Date?

    public init(conversationId: UUID, muted: Bool, mutedUntil: Date?) {
        self.conversationId = conversationId
        self.muted = muted
        self.mutedUntil = mutedUntil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(muted, forKey: .muted)
        try container.encode(mutedUntil, forKey: .mutedUntil)
    }
}

/// `PUT /v1/admin/conversations/{id}/image`: a URL elsewhere (the
/// operator's CDN), or null for none.
public struct SetConversationImageRequest: Codable, Sendable, Equatable {
    public var image: ProfileImage?

    public init(image: ProfileImage?) {
        self.image = image
    }

    /// `image` must be given: null says "none", its absence nothing.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.contains(.image) else {
            throw DecodingError.keyNotFound(
                CodingKeys.image, .init(codingPath: [], debugDescription: "`image` is required (null for none)."))
        }
        image = try container.decodeIfPresent(ProfileImage.self, forKey: .image)
    }

    enum CodingKeys: String, CodingKey {
        case image
    }
}

/// A conversation's picture after the operator set it.
public struct ConversationImage: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case image
    }

    public var conversationId: UUID
    public var image: ProfileImage?

    public init(conversationId: UUID, image: ProfileImage?) {
        self.conversationId = conversationId
        self.image = image
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(image, forKey: .image)
    }
}

/// What a conversation's header and its row in a list show besides its
/// messages, as `conversation_updated` tells it whenever any of it changes
/// (`PATCH /v1/conversations/{id}`, its picture, the operator): nil fields
/// are none. `detailsVersion` counts the changes: of two, the higher is
/// the newer.
public struct ConversationDetails: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case title
        case description
        case image
        case data
        case slowModeSeconds = "slow_mode_seconds"
        case detailsVersion = "details_version"
    }

    public var conversationId: UUID
    public var title: String?
    public var description: String?
    public var image: ProfileImage?
    public var data: CustomData?
    public var slowModeSeconds: Int
    public var detailsVersion: Int64

    public init(
        conversationId: UUID, title: String?, description: String? = nil, image: ProfileImage? = nil,
        data: CustomData? = nil, slowModeSeconds: Int = 0, detailsVersion: Int64
    ) {
        self.conversationId = conversationId
        self.title = title
        self.description = description
        self.image = image
        self.data = data
        self.slowModeSeconds = slowModeSeconds
        self.detailsVersion = detailsVersion
    }

    /// The details of `conversation`, at `detailsVersion`.
    public init(_ conversation: Conversation, detailsVersion: Int64) {
        self.init(
            conversationId: conversation.id, title: conversation.title, description: conversation.description,
            image: conversation.image, data: conversation.data, slowModeSeconds: conversation.slowModeSeconds,
            detailsVersion: detailsVersion)
    }

    /// A field that is none is `null`, not left out: it was cleared.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(title, forKey: .title)
        try container.encode(description, forKey: .description)
        try container.encode(image, forKey: .image)
        try container.encode(data, forKey: .data)
        try container.encode(slowModeSeconds, forKey: .slowModeSeconds)
        try container.encode(detailsVersion, forKey: .detailsVersion)
    }

    /// `conversation` with these details.
    public func applied(to conversation: Conversation) -> Conversation {
        var conversation = conversation
        conversation.title = title
        conversation.description = description
        conversation.image = image
        conversation.data = data
        conversation.slowModeSeconds = slowModeSeconds
        return conversation
    }

    /// The fields after `conversation_id`, in key order, for a frame's
    /// object (`ServerFrame.conversationUpdated`).
    func writeFields(to writer: inout JSONWriter) {
        writer.key("data")
        if let data { data.write(to: &writer) } else { writer.null() }
        writer.key("description")
        if let description { writer.string(description) } else { writer.null() }
        writer.key("details_version")
        writer.number(detailsVersion)
        writer.key("image")
        if let image { image.write(to: &writer) } else { writer.null() }
        writer.key("slow_mode_seconds")
        writer.number(Int64(slowModeSeconds))
        writer.key("title")
        if let title { writer.string(title) } else { writer.null() }
    }
}
