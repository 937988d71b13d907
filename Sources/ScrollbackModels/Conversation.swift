import Foundation

/// A conversation as the API returns it.
public struct Conversation: Codable, Sendable, Hashable {
    public var id: UUID
    public var title: String?
    public var createdBy: String
    public var createdAt: Date
    /// The seq of the newest message (0 while the conversation is empty).
    public var lastSeq: Int64
    /// Member user ids, sorted.
    public var members: [String]

    public init(id: UUID, title: String?, createdBy: String, createdAt: Date, lastSeq: Int64, members: [String]) {
        self.id = id
        self.title = title
        self.createdBy = createdBy
        self.createdAt = createdAt
        self.lastSeq = lastSeq
        self.members = members
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        // Lowercase, as PostgreSQL and most clients spell UUIDs.
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(title, forKey: .title)
        try container.encode(createdBy, forKey: .createdBy)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(lastSeq, forKey: .lastSeq)
        try container.encode(members, forKey: .members)
    }
}

/// One page of the caller's conversations, most recently active first.
public struct ConversationList: Codable, Sendable, Equatable {
    public var conversations: [Conversation]
    /// Opaque; pass it back as `cursor` for the next page. `nil` on the last page.
    public var nextCursor: String?

    public init(conversations: [Conversation], nextCursor: String?) {
        self.conversations = conversations
        self.nextCursor = nextCursor
    }

    // Encode `next_cursor: null` explicitly: clients test for it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversations, forKey: .conversations)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}

/// `POST /v1/conversations`
public struct CreateConversationRequest: Codable, Sendable, Equatable {
    public var title: String?
    public var members: [String]?

    public init(title: String? = nil, members: [String]? = nil) {
        self.title = title
        self.members = members
    }
}

/// `POST /v1/conversations/{id}/members`
public struct AddMemberRequest: Codable, Sendable, Equatable {
    public var userId: String

    public init(userId: String) {
        self.userId = userId
    }
}
