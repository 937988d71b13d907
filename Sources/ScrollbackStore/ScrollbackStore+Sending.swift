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
            let row = try await rows(Self.sendStatement(to: id, from: sender, body: body, clientID: clientID), writes: true)
                .first
            guard let columns = row?.makeRandomAccess(), try columns["is_member"].decode(Bool.self) else {
                throw StoreError.conversationNotFound
            }
            guard let message = try MessageRow.decode(columns, alias: "m", conversation: id) else {
                // The same client_id committed by a concurrent send after this
                // statement's snapshot: the next statement sees it.
                continue
            }
            if try columns["created"].decode(Bool.self) { return .created(message) }
            // A deleted message is the retry's outcome too: resending must not bring it back.
            guard try columns["same_body"].decode(Bool.self) || message.deleted else {
                throw StoreError.idempotencyConflict
            }
            return .replayed(message)
        }
        throw StoreError.unavailable
    }

    static func sendStatement(to id: UUID, from sender: UserID, body: String, clientID: String?) -> PostgresQuery {
        """
        WITH conv AS (
            SELECT id, last_seq, version FROM conversations WHERE id = \(id)
            FOR NO KEY UPDATE
        ), member AS (
            SELECT user_id FROM members
            WHERE conversation_id = (SELECT id FROM conv) AND user_id = \(sender.rawValue)
            FOR KEY SHARE
        ), existing AS (
            SELECT m.*, COALESCE(m.sent_body_hash = md5(\(body)), m.body = \(body)) AS same_body
            FROM messages m
            WHERE m.conversation_id = (SELECT id FROM conv) AND m.sender = \(sender.rawValue) AND m.client_id = \(clientID)
              AND EXISTS (SELECT 1 FROM member)
        ), ins AS (
            INSERT INTO messages AS m (conversation_id, seq, sender, body, client_id, version, sent_body_hash)
            SELECT conv.id, conv.last_seq + 1, \(sender.rawValue), \(body), \(clientID), conv.version + 1,
                   CASE WHEN \(clientID)::text IS NULL THEN NULL ELSE md5(\(body)) END
            FROM conv
            WHERE EXISTS (SELECT 1 FROM member) AND NOT EXISTS (SELECT 1 FROM existing)
            ON CONFLICT (conversation_id, sender, client_id) WHERE client_id IS NOT NULL DO NOTHING
            RETURNING m.*
        ), bump AS (
            UPDATE conversations c
            SET last_seq = ins.seq, version = ins.version, activity = nextval('conversation_activity')
            FROM ins WHERE c.id = ins.conversation_id
            RETURNING c.id
        )
        SELECT EXISTS (SELECT 1 FROM member) AS is_member, r.*
        FROM (SELECT) AS one
        LEFT JOIN (
            SELECT true AS created, true AS same_body, \(unescaped: MessageRow.columns("m")) FROM ins m
            UNION ALL
            SELECT false, m.same_body, \(unescaped: MessageRow.columns("m")) FROM existing m
        ) r ON true
        """
    }
}
