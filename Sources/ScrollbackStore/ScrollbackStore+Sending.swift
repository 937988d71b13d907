import Foundation
import PostgresNIO
import ScrollbackModels

/// The result of a send: a new message, or the original one when the same
/// `client_id` was sent before (a replay is a normal result, not an error).
public enum SendOutcome: Sendable, Equatable {
    case created(Message)
    case replayed(Message)

    public var message: Message {
        switch self {
        case .created(let message), .replayed(let message): message
        }
    }
}

extension SendOutcome {
    /// A send's answer from what its statement found: the message it stored,
    /// or the earlier one with its `client_id` (`sameBody`: sent with the
    /// same body).
    static func answer(_ message: Message, created: Bool, sameBody: Bool) throws -> SendOutcome {
        if created { return .created(message) }
        // A deleted message is the retry's outcome too: resending must not bring it back.
        guard sameBody || message.deleted else { throw StoreError.idempotencyConflict }
        return .replayed(message)
    }
}

extension ScrollbackStore {
    /// Appends a message, or returns the one sent earlier with the same
    /// `client_id`.
    ///
    /// One statement: it locks the conversation row, then checks under that
    /// lock that the sender is still a member (a removal that committed while
    /// the send waited wins), looks for an earlier message with this
    /// `client_id`, and only when there is none inserts the message with the
    /// conversation's next seq and version. Seqs therefore commit in order with
    /// no hole, and a replay is a plain read, never a failed insert.
    ///
    /// With `replyTo`, the message answers that seq: it must be a message of
    /// the conversation that is not deleted. The reply joins the parent's
    /// thread, and the thread's root takes the version after the reply's,
    /// with its summary (`reply_count`, `last_reply_at`, participants)
    /// updated in the same statement.
    ///
    /// Unless grouping is off, a send that is not a reply is committed with
    /// the sends that arrive with it (`SendGroups`), keeping all of the above.
    public func send(
        to id: UUID, from sender: UserID, body: String, clientID: String?, replyTo: Int64? = nil
    ) async throws -> SendOutcome {
        // A write drops the conversation's cached pages before it answers or throws (PageCache).
        defer { pageCache.invalidate(id) }
        let send = SendGroups.Send(conversation: id, sender: sender, body: body, clientID: clientID)
        // (A group stands for "no client_id" with an empty one, which the API never accepts.)
        if replyTo == nil, clientID != "", let sendGroups { return try await sendGroups.send(send, store: self) }
        return try await sendAlone(send, replyTo: replyTo)
    }

    /// A send by its own statement (see `send(to:from:body:clientID:replyTo:)`).
    func sendAlone(_ send: SendGroups.Send, replyTo: Int64? = nil) async throws -> SendOutcome {
        for _ in 0..<Self.retryAttempts {
            let statement = SendStatement(
                conversation: send.conversation, sender: send.sender, body: send.body, clientID: send.clientID)
            let row =
                if let replyTo {
                    try await rows(ReplyStatement(send: statement, replyTo: replyTo), writes: true, as: .send).first
                } else {
                    try await rows(statement, writes: true, as: .send).first
                }
            guard let row, row.isMember else { throw StoreError.conversationNotFound }
            guard let message = row.message else {
                if let replyTo, row.parent != .usable {
                    throw row.parent == .missing ? StoreError.replyTargetMissing(replyTo) : StoreError.replyTargetDeleted
                }
                // The same client_id committed by a concurrent send after this
                // statement's snapshot: the next statement sees it.
                continue
            }
            return try .answer(message, created: row.created, sameBody: row.sameBody)
        }
        throw StoreError.unavailable
    }
}

/// The SQL of a send, with or without a parent: one text, so a reply keeps
/// every rule of a send (the lock, the membership check under it,
/// idempotency by `client_id`, the notification).
enum SendSQL {
    /// `$1` conversation, `$2` sender, `$3` body, `$4` client_id, and for a
    /// reply `$5` the parent's seq.
    static func text(replying: Bool) -> String {
        // A reply also needs its parent, usable (not deleted); the root of
        // its thread takes the version after the reply's.
        let parent =
            replying
            ? """
            , parent AS (
                SELECT seq, COALESCE(thread_root, seq) AS root, deleted FROM messages
                WHERE conversation_id = (SELECT id FROM conv) AND seq = $5
            )
            """ : ""
        let usable = replying ? " AND EXISTS (SELECT 1 FROM parent WHERE NOT deleted)" : ""
        let threadColumns = replying ? ", reply_to, thread_root" : ""
        let threadValues = replying ? ", (SELECT seq FROM parent), (SELECT root FROM parent)" : ""
        let newVersion = replying ? "ins.version + 1" : "ins.version"
        let root =
            replying
            ? """
            , root AS (
                UPDATE messages r
                SET reply_count = r.reply_count + 1, last_reply_at = ins.created_at, version = ins.version + 1,
                    thread_participants = CASE
                        WHEN ins.sender = ANY(COALESCE(r.thread_participants, '{}'))
                          OR cardinality(COALESCE(r.thread_participants, '{}')) >= \(APILimits.threadParticipantsShown)
                        THEN r.thread_participants
                        ELSE array_append(COALESCE(r.thread_participants, '{}'), ins.sender) END
                FROM ins WHERE r.conversation_id = ins.conversation_id AND r.seq = ins.thread_root
                RETURNING r.seq
            )
            """ : ""
        let parentState =
            replying
            ? "CASE WHEN NOT EXISTS (SELECT 1 FROM parent) THEN 'missing' WHEN (SELECT deleted FROM parent) THEN 'deleted' ELSE 'usable' END"
            : "'usable'"
        return """
            WITH conv AS (
                SELECT id, last_seq, version FROM conversations WHERE id = $1
                FOR NO KEY UPDATE
            ), member AS (
                SELECT user_id FROM members
                WHERE conversation_id = (SELECT id FROM conv) AND user_id = $2
                FOR KEY SHARE
            ), existing AS (
                SELECT m.*, COALESCE(m.sent_body_hash = md5($3), m.body = $3) AS same_body
                FROM messages m
                WHERE m.conversation_id = (SELECT id FROM conv) AND m.sender = $2 AND m.client_id = $4
                  AND EXISTS (SELECT 1 FROM member)
            )\(parent), ins AS (
                INSERT INTO messages AS m (conversation_id, seq, sender, body, client_id, version, sent_body_hash\(threadColumns))
                SELECT conv.id, conv.last_seq + 1, $2, $3, $4, conv.version + 1,
                       CASE WHEN $4 IS NULL THEN NULL ELSE md5($3) END\(threadValues)
                FROM conv
                WHERE EXISTS (SELECT 1 FROM member) AND NOT EXISTS (SELECT 1 FROM existing)\(usable)
                ON CONFLICT (conversation_id, sender, client_id) WHERE client_id IS NOT NULL DO NOTHING
                RETURNING m.*
            )\(root), bump AS (
                UPDATE conversations c
                SET last_seq = ins.seq, version = \(newVersion), activity = nextval('conversation_activity'),
                    changed_xid = pg_current_xact_id()
                FROM ins WHERE c.id = ins.conversation_id
                RETURNING c.id, \(FeedEvent.notify("m", "c.id::text", "ins.seq::text", replying ? "(ins.version + 1)::text" : "ins.version::text"))
            )
            SELECT EXISTS (SELECT 1 FROM member), r.created, r.same_body, \(parentState),
                   \(MessageRow.positional("r", conversation: "$1", readers: "ARRAY[$2]"))
            FROM (SELECT) AS one
            LEFT JOIN (
                SELECT true AS created, true AS same_body, \(MessageRow.positional("m")) FROM ins m
                UNION ALL
                SELECT false, m.same_body, \(MessageRow.positional("m")) FROM existing m
            ) r ON true
            """
    }
}

/// A send, prepared once per connection. It locks the conversation row,
/// then checks under that lock that the sender is still a member, looks for
/// an earlier message with this `client_id`, and only when there is none
/// inserts the message with the conversation's next seq and version, and
/// notifies the change feed (delivered at commit).
struct SendStatement: PostgresPreparedStatement {
    static let name = "scrollback_send_v4"
    static let sql = SendSQL.text(replying: false)
    static let parameters = ["conversation_id", "sender", "body", "client_id"]
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .text, .text, .text]

    var conversation: UUID
    var sender: UserID
    var body: String
    var clientID: String?

    /// Whether a reply's parent can be answered.
    enum Parent: String, Sendable {
        case usable, missing, deleted
    }

    struct Row: Sendable {
        var isMember: Bool
        var created: Bool
        var sameBody: Bool
        var parent: Parent
        var message: Message?
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(conversation)
        bindings.append(sender.rawValue)
        bindings.append(body)
        bindings.append(clientID)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var reader = RowReader(row)
        return Row(
            isMember: try reader.required(Bool.self), created: try reader.next(Bool.self) ?? false,
            sameBody: try reader.next(Bool.self) ?? false,
            parent: Parent(rawValue: try reader.required(String.self)) ?? .missing,
            message: try reader.message(in: conversation))
    }
}

/// A reply: a send with the parent's seq as `$5`.
struct ReplyStatement: PostgresPreparedStatement {
    static let name = "scrollback_reply_v1"
    static let sql = SendSQL.text(replying: true)
    static let bindingDataTypes: [PostgresDataType] = SendStatement.bindingDataTypes + [.int8]

    var send: SendStatement
    var replyTo: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = try send.makeBindings()
        bindings.append(replyTo)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> SendStatement.Row {
        try send.decodeRow(row)
    }
}
