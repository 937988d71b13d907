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
    public func send(
        to id: UUID, from sender: UserID, body: String, clientID: String?
    ) async throws -> SendOutcome {
        for _ in 0..<Self.retryAttempts {
            let statement = SendStatement(conversation: id, sender: sender, body: body, clientID: clientID)
            guard let row = try await rows(statement, writes: true, as: .send).first, row.isMember else {
                throw StoreError.conversationNotFound
            }
            guard let message = row.message else {
                // The same client_id committed by a concurrent send after this
                // statement's snapshot: the next statement sees it.
                continue
            }
            if row.created { return .created(message) }
            // A deleted message is the retry's outcome too: resending must not bring it back.
            guard row.sameBody || message.deleted else { throw StoreError.idempotencyConflict }
            return .replayed(message)
        }
        throw StoreError.unavailable
    }
}

/// A send, prepared once per connection. It locks the conversation row,
/// then checks under that lock that the sender is still a member, looks for
/// an earlier message with this `client_id`, and only when there is none
/// inserts the message with the conversation's next seq and version, and
/// notifies the change feed (delivered at commit).
struct SendStatement: PostgresPreparedStatement {
    static let name = "scrollback_send_v3"
    static let sql = """
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
        ), ins AS (
            INSERT INTO messages AS m (conversation_id, seq, sender, body, client_id, version, sent_body_hash)
            SELECT conv.id, conv.last_seq + 1, $2, $3, $4, conv.version + 1,
                   CASE WHEN $4 IS NULL THEN NULL ELSE md5($3) END
            FROM conv
            WHERE EXISTS (SELECT 1 FROM member) AND NOT EXISTS (SELECT 1 FROM existing)
            ON CONFLICT (conversation_id, sender, client_id) WHERE client_id IS NOT NULL DO NOTHING
            RETURNING m.*
        ), bump AS (
            UPDATE conversations c
            SET last_seq = ins.seq, version = ins.version, activity = nextval('conversation_activity'),
                changed_xid = pg_current_xact_id()
            FROM ins WHERE c.id = ins.conversation_id
            RETURNING c.id, \(FeedEvent.notify("m", "c.id::text", "ins.seq::text", "ins.version::text"))
        )
        SELECT EXISTS (SELECT 1 FROM member), r.created, r.same_body, \(MessageRow.positional("r"))
        FROM (SELECT) AS one
        LEFT JOIN (
            SELECT true AS created, true AS same_body, \(MessageRow.positional("m")) FROM ins m
            UNION ALL
            SELECT false, m.same_body, \(MessageRow.positional("m")) FROM existing m
        ) r ON true
        """
    static let parameters = ["conversation_id", "sender", "body", "client_id"]
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .text, .text, .text]

    var conversation: UUID
    var sender: UserID
    var body: String
    var clientID: String?

    struct Row: Sendable {
        var isMember: Bool
        var created: Bool
        var sameBody: Bool
        var message: Message?
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 4)
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
            sameBody: try reader.next(Bool.self) ?? false, message: try reader.message(in: conversation))
    }
}
