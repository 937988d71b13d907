import Foundation

/// What a reply shows of the message it answers: computed from that message
/// as it is now, so an edit or a deletion of the parent shows in every reply
/// (a client holding both can apply it with ``init(of:)``).
public struct ReplyPreview: Codable, Sendable, Hashable {
    public var seq: Int64
    public var sender: String
    /// The first ``APILimits/replyExcerptLength`` code points of the body;
    /// nil once the parent is deleted.
    public var excerpt: String?
    public var deleted: Bool

    public init(seq: Int64, sender: String, excerpt: String?, deleted: Bool) {
        self.seq = seq
        self.sender = sender
        self.excerpt = excerpt
        self.deleted = deleted
    }

    /// The preview of `parent`, as the server computes it.
    public init(of parent: Message) {
        self.init(
            seq: parent.seq, sender: parent.sender,
            excerpt: parent.deleted ? nil : Self.excerpt(of: parent.body), deleted: parent.deleted)
    }

    public static func excerpt(of body: String) -> String {
        String(String.UnicodeScalarView(body.unicodeScalars.prefix(APILimits.replyExcerptLength)))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(seq, forKey: .seq)
        try container.encode(sender, forKey: .sender)
        try container.encode(excerpt, forKey: .excerpt)
        try container.encode(deleted, forKey: .deleted)
    }
}

/// The thread a message started: kept on the root by every reply's send.
public struct ThreadSummary: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case replyCount = "reply_count"
        case lastReplyAt = "last_reply_at"
        case participants
    }

    /// Replies in the thread, deleted ones included (they stay as
    /// tombstones in the thread's pages, as in history).
    public var replyCount: Int64
    public var lastReplyAt: Date
    /// The first ``APILimits/threadParticipantsShown`` users who replied, in
    /// the order of their first reply.
    public var participants: [String]

    public init(replyCount: Int64, lastReplyAt: Date, participants: [String]) {
        self.replyCount = replyCount
        self.lastReplyAt = lastReplyAt
        self.participants = participants
    }
}

/// One emoji's reactions to a message.
public struct ReactionSummary: Codable, Sendable, Hashable {
    public var emoji: String
    public var count: Int64
    /// Whether the user who asked is among them.
    public var me: Bool

    public init(emoji: String, count: Int64, me: Bool) {
        self.emoji = emoji
        self.count = count
        self.me = me
    }
}

/// A page of a thread's replies, newest first, with the same anchors and
/// flags as history (`before`, `after`, `around`; `has_older`, `has_newer`
/// are about the thread's replies).
public struct ThreadPage: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case root
        case messages
        case hasOlder = "has_older"
        case hasNewer = "has_newer"
        case version
        case users
    }

    /// The thread's first message, as it is now.
    public var root: Message
    /// Replies, newest first.
    public var messages: [Message]
    public var hasOlder: Bool
    public var hasNewer: Bool
    /// The conversation's change counter when the page was read.
    public var version: Int64
    /// The profile of each user the page names (the root's sender, each
    /// reply's, and each sender of a message replied to), once, by id.
    public var users: ProfileSet

    public init(
        root: Message, messages: [Message], hasOlder: Bool, hasNewer: Bool, version: Int64, users: ProfileSet = ProfileSet()
    ) {
        self.root = root
        self.messages = messages
        self.hasOlder = hasOlder
        self.hasNewer = hasNewer
        self.version = version
        self.users = users
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        root = try container.decode(Message.self, forKey: .root)
        messages = try container.decode([Message].self, forKey: .messages)
        hasOlder = try container.decode(Bool.self, forKey: .hasOlder)
        hasNewer = try container.decode(Bool.self, forKey: .hasNewer)
        version = try container.decode(Int64.self, forKey: .version)
        users = try container.decodeIfPresent(ProfileSet.self, forKey: .users) ?? ProfileSet()
    }

    /// The users the page names: each sender (not the system) and each
    /// sender of a message replied to.
    public var namedUsers: Set<UserID> {
        Message.namedUsers(([root] + messages).lazy.map { ($0.sender, $0.replyTo?.sender) })
    }
}

/// The rule for a reaction's emoji: one grapheme cluster of at most
/// ``APILimits/maxEmojiBytes`` bytes that is an emoji: it has a code point
/// shown as an emoji by default (😀, 👍🏽, 🇫🇷, 👨‍👩‍👧), or starts with an
/// emoji code point made one by U+FE0F or a keycap (❤️, 1️⃣). Plain letters,
/// digits and punctuation are not, nor is text of several characters.
public enum Emoji {
    public static func isValid(_ text: String) -> Bool {
        guard text.count == 1, text.utf8.count <= APILimits.maxEmojiBytes, let first = text.unicodeScalars.first
        else { return false }
        let scalars = text.unicodeScalars
        if scalars.contains(where: { $0.properties.isEmojiPresentation }) { return true }
        return first.properties.isEmoji && scalars.contains { $0.value == 0xFE0F || $0.value == 0x20E3 }
    }

    public static let rule =
        "one emoji (a single grapheme such as 👍, ❤️ or 👍🏽, at most \(APILimits.maxEmojiBytes) bytes)"
}

// The JSON the server writes for the hot paths (see `JSONWritable`).

extension ReplyPreview: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("deleted")
        writer.bool(deleted)
        writer.key("excerpt")
        writer.string(excerpt)
        writer.key("sender")
        writer.string(sender)
        writer.key("seq")
        writer.number(seq)
        writer.endObject()
    }
}

extension ThreadSummary: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("last_reply_at")
        writer.timestamp(lastReplyAt)
        writer.key("participants")
        writer.array(participants)
        writer.key("reply_count")
        writer.number(replyCount)
        writer.endObject()
    }
}

extension ReactionSummary: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("count")
        writer.number(count)
        writer.key("emoji")
        writer.string(emoji)
        writer.key("me")
        writer.bool(me)
        writer.endObject()
    }
}

extension ThreadPage: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("has_newer")
        writer.bool(hasNewer)
        writer.key("has_older")
        writer.bool(hasOlder)
        writer.key("messages")
        writer.array(messages)
        writer.key("root")
        root.write(to: &writer)
        writer.key("users")
        users.write(to: &writer)
        writer.key("version")
        writer.number(version)
        writer.endObject()
    }
}
