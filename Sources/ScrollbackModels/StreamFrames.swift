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
    case subscribe(conversationId: UUID, afterSeq: Int64?)
    case unsubscribe(conversationId: UUID)
    /// A send with the validation, limits and idempotency of
    /// `POST /v1/conversations/{id}/messages`; `clientId` is required here
    /// because the `ack` is matched by it.
    case send(conversationId: UUID, body: String, clientId: String)
    /// Moves the sender's read marker (`PUT .../read`).
    case read(conversationId: UUID, seq: Int64)
    /// The sender is typing; never stored.
    case typing(conversationId: UUID)
    case ping

    enum CodingKeys: String, CodingKey {
        case type
        case token
        case conversationId = "conversation_id"
        case afterSeq = "after_seq"
        case body
        case clientId = "client_id"
        case seq
    }

    /// The values of `type`.
    public static let types = ["auth", "subscribe", "unsubscribe", "send", "read", "typing", "ping"]

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "auth":
            self = .auth(token: try container.decode(String.self, forKey: .token))
        case "subscribe":
            self = .subscribe(
                conversationId: try container.decode(UUID.self, forKey: .conversationId),
                afterSeq: try container.decodeIfPresent(Int64.self, forKey: .afterSeq))
        case "unsubscribe":
            self = .unsubscribe(conversationId: try container.decode(UUID.self, forKey: .conversationId))
        case "send":
            self = .send(
                conversationId: try container.decode(UUID.self, forKey: .conversationId),
                body: try container.decode(String.self, forKey: .body),
                clientId: try container.decode(String.self, forKey: .clientId))
        case "read":
            self = .read(
                conversationId: try container.decode(UUID.self, forKey: .conversationId),
                seq: try container.decode(Int64.self, forKey: .seq))
        case "typing":
            self = .typing(conversationId: try container.decode(UUID.self, forKey: .conversationId))
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
        case .subscribe(let id, let afterSeq):
            try container.encode("subscribe", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encodeIfPresent(afterSeq, forKey: .afterSeq)
        case .unsubscribe(let id):
            try container.encode("unsubscribe", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
        case .send(let id, let body, let clientId):
            try container.encode("send", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(body, forKey: .body)
            try container.encode(clientId, forKey: .clientId)
        case .read(let id, let seq):
            try container.encode("read", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(seq, forKey: .seq)
        case .typing(let id):
            try container.encode("typing", forKey: .type)
            try container.encode(id.lowercased, forKey: .conversationId)
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
    /// A frame could not be served. `ref` names what it was about: the
    /// `client_id` of a send, or the conversation of any other frame.
    /// `retryAfter` (code `rate_limited`): seconds to wait before trying
    /// that again.
    case error(code: APIErrorCode, message: String, ref: String?, retryAfter: Int? = nil)
    /// More than ``APILimits/maxStreamBacklog`` messages were missed: page
    /// them over HTTP. The subscription stays live after `lastSeq`.
    case resyncRequired(conversationId: UUID, lastSeq: Int64)
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
    }

    public var type: String {
        switch self {
        case .subscribed: "subscribed"
        case .message: "message"
        case .messageUpdated: "message_updated"
        case .ack: "ack"
        case .read: "read"
        case .typing: "typing"
        case .memberRemoved: "member_removed"
        case .error: "error"
        case .resyncRequired: "resync_required"
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
            self = .read(
                conversationId: try id(), userId: try container.decode(String.self, forKey: .userId),
                seq: try container.decode(Int64.self, forKey: .seq))
        case "typing":
            self = .typing(conversationId: try id(), userId: try container.decode(String.self, forKey: .userId))
        case "member_removed":
            self = .memberRemoved(conversationId: try id())
        case "error":
            self = .error(
                code: try container.decode(APIErrorCode.self, forKey: .code),
                message: try container.decode(String.self, forKey: .message),
                ref: try container.decodeIfPresent(String.self, forKey: .ref),
                retryAfter: try container.decodeIfPresent(Int.self, forKey: .retryAfter))
        case "resync_required":
            self = .resyncRequired(conversationId: try id(), lastSeq: try container.decode(Int64.self, forKey: .lastSeq))
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
        case .error(let code, let message, let ref, let retryAfter):
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
            try container.encodeIfPresent(ref, forKey: .ref)
            try container.encodeIfPresent(retryAfter, forKey: .retryAfter)
        case .resyncRequired(let id, let lastSeq):
            try container.encode(id.lowercased, forKey: .conversationId)
            try container.encode(lastSeq, forKey: .lastSeq)
        case .pong:
            break
        }
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
