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

/// One send, as `ScrollbackStore.send` takes it.
struct Send: Sendable, Equatable {
    var conversation: UUID
    var sender: UserID
    var body: String
    var clientID: String?
    var replyTo: Int64?
    /// Upload ids, in order, distinct.
    var attachments: [UUID] = []
    /// The app's own data and kind of message, validated.
    var data: CustomData? = nil
    var type: String? = nil
}

extension ScrollbackStore {
    /// Appends a message, or returns the one sent earlier with the same
    /// `client_id`.
    ///
    /// Every send is stored by one SQL function, `store_sends`
    /// (`sql/010_one_send_function.sql`), whether alone, replying or in a
    /// group: it locks the conversation row, then checks with a snapshot
    /// taken after that lock that the sender is still a member (a removal
    /// that committed while the send waited wins), looks for an earlier
    /// message with this `client_id`, and only when there is none inserts the
    /// message with the conversation's next seq and version. Seqs therefore
    /// commit in order with no hole, and a replay is a plain read, never a
    /// failed insert.
    ///
    /// With `replyTo`, the message answers that seq: it must be a message of
    /// the conversation that is not deleted. The reply joins the parent's
    /// thread, and the thread's root takes the version after the reply's,
    /// with its summary (`reply_count`, `last_reply_at`, participants)
    /// updated in the same statement.
    ///
    /// With `attachments` (distinct upload ids), each must be a complete
    /// upload of the sender in this conversation, not expired and not sent
    /// before; they become the message's attachments, in this order.
    ///
    /// Unless grouping is off, a send is committed with the sends that
    /// arrive with it (`SendGroups`), keeping all of the above.
    ///
    /// `data` and `type` are stored as given (the caller checked `type`
    /// with ``MessageType``); a replay answers the original message's.
    public func send(
        to id: UUID, from sender: UserID, body: String, clientID: String?, replyTo: Int64? = nil,
        attachments: [UUID] = [], data: CustomData? = nil, type: String? = nil
    ) async throws -> SendOutcome {
        // A write drops the conversation's cached pages before it answers or throws (PageCache).
        defer { pageCache.invalidate(id) }
        let send = Send(
            conversation: id, sender: sender, body: body, clientID: clientID, replyTo: replyTo,
            attachments: attachments, data: data, type: type)
        // (A group stands for "no client_id" with an empty one, which the API never accepts.)
        if clientID != "", let sendGroups { return try await sendGroups.send(send, store: self) }
        return try await storeSends([send], as: .send).first!.get()
    }

    /// Stores `sends` by one call of `store_sends` and answers each, in
    /// order, as a send alone is answered; the messages are read back by the
    /// next statement on the connection, which proves the commit.
    ///
    /// An error about one send (not a member, a reply to a deleted message,
    /// a body conflict) is that send's result. A statement PostgreSQL
    /// refused as a whole is thrown, as `SendGroupRefused` when `refusable`
    /// (a group, whose sends are then stored again one by one).
    func storeSends(
        _ sends: [Send], as name: StatementName, refusable: Bool = false
    ) async throws -> [Result<SendOutcome, any Error>] {
        try await withConnection(writes: true, as: name) { [logger, metrics, limit = options.deadline] connection in
            var rows: [SendRow] = []
            do {
                if sends.count == 1, let send = sends.first {
                    for try await row in try await connection.execute(SendStatement(send), logger: logger) {
                        rows.append(row)
                    }
                } else {
                    for try await row in try await connection.execute(SendGroupStatement(sends: sends), logger: logger) {
                        rows.append(row)
                    }
                }
            } catch let error as PSQLError where refusable && SendGroupRefused.refuses(error) {
                if error.sqlState == "55P03" { metrics.timedOut(.lockTimeout) }
                if error.sqlState == "57014" { metrics.timedOut(.statementTimeout) }
                throw SendGroupRefused(error: error)
            }
            let stored = rows.compactMap { row in row.seq.map { StoredMessagesStatement.Key(position: row.position, seq: $0) } }
            let messages = try await Self.committed(on: connection, logger: logger, within: limit) {
                var messages: [Int: Message] = [:]
                guard !stored.isEmpty else { return messages }
                let statement = StoredMessagesStatement(sends: sends, keys: stored)
                for try await (position, message) in try await connection.execute(statement, logger: logger) {
                    messages[position] = message
                }
                return messages
            }
            var outcomes = [Result<SendOutcome, any Error>](repeating: .failure(MalformedRow()), count: sends.count)
            for row in rows where sends.indices.contains(row.position) {
                outcomes[row.position] = Result {
                    try row.outcome(replyTo: sends[row.position].replyTo, message: messages[row.position])
                }
            }
            return outcomes
        }
    }
}

/// What `store_sends` answered for one send.
struct SendRow: Sendable {
    /// The send's index in its call.
    var position: Int
    var isMember: Bool
    /// Whether a reply's parent can be answered: `usable`, `missing` or `deleted`.
    var parent: String
    /// Whether every attachment is an upload the send may carry.
    var attachmentsUsable: Bool
    var created: Bool
    var sameBody: Bool
    /// The message stored, or the earlier one with the send's `client_id`.
    var seq: Int64?
    /// Slow mode held the send back: the seconds to wait.
    var slowWait: Double?

    /// The send's answer, with its message as read back after the commit:
    /// the message it stored, or the earlier one with its `client_id`.
    func outcome(replyTo: Int64?, message: Message?) throws -> SendOutcome {
        guard isMember else { throw StoreError.conversationNotFound }
        if let slowWait { throw StoreError.slowMode(retryAfter: slowWait) }
        guard seq != nil else {
            if let replyTo, parent == "missing" { throw StoreError.replyTargetMissing(replyTo) }
            if parent == "deleted" { throw StoreError.replyTargetDeleted }
            if !attachmentsUsable { throw StoreError.attachmentsUnusable }
            throw MalformedRow()
        }
        guard let message else { throw MalformedRow() }
        if created { return .created(message) }
        // A deleted message is the retry's outcome too: resending must not bring it back.
        guard sameBody || message.deleted else { throw StoreError.idempotencyConflict }
        return .replayed(message)
    }

    static func decode(_ row: PostgresRow, positionOffset: Int64) throws -> SendRow {
        var reader = RowReader(row)
        return SendRow(
            position: Int(try reader.required(Int64.self) - positionOffset), isMember: try reader.required(Bool.self),
            parent: try reader.required(String.self), attachmentsUsable: try reader.required(Bool.self),
            created: try reader.required(Bool.self),
            sameBody: try reader.required(Bool.self), seq: try reader.next(Int64.self),
            slowWait: try reader.next(Double.self))
    }
}

/// The SQL of every send: `store_sends` on its arguments (SQL expressions
/// of its arrays: one value per send, then the attachments of all sends
/// with the position of the send of each), and the change feed's
/// notification of the conversations it moved (`FeedEvent.notifyStored`),
/// delivered at commit.
enum SendSQL {
    /// The roles slow mode does not hold back, as SQL.
    static let slowModeExempt = MemberRole.allCases.filter { $0.may(.skipSlowMode) }.map { "'\($0.rawValue)'" }
        .joined(separator: ", ")

    static func text(
        conversations: String, senders: String, bodies: String, clientIDs: String, replyTos: String,
        attachments: String, attachmentSends: String, datas: String, types: String, notifying: Bool = true
    ) -> String {
        let notification = notifying ? ",\n       (\(FeedEvent.notifyStored(from: "s")))" : ""
        return """
            WITH s AS MATERIALIZED (
                SELECT * FROM store_sends(
                    \(conversations), \(senders), \(bodies), \(clientIDs), \(replyTos), \(attachments), \(attachmentSends),
                    \(APILimits.threadParticipantsShown), ARRAY[\(slowModeExempt)], \(datas), \(types))
            )
            SELECT s.send_position, s.is_member, s.parent_state, s.attachments_usable, s.created, s.same_body,
                   s.seq, s.slow_wait\(notification)
            FROM s
            """
    }

    /// A send alone, with one value per parameter (the `send` statement
    /// pgbench runs beside the server).
    static func alone(notifying: Bool = true) -> String {
        text(
            conversations: "ARRAY[$1::uuid]", senders: "ARRAY[$2::text]", bodies: "ARRAY[$3::text]",
            clientIDs: "ARRAY[$4::text]", replyTos: "ARRAY[$5::int8]", attachments: "$6::uuid[]",
            attachmentSends: "array_fill(1, ARRAY[cardinality($6::uuid[])])", datas: "ARRAY[$7::jsonb]",
            types: "ARRAY[$8::text]", notifying: notifying)
    }
}

/// A send alone, prepared once per connection.
struct SendStatement: PostgresPreparedStatement {
    static let name = "scrollback_send_v8"
    static let sql = SendSQL.alone()
    static let parameters = ["conversation_id", "sender", "body", "client_id", "reply_to", "attachments", "data", "type"]
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .text, .text, .text, .int8, .uuidArray, .text, .text]

    var send: Send

    init(_ send: Send) {
        self.send = send
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 8)
        bindings.append(send.conversation)
        bindings.append(send.sender.rawValue)
        bindings.append(send.body)
        bindings.append(send.clientID)
        bindings.append(send.replyTo)
        bindings.append(send.attachments)
        bindings.append(send.data?.json)
        bindings.append(send.type)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> SendRow {
        try SendRow.decode(row, positionOffset: 1)
    }
}

/// The sends of a group, prepared once per connection.
struct SendGroupStatement: PostgresPreparedStatement {
    static let name = "scrollback_send_group_v5"
    /// A `client_id` of `''` and a `reply_to` of 0 are none: arrays of the
    /// driver cannot hold NULL, a `client_id` is never empty and a seq is
    /// never 0. Likewise a `data` or `type` of `''` (no JSON and no type is
    /// empty); both arrays are empty when no send of the group has any.
    static let sql = SendSQL.text(
        conversations: "$1", senders: "$2", bodies: "$3", clientIDs: "array_replace($4, '', NULL)",
        replyTos: "array_replace($5, 0::int8, NULL)", attachments: "$6", attachmentSends: "$7",
        datas: "array_replace($8, '', NULL)::jsonb[]", types: "array_replace($9, '', NULL)")
    static let bindingDataTypes: [PostgresDataType] = [
        .uuidArray, .textArray, .textArray, .textArray, .int8Array, .uuidArray, .int4Array, .textArray, .textArray,
    ]

    var sends: [Send]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 9)
        bindings.append(sends.map(\.conversation))
        bindings.append(sends.map(\.sender.rawValue))
        bindings.append(sends.map(\.body))
        bindings.append(sends.map { $0.clientID ?? "" })
        bindings.append(sends.map { $0.replyTo ?? 0 })
        bindings.append(sends.flatMap(\.attachments))
        bindings.append(sends.enumerated().flatMap { index, send in send.attachments.map { _ in Int32(index + 1) } })
        // Empty unless a send carries them: the common group binds nothing more.
        bindings.append(sends.contains { $0.data != nil } ? sends.map { $0.data?.json ?? "" } : [])
        bindings.append(sends.contains { $0.type != nil } ? sends.map { $0.type ?? "" } : [])
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> SendRow {
        try SendRow.decode(row, positionOffset: 1)
    }
}

/// The messages a call of `store_sends` stored or found, read back once its
/// commit is done, as every statement that returns messages reads them.
struct StoredMessagesStatement: PostgresPreparedStatement {
    struct Key: Sendable {
        var position: Int
        var seq: Int64
    }

    static let name = "scrollback_stored_messages_v1"
    static let sql = """
        SELECT r.position, \(MessageRow.positional("m", conversation: "m.conversation_id", readers: "ARRAY[m.sender]"))
        FROM unnest($1::uuid[], $2::int8[], $3::int8[]) AS r (conversation_id, seq, position)
        JOIN messages m ON m.conversation_id = r.conversation_id AND m.seq = r.seq
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuidArray, .int8Array, .int8Array]

    var sends: [Send]
    var keys: [Key]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 3)
        bindings.append(keys.map { sends[$0.position].conversation })
        bindings.append(keys.map(\.seq))
        bindings.append(keys.map { Int64($0.position) })
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> (Int, Message) {
        var reader = RowReader(row)
        let position = Int(try reader.required(Int64.self))
        guard sends.indices.contains(position), let message = try reader.message(in: sends[position].conversation)
        else { throw MalformedRow() }
        return (position, message)
    }
}
