import Foundation

// The frames of `GET /v1/stream`: JSON text frames with a `type` (see
// docs/protocol.md). Both directions live here so the server writes and the
// client kit reads the same types.

/// A frame a client sends on the live stream.
public enum ClientFrame: Codable, Sendable, Equatable {
    /// Authenticates a socket opened without an `Authorization` header (a
    /// browser cannot set one), as its first frame within 5 seconds. Sent
    /// later with a fresh token of the same user, it extends the socket's
    /// life past the first token's expiry.
    case auth(token: String)
    /// Live events of a conversation. With `afterSeq`, first every message
    /// after it (exact resume); without, only what happens from now on.
    /// With `presence`, also `presence` frames: members coming online and
    /// going offline.
    case subscribe(conversationId: UUID, afterSeq: Int64?, presence: Bool = false)
    case unsubscribe(conversationId: UUID)
    /// A send with the validation, limits and idempotency of
    /// `POST /v1/conversations/{id}/messages`; `clientId` is required here
    /// because the `ack` is matched by it. `attachments` are upload ids;
    /// `data` and `message_type` are the send's `data` and `type` (the
    /// frame's own `type` is `send`).
    case send(
        conversationId: UUID, body: String, clientId: String, replyTo: Int64? = nil, attachments: [UUID] = [],
        data: CustomData? = nil, messageType: String? = nil)
    /// Moves the sender's read marker (`PUT .../read`).
    case read(conversationId: UUID, seq: Int64)
    /// The sender is typing; never stored.
    case typing(conversationId: UUID)
    /// The caller's inbox: activity in every conversation they are a member
    /// of. With `after` (a `cursor` of an earlier inbox frame), first what
    /// changed since then (exact resume); without, only what happens from now on.
    case subscribeInbox(after: String?)
    case unsubscribeInbox
    case ping

    enum CodingKeys: String, CodingKey {
        case type
        case token
        case conversationId = "conversation_id"
        case afterSeq = "after_seq"
        case body
        case clientId = "client_id"
        case replyTo = "reply_to"
        case attachments
        case seq
        case after
        case presence
        case data
        case messageType = "message_type"
    }

    /// The values of `type`.
    public static let types = [
        "auth", "subscribe", "unsubscribe", "send", "read", "typing", "subscribe_inbox", "unsubscribe_inbox", "ping",
    ]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "auth":
            self = .auth(token: try container.decode(String.self, forKey: .token))
        case "subscribe":
            self = .subscribe(
                conversationId: try container.decode(UUID.self, forKey: .conversationId),
                afterSeq: try container.decodeIfPresent(Int64.self, forKey: .afterSeq),
                presence: try container.decodeIfPresent(Bool.self, forKey: .presence) ?? false)
        case "unsubscribe":
            self = .unsubscribe(conversationId: try container.decode(UUID.self, forKey: .conversationId))
        case "send":
            self = .send(
                conversationId: try container.decode(UUID.self, forKey: .conversationId),
                body: try container.decodeIfPresent(String.self, forKey: .body) ?? "",
                clientId: try container.decode(String.self, forKey: .clientId),
                replyTo: try container.decodeIfPresent(Int64.self, forKey: .replyTo),
                attachments: try container.decodeIfPresent([UUID].self, forKey: .attachments) ?? [],
                data: try container.decodeIfPresent(CustomData.self, forKey: .data),
                messageType: try container.decodeIfPresent(String.self, forKey: .messageType))
        case "read":
            self = .read(
                conversationId: try container.decode(UUID.self, forKey: .conversationId),
                seq: try container.decode(Int64.self, forKey: .seq))
        case "typing":
            self = .typing(conversationId: try container.decode(UUID.self, forKey: .conversationId))
        case "subscribe_inbox":
            self = .subscribeInbox(after: try container.decodeIfPresent(String.self, forKey: .after))
        case "unsubscribe_inbox":
            self = .unsubscribeInbox
        case "ping":
            self = .ping
        default:
            throw UnknownFrameType(type: type)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .auth(let token):
            try container.encode("auth", forKey: .type)
            try container.encode(token, forKey: .token)
        case .subscribe(let id, let afterSeq, let presence):
            try container.encode("subscribe", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encodeIfPresent(afterSeq, forKey: .afterSeq)
            if presence { try container.encode(true, forKey: .presence) }
        case .unsubscribe(let id):
            try container.encode("unsubscribe", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
        case .send(let id, let body, let clientId, let replyTo, let attachments, let data, let messageType):
            try container.encode("send", forKey: .type)
            try container.encodeIfPresent(data, forKey: .data)
            try container.encodeIfPresent(messageType, forKey: .messageType)
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(body, forKey: .body)
            try container.encode(clientId, forKey: .clientId)
            try container.encodeIfPresent(replyTo, forKey: .replyTo)
            if !attachments.isEmpty { try container.encode(attachments.map(\.lowercased), forKey: .attachments) }
        case .read(let id, let seq):
            try container.encode("read", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(seq, forKey: .seq)
        case .typing(let id):
            try container.encode("typing", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
        case .subscribeInbox(let after):
            try container.encode("subscribe_inbox", forKey: .type)
            try container.encodeIfPresent(after, forKey: .after)
        case .unsubscribeInbox:
            try container.encode("unsubscribe_inbox", forKey: .type)
        case .ping:
            try container.encode("ping", forKey: .type)
        }
    }
}

/// A client frame whose `type` this server does not know.
public struct UnknownFrameType: Error, Sendable, Equatable {
    public var type: String
}

/// A frame the server sends on the live stream.
public enum ServerFrame: Codable, Sendable, Equatable {
    /// The subscription is live. `lastSeq` and `version` are the
    /// conversation's at that moment: the backlog (when `after_seq` was given)
    /// ends at `lastSeq`, and every change after `version` follows live.
    case subscribed(conversationId: UUID, lastSeq: Int64, version: Int64)
    /// A new message, in seq order with no gap and no duplicate.
    case message(Message)
    /// An edit or deletion, carrying the message's new `version`.
    case messageUpdated(Message)
    /// The outcome of a `send`: the stored message, and whether it had been
    /// stored before (a retried `client_id`).
    case ack(clientId: String, message: Message, replayed: Bool)
    /// A member's read marker moved.
    case read(conversationId: UUID, userId: String, seq: Int64)
    /// A member is typing (at most one per member and conversation every 2 s).
    case typing(conversationId: UUID, userId: String)
    /// The caller was removed from the conversation; nothing more of it follows.
    case memberRemoved(conversationId: UUID)
    /// A member's role changed (`PATCH .../members/{user_id}`; a handover
    /// of ownership is two of these, the old owner's first).
    case memberUpdated(conversationId: UUID, userId: String, role: MemberRole)
    /// A member came online (a first socket on any instance) or went
    /// offline (their last one closed, or its instance stopped beating), or
    /// hid their presence (then: offline, never seen).
    case presence(conversationId: UUID, MemberPresence)
    /// The profile of a user who shares a conversation with the socket's
    /// user changed (on any instance): its name, avatar or data as it now
    /// shows. Once per socket, to conversation and inbox subscribers alike.
    case userUpdated(UserProfile)
    /// A conversation's details (title, description, image, data, slow
    /// mode) changed, on any instance: to its subscribers without a
    /// `cursor`, and to its members' inboxes with one.
    case conversationUpdated(ConversationDetails, cursor: String?)
    /// A frame could not be served. `ref` names what it was about: the
    /// `client_id` of a send, or the conversation of any other frame.
    /// `retryAfter` (code `rate_limited`): seconds to wait before trying
    /// that again.
    case error(code: APIErrorCode, message: String, ref: String?, retryAfter: Int? = nil)
    /// More than ``APILimits/maxStreamBacklog`` messages were missed: page
    /// them over HTTP. The subscription stays live after `lastSeq`.
    case resyncRequired(conversationId: UUID, lastSeq: Int64)
    /// The inbox is live: what changed after `cursor` follows.
    case inboxSubscribed(cursor: String)
    /// Inbox: a message was stored, edited or deleted in one of the
    /// caller's conversations (type `conversation_activity`).
    case conversationActivity(InboxActivity, cursor: String)
    /// Inbox: the caller was added to a conversation (type `member_added`).
    case memberAdded(Conversation, cursor: String)
    /// Inbox: the caller's own read marker moved, on any device (type
    /// `read`, told apart from a conversation's `read` by its `cursor`).
    case inboxRead(
        conversationId: UUID, userId: String, seq: Int64, unreadCount: Int64, unreadMentions: Int64 = 0, cursor: String)
    /// Inbox: the caller left or was removed from a conversation (type
    /// `member_removed`, with a `cursor`).
    case inboxMemberRemoved(conversationId: UUID, cursor: String)
    /// Inbox: more changed since `after` than the stream replays: fetch the
    /// conversation list again (type `resync_required`, with a `cursor` and
    /// no `conversation_id`). The inbox stays live after `cursor`.
    case inboxResyncRequired(cursor: String)
    case pong

    enum CodingKeys: String, CodingKey {
        case type
        case conversationId = "conversation_id"
        case lastSeq = "last_seq"
        case version
        case message
        case clientId = "client_id"
        case replayed
        case userId = "user_id"
        case seq
        case code
        case ref
        case retryAfter = "retry_after"
        case cursor
        case conversation
        case unreadCount = "unread_count"
        case unreadMentions = "unread_mentions"
        case role
        case user
    }

    public var type: String {
        switch self {
        case .subscribed: "subscribed"
        case .message: "message"
        case .messageUpdated: "message_updated"
        case .ack: "ack"
        case .read, .inboxRead: "read"
        case .typing: "typing"
        case .presence: "presence"
        case .memberUpdated: "member_updated"
        case .userUpdated: "user_updated"
        case .conversationUpdated: "conversation_updated"
        case .memberRemoved, .inboxMemberRemoved: "member_removed"
        case .error: "error"
        case .resyncRequired, .inboxResyncRequired: "resync_required"
        case .inboxSubscribed: "inbox_subscribed"
        case .conversationActivity: "conversation_activity"
        case .memberAdded: "member_added"
        case .pong: "pong"
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        func id() throws -> UUID { try container.decode(UUID.self, forKey: .conversationId) }
        switch type {
        case "subscribed":
            self = .subscribed(
                conversationId: try id(), lastSeq: try container.decode(Int64.self, forKey: .lastSeq),
                version: try container.decode(Int64.self, forKey: .version))
        case "message":
            self = .message(try container.decode(Message.self, forKey: .message))
        case "message_updated":
            self = .messageUpdated(try container.decode(Message.self, forKey: .message))
        case "ack":
            self = .ack(
                clientId: try container.decode(String.self, forKey: .clientId),
                message: try container.decode(Message.self, forKey: .message),
                replayed: try container.decode(Bool.self, forKey: .replayed))
        case "read":
            if let cursor = try container.decodeIfPresent(String.self, forKey: .cursor) {
                self = .inboxRead(
                    conversationId: try id(), userId: try container.decode(String.self, forKey: .userId),
                    seq: try container.decode(Int64.self, forKey: .seq),
                    unreadCount: try container.decode(Int64.self, forKey: .unreadCount),
                    unreadMentions: try container.decodeIfPresent(Int64.self, forKey: .unreadMentions) ?? 0,
                    cursor: cursor)
            } else {
                self = .read(
                    conversationId: try id(), userId: try container.decode(String.self, forKey: .userId),
                    seq: try container.decode(Int64.self, forKey: .seq))
            }
        case "typing":
            self = .typing(conversationId: try id(), userId: try container.decode(String.self, forKey: .userId))
        case "presence":
            self = .presence(conversationId: try id(), try MemberPresence(from: decoder))
        case "member_updated":
            self = .memberUpdated(
                conversationId: try id(), userId: try container.decode(String.self, forKey: .userId),
                role: try container.decode(MemberRole.self, forKey: .role))
        case "user_updated":
            self = .userUpdated(try container.decode(UserProfile.self, forKey: .user))
        case "conversation_updated":
            self = .conversationUpdated(
                try ConversationDetails(from: decoder), cursor: try container.decodeIfPresent(String.self, forKey: .cursor))
        case "member_removed":
            if let cursor = try container.decodeIfPresent(String.self, forKey: .cursor) {
                self = .inboxMemberRemoved(conversationId: try id(), cursor: cursor)
            } else {
                self = .memberRemoved(conversationId: try id())
            }
        case "error":
            self = .error(
                code: try container.decode(APIErrorCode.self, forKey: .code),
                message: try container.decode(String.self, forKey: .message),
                ref: try container.decodeIfPresent(String.self, forKey: .ref),
                retryAfter: try container.decodeIfPresent(Int.self, forKey: .retryAfter))
        case "resync_required":
            if container.contains(.conversationId) {
                self = .resyncRequired(
                    conversationId: try id(), lastSeq: try container.decode(Int64.self, forKey: .lastSeq))
            } else {
                self = .inboxResyncRequired(cursor: try container.decode(String.self, forKey: .cursor))
            }
        case "inbox_subscribed":
            self = .inboxSubscribed(cursor: try container.decode(String.self, forKey: .cursor))
        case "conversation_activity":
            self = .conversationActivity(
                try InboxActivity(from: decoder), cursor: try container.decode(String.self, forKey: .cursor))
        case "member_added":
            self = .memberAdded(
                try container.decode(Conversation.self, forKey: .conversation),
                cursor: try container.decode(String.self, forKey: .cursor))
        case "pong":
            self = .pong
        default:
            throw UnknownFrameType(type: type)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        switch self {
        case .subscribed(let id, let lastSeq, let version):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(lastSeq, forKey: .lastSeq)
            try container.encode(version, forKey: .version)
        case .message(let message), .messageUpdated(let message):
            try container.encode(message, forKey: .message)
        case .ack(let clientId, let message, let replayed):
            try container.encode(clientId, forKey: .clientId)
            try container.encode(message, forKey: .message)
            try container.encode(replayed, forKey: .replayed)
        case .read(let id, let userId, let seq):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(userId, forKey: .userId)
            try container.encode(seq, forKey: .seq)
        case .typing(let id, let userId):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(userId, forKey: .userId)
        case .memberRemoved(let id):
            try container.encode(id.lowercased, forKey: .conversationId)
        case .presence(let id, let presence):
            try container.encode(id.lowercased, forKey: .conversationId)
            try presence.encode(to: encoder)
        case .memberUpdated(let id, let userId, let role):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(role, forKey: .role)
            try container.encode(userId, forKey: .userId)
        case .userUpdated(let profile):
            try container.encode(profile, forKey: .user)
        case .conversationUpdated(let details, let cursor):
            try details.encode(to: encoder)
            try container.encodeIfPresent(cursor, forKey: .cursor)
        case .error(let code, let message, let ref, let retryAfter):
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
            try container.encodeIfPresent(ref, forKey: .ref)
            try container.encodeIfPresent(retryAfter, forKey: .retryAfter)
        case .resyncRequired(let id, let lastSeq):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(lastSeq, forKey: .lastSeq)
        case .inboxSubscribed(let cursor), .inboxResyncRequired(let cursor):
            try container.encode(cursor, forKey: .cursor)
        case .conversationActivity(let activity, let cursor):
            try activity.encode(to: encoder)
            try container.encode(cursor, forKey: .cursor)
        case .memberAdded(let conversation, let cursor):
            try container.encode(conversation, forKey: .conversation)
            try container.encode(cursor, forKey: .cursor)
        case .inboxRead(let id, let userId, let seq, let unreadCount, let unreadMentions, let cursor):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(userId, forKey: .userId)
            try container.encode(seq, forKey: .seq)
            try container.encode(unreadCount, forKey: .unreadCount)
            try container.encode(unreadMentions, forKey: .unreadMentions)
            try container.encode(cursor, forKey: .cursor)
        case .inboxMemberRemoved(let id, let cursor):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(cursor, forKey: .cursor)
        case .pong:
            break
        }
    }
}

/// One conversation's line in the caller's inbox after a change: what a
/// conversation list shows of it, without its title and members (a
/// `member_added` frame or `GET /v1/conversations/{id}` has those).
public struct InboxActivity: Codable, Sendable, Equatable {
    public var conversationId: UUID
    /// The conversation's newest seq and version, and its place in the
    /// list (see `Conversation.activity`).
    public var lastSeq: Int64
    public var version: Int64
    public var activity: Int64
    /// The caller's read marker, unread count and unread mentions (as in
    /// `Conversation`).
    public var readSeq: Int64
    public var unreadCount: Int64
    public var unreadMentions: Int64
    /// The newest message, as a preview; nil while the conversation is empty.
    public var lastMessage: Message?

    public init(
        conversationId: UUID, lastSeq: Int64, version: Int64, activity: Int64, readSeq: Int64, unreadCount: Int64,
        unreadMentions: Int64 = 0, lastMessage: Message?
    ) {
        self.conversationId = conversationId
        self.lastSeq = lastSeq
        self.version = version
        self.activity = activity
        self.readSeq = readSeq
        self.unreadCount = unreadCount
        self.unreadMentions = unreadMentions
        self.lastMessage = lastMessage
    }

    /// The line of `conversation` in its member's list.
    public init(_ conversation: Conversation) {
        self.init(
            conversationId: conversation.id, lastSeq: conversation.lastSeq, version: conversation.version,
            activity: conversation.activity, readSeq: conversation.readSeq, unreadCount: conversation.unreadCount,
            unreadMentions: conversation.unreadMentions, lastMessage: conversation.lastMessage)
    }

    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case lastSeq = "last_seq"
        case version
        case activity
        case readSeq = "read_seq"
        case unreadCount = "unread_count"
        case unreadMentions = "unread_mentions"
        case lastMessage = "last_message"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        conversationId = try container.decode(UUID.self, forKey: .conversationId)
        lastSeq = try container.decode(Int64.self, forKey: .lastSeq)
        version = try container.decode(Int64.self, forKey: .version)
        activity = try container.decode(Int64.self, forKey: .activity)
        readSeq = try container.decode(Int64.self, forKey: .readSeq)
        unreadCount = try container.decode(Int64.self, forKey: .unreadCount)
        // Absent from servers before mentions: 0.
        unreadMentions = try container.decodeIfPresent(Int64.self, forKey: .unreadMentions) ?? 0
        lastMessage = try container.decodeIfPresent(Message.self, forKey: .lastMessage)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.lowercased, forKey: .conversationId)
        try container.encode(lastSeq, forKey: .lastSeq)
        try container.encode(version, forKey: .version)
        try container.encode(activity, forKey: .activity)
        try container.encode(readSeq, forKey: .readSeq)
        try container.encode(unreadCount, forKey: .unreadCount)
        try container.encode(unreadMentions, forKey: .unreadMentions)
        try container.encode(lastMessage, forKey: .lastMessage)
    }
}

extension ServerFrame: JSONWritable {
    // Keys in sorted order, as the encoder writes them.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        switch self {
        case .subscribed(let id, let lastSeq, let version):
            writer.key("conversation_id")
            writer.uuid(id)
            writer.key("last_seq")
            writer.number(lastSeq)
            writeType(to: &writer)
            writer.key("version")
            writer.number(version)
        case .message(let message), .messageUpdated(let message):
            writer.key("message")
            message.write(to: &writer)
            writeType(to: &writer)
        case .ack(let clientId, let message, let replayed):
            writer.key("client_id")
            writer.string(clientId)
            writer.key("message")
            message.write(to: &writer)
            writer.key("replayed")
            writer.bool(replayed)
            writeType(to: &writer)
        case .read(let id, let userId, let seq):
            writer.key("conversation_id")
            writer.uuid(id)
            writer.key("seq")
            writer.number(seq)
            writeType(to: &writer)
            writer.key("user_id")
            writer.string(userId)
        case .typing(let id, let userId):
            writer.key("conversation_id")
            writer.uuid(id)
            writeType(to: &writer)
            writer.key("user_id")
            writer.string(userId)
        case .memberRemoved(let id):
            writer.key("conversation_id")
            writer.uuid(id)
            writeType(to: &writer)
        case .presence(let id, let presence):
            writer.key("conversation_id")
            writer.uuid(id)
            writer.key("last_seen_at")
            writer.timestamp(presence.lastSeenAt)
            writer.key("online")
            writer.bool(presence.online)
            writeType(to: &writer)
            writer.key("user_id")
            writer.string(presence.userId)
        case .memberUpdated(let id, let userId, let role):
            writer.key("conversation_id")
            writer.uuid(id)
            writer.key("role")
            writer.string(role.rawValue)
            writeType(to: &writer)
            writer.key("user_id")
            writer.string(userId)
        case .userUpdated(let profile):
            writeType(to: &writer)
            writer.key("user")
            profile.write(to: &writer)
        case .conversationUpdated(let details, let cursor):
            writer.key("conversation_id")
            writer.uuid(details.conversationId)
            if let cursor {
                writer.key("cursor")
                writer.string(cursor)
            }
            details.writeFields(to: &writer)
            writeType(to: &writer)
        case .error(let code, let message, let ref, let retryAfter):
            writer.key("code")
            writer.string(code.rawValue)
            writer.key("message")
            writer.string(message)
            if let ref {
                writer.key("ref")
                writer.string(ref)
            }
            if let retryAfter {
                writer.key("retry_after")
                writer.number(Int64(retryAfter))
            }
            writeType(to: &writer)
        case .resyncRequired(let id, let lastSeq):
            writer.key("conversation_id")
            writer.uuid(id)
            writer.key("last_seq")
            writer.number(lastSeq)
            writeType(to: &writer)
        case .inboxSubscribed(let cursor):
            writer.key("cursor")
            writer.string(cursor)
            writeType(to: &writer)
        case .inboxResyncRequired(let cursor):
            writer.key("cursor")
            writer.string(cursor)
            writeType(to: &writer)
        case .conversationActivity(let line, let cursor):
            writer.key("activity")
            writer.number(line.activity)
            writer.key("conversation_id")
            writer.uuid(line.conversationId)
            writer.key("cursor")
            writer.string(cursor)
            writer.key("last_message")
            if let lastMessage = line.lastMessage { lastMessage.write(to: &writer) } else { writer.null() }
            writer.key("last_seq")
            writer.number(line.lastSeq)
            writer.key("read_seq")
            writer.number(line.readSeq)
            writeType(to: &writer)
            writer.key("unread_count")
            writer.number(line.unreadCount)
            writer.key("unread_mentions")
            writer.number(line.unreadMentions)
            writer.key("version")
            writer.number(line.version)
        case .memberAdded(let conversation, let cursor):
            writer.key("conversation")
            conversation.write(to: &writer)
            writer.key("cursor")
            writer.string(cursor)
            writeType(to: &writer)
        case .inboxRead(let id, let userId, let seq, let unreadCount, let unreadMentions, let cursor):
            writer.key("conversation_id")
            writer.uuid(id)
            writer.key("cursor")
            writer.string(cursor)
            writer.key("seq")
            writer.number(seq)
            writeType(to: &writer)
            writer.key("unread_count")
            writer.number(unreadCount)
            writer.key("unread_mentions")
            writer.number(unreadMentions)
            writer.key("user_id")
            writer.string(userId)
        case .inboxMemberRemoved(let id, let cursor):
            writer.key("conversation_id")
            writer.uuid(id)
            writer.key("cursor")
            writer.string(cursor)
            writeType(to: &writer)
        case .pong:
            writeType(to: &writer)
        }
        writer.endObject()
    }

    private func writeType(to writer: inout JSONWriter) {
        writer.key("type")
        writer.string(type)
    }
}

/// The close codes of the live stream besides the standard ones (1001 going
/// away, 1007 invalid UTF-8, 1008 no authentication, 1009 frame too large).
public enum StreamCloseCode {
    /// The token expired or is not valid: authenticate again and reconnect.
    public static let unauthorized = 4401
    /// The client did not read fast enough and its queue filled: reconnect
    /// and resume each conversation from the last seq received.
    public static let tooSlow = 4408
    /// The instance has as many sockets open as it takes (1013, "try again
    /// later"): reconnect after a moment, to this or another instance.
    public static let tryAgainLater = 1013
}

extension UUID {
    /// The form every id takes on the wire.
    var lowercased: String { uuidString.lowercased() }
}
