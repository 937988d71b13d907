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
    /// Appends a message. Its seq is taken from the conversation's counter in
    /// the same statement that inserts it, under the conversation row's lock,
    /// so seqs commit in order with no hole: a reader never sees seq n+1
    /// before seq n.
    public func send(
        to id: UUID, from sender: String, body: String, clientID: String?
    ) async throws -> SendOutcome {
        do {
            return .created(try await insertMessage(to: id, from: sender, body: body, clientID: clientID))
        } catch let error as PSQLError where error.sqlState == "23505" && clientID != nil {
            // The client_id was used before. The failed statement rolled back
            // whole, counter included, so no seq was spent.
            let original = try await messageWithClientID(clientID!, in: id, from: sender)
            guard original.body == body else { throw StoreError.idempotencyConflict }
            return .replayed(original)
        }
    }

    private func insertMessage(to id: UUID, from sender: String, body: String, clientID: String?) async throws -> Message {
        try await withStoreErrors {
            let rows = try await client.query(
                """
                WITH c AS (
                    UPDATE conversations
                    SET last_seq = last_seq + 1, activity = nextval('conversation_activity')
                    WHERE id = \(id)
                      AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(sender))
                    RETURNING id, last_seq
                )
                INSERT INTO messages (conversation_id, seq, sender, body, client_id)
                SELECT id, last_seq, \(sender), \(body), \(clientID) FROM c
                RETURNING seq, created_at
                """,
                logger: logger)
            for try await (seq, createdAt) in rows.decode((Int64, Date).self) {
                return Message(
                    conversationId: id, seq: seq, sender: sender, body: body, clientId: clientID, createdAt: createdAt)
            }
            throw StoreError.conversationNotFound
        }
    }

    private func messageWithClientID(_ clientID: String, in id: UUID, from sender: String) async throws -> Message {
        try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT m.seq, m.body, m.created_at FROM messages m
                WHERE m.conversation_id = \(id) AND m.sender = \(sender) AND m.client_id = \(clientID)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(sender))
                """,
                logger: logger)
            for try await (seq, body, createdAt) in rows.decode((Int64, String, Date).self) {
                return Message(
                    conversationId: id, seq: seq, sender: sender, body: body, clientId: clientID, createdAt: createdAt)
            }
            throw StoreError.conversationNotFound
        }
    }

    /// A page of history, newest first, with the conversation's last seq read
    /// in the same statement (one snapshot, one round trip).
    public func page(of id: UUID, for user: String, anchor: PageAnchor, limit: Int) async throws -> MessagePage {
        let scan = PageScan(anchor: anchor, limit: limit)
        return try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT c.last_seq, m.seq, m.sender, m.body, m.client_id, m.created_at
                FROM conversations c
                LEFT JOIN LATERAL (
                    (SELECT seq, sender, body, client_id, created_at FROM messages
                     WHERE conversation_id = c.id AND seq <= \(scan.olderFrom)
                     ORDER BY seq DESC LIMIT \(scan.olderLimit))
                    UNION ALL
                    (SELECT seq, sender, body, client_id, created_at FROM messages
                     WHERE conversation_id = c.id AND seq >= \(scan.newerFrom)
                     ORDER BY seq ASC LIMIT \(scan.newerLimit))
                ) m ON true
                WHERE c.id = \(id)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = \(user))
                """,
                logger: logger)
            var lastSeq: Int64?
            var older: [Message] = []
            var newer: [Message] = []
            for try await (last, seq, sender, body, clientID, createdAt) in rows.decode(
                (Int64, Int64?, String?, String?, String?, Date?).self)
            {
                lastSeq = last
                guard let seq, let sender, let body, let createdAt else { continue }
                let message = Message(
                    conversationId: id, seq: seq, sender: sender, body: body, clientId: clientID, createdAt: createdAt)
                if seq <= scan.olderFrom && scan.olderLimit > 0 { older.append(message) } else { newer.append(message) }
            }
            guard let lastSeq else { throw StoreError.conversationNotFound }
            // UNION ALL promises no order across its branches: restore each side's.
            older.sort { $0.seq > $1.seq }
            newer.sort { $0.seq < $1.seq }
            let page = PageAssembly.assemble(
                anchor: anchor, limit: limit, lastSeq: lastSeq, older: older, newer: newer, seq: \.seq)
            return MessagePage(messages: page.rows, hasOlder: page.hasOlder, hasNewer: page.hasNewer, lastSeq: lastSeq)
        }
    }
}
