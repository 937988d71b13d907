import Foundation

/// A message that mentions the caller (`@user`, see docs/protocol.md for the
/// rule), as `GET /v1/mentions` lists it.
public struct Mention: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case seq
        case message
        case read
    }

    public var conversationId: UUID
    public var seq: Int64
    /// The message as pages of history return it.
    public var message: Message
    /// The caller's read marker has passed it (`seq <= read_seq`).
    public var read: Bool

    public init(conversationId: UUID, seq: Int64, message: Message, read: Bool) {
        self.conversationId = conversationId
        self.seq = seq
        self.message = message
        self.read = read
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.lowercased, forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(message, forKey: .message)
        try container.encode(read, forKey: .read)
    }
}

/// A page of the caller's mentions, newest first across their conversations.
public struct MentionPage: Codable, Sendable, Equatable {
    public var mentions: [Mention]
    /// Opaque; pass it back as `before` for the next (older) page. `nil` on
    /// the last page.
    public var next: String?

    public init(mentions: [Mention], next: String?) {
        self.mentions = mentions
        self.next = next
    }

    // Encode `next: null` explicitly: clients test for it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(mentions, forKey: .mentions)
        try container.encode(next, forKey: .next)
    }
}

extension Mention: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("conversation_id")
        writer.uuid(conversationId)
        writer.key("message")
        message.write(to: &writer)
        writer.key("read")
        writer.bool(read)
        writer.key("seq")
        writer.number(seq)
        writer.endObject()
    }
}

extension MentionPage: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("mentions")
        writer.array(mentions)
        writer.key("next")
        writer.string(next)
        writer.endObject()
    }
}
