import Foundation

/// A stored message. `seq` is its position in the conversation: 1, 2, 3, ...
/// with no gap and no duplicate.
public struct Message: Codable, Sendable, Hashable {
    public var conversationId: UUID
    public var seq: Int64
    public var sender: String
    public var body: String
    public var clientId: String?
    public var createdAt: Date

    public init(conversationId: UUID, seq: Int64, sender: String, body: String, clientId: String?, createdAt: Date) {
        self.conversationId = conversationId
        self.seq = seq
        self.sender = sender
        self.body = body
        self.clientId = clientId
        self.createdAt = createdAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(sender, forKey: .sender)
        try container.encode(body, forKey: .body)
        try container.encode(clientId, forKey: .clientId)
        try container.encode(createdAt, forKey: .createdAt)
    }
}

/// `POST /v1/conversations/{id}/messages`. The server assigns sender, seq and
/// created_at; anything a client sends for them is ignored.
public struct SendMessageRequest: Codable, Sendable, Equatable {
    public var body: String
    /// Idempotency key: resending with the same key returns the original message.
    public var clientId: String?

    public init(body: String, clientId: String? = nil) {
        self.body = body
        self.clientId = clientId
    }
}

/// The body of a send response (201 when stored, 200 when replayed).
public struct MessageEnvelope: Codable, Sendable, Equatable {
    public var message: Message

    public init(message: Message) {
        self.message = message
    }
}

/// A page of history, newest first: the order an inverted chat list consumes.
public struct MessagePage: Codable, Sendable, Equatable {
    /// Newest first.
    public var messages: [Message]
    /// Whether messages older than the oldest one on this page exist.
    public var hasOlder: Bool
    /// Whether messages newer than the newest one on this page exist.
    public var hasNewer: Bool
    /// The conversation's newest seq when the page was read (same snapshot).
    public var lastSeq: Int64

    public init(messages: [Message], hasOlder: Bool, hasNewer: Bool, lastSeq: Int64) {
        self.messages = messages
        self.hasOlder = hasOlder
        self.hasNewer = hasNewer
        self.lastSeq = lastSeq
    }
}
