import Foundation

/// A stored message. `seq` is its position in the conversation: 1, 2, 3, ...
/// with no gap and no duplicate.
public struct Message: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case seq
        case sender
        case body
        case clientId = "client_id"
        case createdAt = "created_at"
        case version
        case editedAt = "edited_at"
        case deleted
        case replyTo = "reply_to"
        case threadRoot = "thread_root"
        case thread
        case reactions
        case attachments
        case blockedSender = "blocked_sender"
        case kind
        case data
        case type
    }

    public var conversationId: UUID
    public var seq: Int64
    public var sender: String
    public var body: String
    public var clientId: String?
    public var createdAt: Date
    /// The conversation's change counter at this message's latest change
    /// (creation, edit or deletion).
    public var version: Int64
    /// When the body was last edited; nil until then.
    public var editedAt: Date?
    /// A tombstone: the body was erased, the seq stays so pages show no gap.
    public var deleted: Bool
    /// The message this one answers, as it is now; nil when it answers none.
    public var replyTo: ReplyPreview?
    /// The first message of the thread this reply is in (the parent, or the
    /// parent's own root); nil when this is not a reply.
    public var threadRoot: Int64?
    /// The thread started by this message; nil until it has a reply.
    public var thread: ThreadSummary?
    /// Reactions, one entry per emoji in the order each was first used;
    /// `me` is about the user who asked.
    public var reactions: [ReactionSummary]
    /// Files and images, in the order they were sent; none on a tombstone.
    public var attachments: [Attachment]
    /// The reader blocked the sender (`PUT /v1/blocks/{user_id}`): a client
    /// collapses the message. About the reader, like `me` on reactions;
    /// on the wire only when true.
    public var blockedSender: Bool = false
    /// The app's own data (`CustomData`), as sent or last edited; nil when
    /// none. The server never reads it.
    public var data: CustomData?
    /// The app's own kind of message (``MessageType``), for clients to
    /// render their own way; nil for a plain message.
    public var type: String?

    /// A system message (`POST /v1/admin/conversations/{id}/messages`): sent
    /// by the operator, with no user sender (`sender` is empty). On the wire
    /// as `"kind": "system"`, only on system messages.
    public var isSystem: Bool { sender.isEmpty }

    public init(
        conversationId: UUID, seq: Int64, sender: String, body: String, clientId: String?, createdAt: Date,
        version: Int64, editedAt: Date? = nil, deleted: Bool = false, replyTo: ReplyPreview? = nil,
        threadRoot: Int64? = nil, thread: ThreadSummary? = nil, reactions: [ReactionSummary] = [],
        attachments: [Attachment] = [], data: CustomData? = nil, type: String? = nil
    ) {
        self.conversationId = conversationId
        self.seq = seq
        self.sender = sender
        self.body = body
        self.clientId = clientId
        self.createdAt = createdAt
        self.version = version
        self.editedAt = editedAt
        self.deleted = deleted
        self.replyTo = replyTo
        self.threadRoot = threadRoot
        self.thread = thread
        self.reactions = reactions
        self.attachments = attachments
        self.data = data
        self.type = type
    }

    /// The app's own data as its own type; nil when the message has none.
    public func data<T: Decodable>(as type: T.Type) throws -> T? {
        try data?.decode(type)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        conversationId = try container.decode(UUID.self, forKey: .conversationId)
        seq = try container.decode(Int64.self, forKey: .seq)
        sender = try container.decode(String.self, forKey: .sender)
        body = try container.decode(String.self, forKey: .body)
        clientId = try container.decodeIfPresent(String.self, forKey: .clientId)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        version = try container.decode(Int64.self, forKey: .version)
        editedAt = try container.decodeIfPresent(Date.self, forKey: .editedAt)
        deleted = try container.decode(Bool.self, forKey: .deleted)
        replyTo = try container.decodeIfPresent(ReplyPreview.self, forKey: .replyTo)
        threadRoot = try container.decodeIfPresent(Int64.self, forKey: .threadRoot)
        thread = try container.decodeIfPresent(ThreadSummary.self, forKey: .thread)
        reactions = try container.decodeIfPresent([ReactionSummary].self, forKey: .reactions) ?? []
        attachments = try container.decodeIfPresent([Attachment].self, forKey: .attachments) ?? []
        blockedSender = try container.decodeIfPresent(Bool.self, forKey: .blockedSender) ?? false
        data = try container.decodeIfPresent(CustomData.self, forKey: .data)
        type = try container.decodeIfPresent(String.self, forKey: .type)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(sender, forKey: .sender)
        try container.encode(body, forKey: .body)
        try container.encode(clientId, forKey: .clientId)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(version, forKey: .version)
        try container.encode(editedAt, forKey: .editedAt)
        try container.encode(deleted, forKey: .deleted)
        // Present only when they say something, as `write(to:)` writes them.
        try container.encodeIfPresent(replyTo, forKey: .replyTo)
        try container.encodeIfPresent(threadRoot, forKey: .threadRoot)
        try container.encodeIfPresent(thread, forKey: .thread)
        if !reactions.isEmpty { try container.encode(reactions, forKey: .reactions) }
        if !attachments.isEmpty { try container.encode(attachments, forKey: .attachments) }
        if blockedSender { try container.encode(true, forKey: .blockedSender) }
        if isSystem { try container.encode(MessageKind.system, forKey: .kind) }
        try container.encodeIfPresent(data, forKey: .data)
        try container.encodeIfPresent(type, forKey: .type)
    }
}

/// What sent a message, on the wire only for system messages.
public enum MessageKind: String, Codable, Sendable {
    case system
}

/// `POST /v1/conversations/{id}/messages`. The server assigns sender, seq and
/// created_at; anything a client sends for them is ignored.
public struct SendMessageRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case body
        case clientId = "client_id"
        case replyTo = "reply_to"
        case attachments
        case data
        case type
    }

    /// May be empty (or left out) when the message has attachments.
    public var body: String
    /// Idempotency key: resending with the same key returns the original message.
    public var clientId: String?
    /// The seq of the message this one answers, in the same conversation.
    public var replyTo: Int64?
    /// Upload ids (`POST .../uploads`), each complete, of the sender and
    /// this conversation, not sent before, and not expired.
    public var attachments: [UUID]?
    /// The app's own data; absent or null for none.
    public var data: CustomData?
    /// The app's own kind of message (``MessageType``); absent or null for none.
    public var type: String?

    public init(
        body: String, clientId: String? = nil, replyTo: Int64? = nil, attachments: [UUID]? = nil,
        data: CustomData? = nil, type: String? = nil
    ) {
        self.body = body
        self.clientId = clientId
        self.replyTo = replyTo
        self.attachments = attachments
        self.data = data
        self.type = type
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Left out: none (a message of attachments or data); null is no string.
        body = container.contains(.body) ? try container.decode(String.self, forKey: .body) : ""
        clientId = try container.decodeIfPresent(String.self, forKey: .clientId)
        replyTo = try container.decodeIfPresent(Int64.self, forKey: .replyTo)
        attachments = try container.decodeIfPresent([UUID].self, forKey: .attachments)
        data = try container.decodeIfPresent(CustomData.self, forKey: .data)
        type = try container.decodeIfPresent(String.self, forKey: .type)
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
    enum CodingKeys: String, CodingKey {
        case messages
        case hasOlder = "has_older"
        case hasNewer = "has_newer"
        case lastSeq = "last_seq"
        case version
        case layout
        case firstSeq = "first_seq"
        case users
    }

    /// Newest first.
    public var messages: [Message]
    /// Whether messages older than the oldest one on this page exist.
    public var hasOlder: Bool
    /// Whether messages newer than the newest one on this page exist.
    public var hasNewer: Bool
    /// The conversation's newest seq when the page was read (same snapshot).
    public var lastSeq: Int64
    /// The conversation's change counter when the page was read (same
    /// snapshot): ask `changes?since_version=` this to revalidate the page later.
    public var version: Int64
    /// Estimated heights and layout, only when the request asked for them
    /// (`viewport_height`). The synthesized encoder uses `encodeIfPresent`
    /// for optionals, so a page without hints has no `layout` key at all.
    public var layout: PageLayoutHints?
    /// The oldest seq the conversation still stores: 1, or past it once
    /// retention removed older messages (`has_older` is false there). A
    /// client drops what it holds below it.
    public var firstSeq: Int64
    /// The profile of each user the page names (each sender, and each
    /// sender of a message replied to), once, by id.
    public var users: ProfileSet

    public init(
        messages: [Message], hasOlder: Bool, hasNewer: Bool, lastSeq: Int64, version: Int64,
        layout: PageLayoutHints? = nil, firstSeq: Int64 = 1, users: ProfileSet = ProfileSet()
    ) {
        self.users = users
        self.messages = messages
        self.hasOlder = hasOlder
        self.hasNewer = hasNewer
        self.lastSeq = lastSeq
        self.version = version
        self.layout = layout
        self.firstSeq = firstSeq
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        messages = try container.decode([Message].self, forKey: .messages)
        hasOlder = try container.decode(Bool.self, forKey: .hasOlder)
        hasNewer = try container.decode(Bool.self, forKey: .hasNewer)
        lastSeq = try container.decode(Int64.self, forKey: .lastSeq)
        version = try container.decode(Int64.self, forKey: .version)
        layout = try container.decodeIfPresent(PageLayoutHints.self, forKey: .layout)
        firstSeq = try container.decodeIfPresent(Int64.self, forKey: .firstSeq) ?? 1
        users = try container.decodeIfPresent(ProfileSet.self, forKey: .users) ?? ProfileSet()
    }

    /// The users the page names: each sender (not the system) and each
    /// sender of a message replied to.
    public var namedUsers: Set<UserID> {
        Message.namedUsers(messages.lazy.map { ($0.sender, $0.replyTo?.sender) })
    }
}

extension Message {
    /// The users named by messages given as their sender and the sender of
    /// the message each replies to: the system (no sender) is no one.
    public static func namedUsers(_ senders: some Sequence<(String, String?)>) -> Set<UserID> {
        var users = Set<UserID>()
        for (sender, replied) in senders {
            if !sender.isEmpty { users.insert(UserID(rawValue: sender)) }
            if let replied, !replied.isEmpty { users.insert(UserID(rawValue: replied)) }
        }
        return users
    }
}

/// `PATCH /v1/conversations/{id}/messages/{seq}`: the new body, the new
/// data, or both. A field left out stays as it is; `"data": null` removes
/// the data.
public struct EditMessageRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case body
        case data
    }

    public var body: String?
    /// nil: unchanged; `.some(nil)`: removed.
    public var data: CustomData??

    public init(body: String? = nil, data: CustomData?? = nil) {
        self.body = body
        self.data = data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Left out: unchanged; null is no string (a body cannot be removed).
        body = container.contains(.body) ? try container.decode(String.self, forKey: .body) : nil
        data = container.contains(.data) ? .some(try container.decodeIfPresent(CustomData.self, forKey: .data)) : nil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(body, forKey: .body)
        if let data { try container.encode(data, forKey: .data) }
    }
}

/// What changed in a conversation after a version, oldest change first, each
/// message once in its latest state.
public struct ChangeSet: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case messages
        case hasMore = "has_more"
        case version
        case firstSeq = "first_seq"
        case users
    }

    public var messages: [Message]
    /// More changes follow: ask again from `version`.
    public var hasMore: Bool
    /// The version to ask from next.
    public var version: Int64
    /// The oldest seq the conversation still stores (see `MessagePage.firstSeq`):
    /// what a window holds below it was removed by retention.
    public var firstSeq: Int64
    /// The profile of each user the changed messages name (see
    /// `MessagePage.users`), once, by id.
    public var users: ProfileSet

    public init(messages: [Message], hasMore: Bool, version: Int64, firstSeq: Int64 = 1, users: ProfileSet = ProfileSet()) {
        self.messages = messages
        self.hasMore = hasMore
        self.version = version
        self.firstSeq = firstSeq
        self.users = users
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        messages = try container.decode([Message].self, forKey: .messages)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
        version = try container.decode(Int64.self, forKey: .version)
        firstSeq = try container.decodeIfPresent(Int64.self, forKey: .firstSeq) ?? 1
        users = try container.decodeIfPresent(ProfileSet.self, forKey: .users) ?? ProfileSet()
    }

    /// The users the changed messages name: each sender (not the system)
    /// and each sender of a message replied to.
    public var namedUsers: Set<UserID> {
        Message.namedUsers(messages.lazy.map { ($0.sender, $0.replyTo?.sender) })
    }
}

// The JSON the server writes for the hot paths: keys sorted as the encoder
// sorts them (see `JSONWritable`).

extension Message: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        var flagAt = 0
        write(to: &writer, flagAt: &flagAt)
    }

    /// Writes the message, and sets `flagAt` to the offset in `writer`
    /// where `blocked_sender` goes (or went): the keys before it are only
    /// `attachments` (see `EncodedPage`).
    func write(to writer: inout JSONWriter, flagAt: inout Int) {
        writer.beginObject()
        if !attachments.isEmpty {
            writer.key("attachments")
            writer.array(attachments)
        }
        flagAt = writer.bytes.count
        if blockedSender {
            writer.key("blocked_sender")
            writer.bool(true)
        }
        writer.key("body")
        writer.string(body)
        writer.key("client_id")
        writer.string(clientId)
        writer.key("conversation_id")
        writer.uuid(conversationId)
        writer.key("created_at")
        writer.timestamp(createdAt)
        if let data {
            writer.key("data")
            data.write(to: &writer)
        }
        writer.key("deleted")
        writer.bool(deleted)
        writer.key("edited_at")
        writer.timestamp(editedAt)
        if isSystem {
            writer.key("kind")
            writer.string(MessageKind.system.rawValue)
        }
        if !reactions.isEmpty {
            writer.key("reactions")
            writer.array(reactions)
        }
        if let replyTo {
            writer.key("reply_to")
            replyTo.write(to: &writer)
        }
        writer.key("sender")
        writer.string(sender)
        writer.key("seq")
        writer.number(seq)
        if let thread {
            writer.key("thread")
            thread.write(to: &writer)
        }
        if let threadRoot {
            writer.key("thread_root")
            writer.number(threadRoot)
        }
        if let type {
            writer.key("type")
            writer.string(type)
        }
        writer.key("version")
        writer.number(version)
        writer.endObject()
    }
}

extension MessageEnvelope: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("message")
        message.write(to: &writer)
        writer.endObject()
    }
}

extension MessagePage: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        Self.write(
            to: &writer, firstSeq: firstSeq, hasNewer: hasNewer, hasOlder: hasOlder, lastSeq: lastSeq, layout: layout,
            version: version, users: users
        ) { writer in writer.array(messages) }
    }

    /// A page's object around its `messages` array (written by
    /// `messages`): here and in `EncodedPage`.
    static func write(
        to writer: inout JSONWriter, firstSeq: Int64, hasNewer: Bool, hasOlder: Bool, lastSeq: Int64,
        layout: PageLayoutHints?, version: Int64, users: ProfileSet, messages: (inout JSONWriter) -> Void
    ) {
        writer.beginObject()
        writer.key("first_seq")
        writer.number(firstSeq)
        writer.key("has_newer")
        writer.bool(hasNewer)
        writer.key("has_older")
        writer.bool(hasOlder)
        writer.key("last_seq")
        writer.number(lastSeq)
        if let layout {
            writer.key("layout")
            layout.write(to: &writer)
        }
        writer.key("messages")
        messages(&writer)
        writer.key("users")
        users.write(to: &writer)
        writer.key("version")
        writer.number(version)
        writer.endObject()
    }
}

extension ChangeSet: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("first_seq")
        writer.number(firstSeq)
        writer.key("has_more")
        writer.bool(hasMore)
        writer.key("messages")
        writer.array(messages)
        writer.key("users")
        users.write(to: &writer)
        writer.key("version")
        writer.number(version)
        writer.endObject()
    }
}
