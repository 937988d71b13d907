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

/// The result of a delete: the message became a tombstone, or it already was
/// one (deleting again is a no-op that returns it).
public enum DeleteOutcome: Sendable, Equatable {
    case deleted(Message)
    case alreadyDeleted(Message)

    public var message: Message {
        switch self {
        case .deleted(let message), .alreadyDeleted(let message): message
        }
    }
}

extension ScrollbackStore {
    /// Appends a message. Its seq and version are taken from the
    /// conversation's counters in the same statement that inserts it, under the
    /// conversation row's lock, so they commit in order with no hole: a reader
    /// never sees seq n+1 before seq n.
    public func send(
        to id: UUID, from sender: String, body: String, clientID: String?
    ) async throws -> SendOutcome {
        do {
            return .created(try await insertMessage(to: id, from: sender, body: body, clientID: clientID))
        } catch let error as PSQLError where error.sqlState == "23505" && clientID != nil {
            // The client_id was used before. The failed statement rolled back
            // whole, counters included, so no seq was spent.
            let (original, sameBody) = try await messageWithClientID(clientID!, in: id, from: sender, body: body)
            // A deleted message is the retry's outcome too: resending must not bring it back.
            guard sameBody || original.deleted else { throw StoreError.idempotencyConflict }
            return .replayed(original)
        }
    }

    private func insertMessage(to id: UUID, from sender: String, body: String, clientID: String?) async throws -> Message {
        try await withStoreErrors {
            let rows = try await client.query(
                """
                WITH c AS (
                    UPDATE conversations
                    SET last_seq = last_seq + 1, version = version + 1, activity = nextval('conversation_activity')
                    WHERE id = \(id)
                      AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(sender))
                    RETURNING id, last_seq, version
                )
                INSERT INTO messages AS m (conversation_id, seq, sender, body, client_id, version, sent_body_hash)
                SELECT id, last_seq, \(sender), \(body), \(clientID), version,
                       CASE WHEN \(clientID)::text IS NULL THEN NULL ELSE md5(\(body)) END
                FROM c
                RETURNING \(unescaped: MessageRow.columns("m"))
                """,
                logger: logger)
            return try await firstMessage(rows, conversation: id) ?? { throw StoreError.conversationNotFound }()
        }
    }

    /// The message sent earlier with this client_id, and whether `body` is
    /// what was sent then (byte for byte; for messages stored before the
    /// hash was kept, compared with the current body).
    private func messageWithClientID(
        _ clientID: String, in id: UUID, from sender: String, body: String
    ) async throws -> (Message, sameBody: Bool) {
        try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT \(unescaped: MessageRow.columns("m")),
                       COALESCE(m.sent_body_hash = md5(\(body)), m.body = \(body)) AS same_body
                FROM messages m
                WHERE m.conversation_id = \(id) AND m.sender = \(sender) AND m.client_id = \(clientID)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(sender))
                """,
                logger: logger)
            for try await row in rows {
                let columns = row.makeRandomAccess()
                if let message = try MessageRow.decode(columns, alias: "m", conversation: id) {
                    return (message, try columns["same_body"].decode(Bool.self))
                }
            }
            throw StoreError.conversationNotFound
        }
    }

    /// Replaces a message's body; only its sender may. The edit takes the
    /// conversation's next version in the same statement.
    public func edit(_ seq: Int64, in id: UUID, by user: String, body: String) async throws -> Message {
        for _ in 0..<Self.changeAttempts {
            if let edited = try await change(seq, in: id, by: user, newBody: body) { return edited }
            let (message, _) = try await messageForDiagnosis(seq, in: id, for: user)
            guard message.sender == user else { throw StoreError.forbidden("Only the sender can edit a message.") }
            guard !message.deleted else { throw StoreError.messageDeleted }
            // The message committed after the change's snapshot was taken (a
            // send still in flight): it can be edited now, so try again.
        }
        throw StoreError.unavailable
    }

    /// Turns a message into a tombstone: the body is erased from storage, the
    /// seq stays. Its sender or the conversation's creator may; deleting a
    /// tombstone again returns it unchanged.
    public func delete(_ seq: Int64, in id: UUID, by user: String) async throws -> DeleteOutcome {
        for _ in 0..<Self.changeAttempts {
            if let tombstone = try await change(seq, in: id, by: user, newBody: nil) { return .deleted(tombstone) }
            let (message, creator) = try await messageForDiagnosis(seq, in: id, for: user)
            guard message.sender == user || creator == user else {
                throw StoreError.forbidden("Only the sender or the conversation's creator can delete a message.")
            }
            if message.deleted { return .alreadyDeleted(message) }
            // Committed after the change's snapshot: try again (see `edit`).
        }
        throw StoreError.unavailable
    }

    /// A change that found nothing, while a read right after finds the
    /// message changeable, raced a send that committed in between; a few
    /// attempts settle it.
    static let changeAttempts = 3

    /// Edits message `seq` (`newBody`) or deletes it (nil), taking the
    /// conversation's next version, when it is not deleted and `user` may: its
    /// sender, or for a deletion also the conversation's creator. The message
    /// row is locked first (and re-checked if it changed meanwhile), then the
    /// conversation row, so a version is spent only on a change that happens.
    /// Nil when nothing matched.
    private func change(_ seq: Int64, in id: UUID, by user: String, newBody: String?) async throws -> Message? {
        let deleting = newBody == nil
        let body = newBody ?? ""
        return try await withStoreErrors {
            let rows = try await client.query(
                """
                WITH target AS (
                    SELECT m.seq FROM messages m
                    JOIN conversations cv ON cv.id = m.conversation_id
                    WHERE m.conversation_id = \(id) AND m.seq = \(seq) AND NOT m.deleted
                      AND (m.sender = \(user) OR (\(deleting) AND cv.created_by = \(user)))
                      AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user))
                    FOR UPDATE OF m
                ), c AS (
                    UPDATE conversations SET version = version + 1
                    WHERE id = \(id) AND EXISTS (SELECT 1 FROM target)
                    RETURNING version
                )
                UPDATE messages m
                SET version = c.version,
                    body = \(body),
                    deleted = \(deleting),
                    sent_body_hash = CASE WHEN \(deleting) THEN NULL ELSE m.sent_body_hash END,
                    edited_at = CASE WHEN \(deleting) THEN m.edited_at ELSE clock_timestamp() END
                FROM c
                WHERE m.conversation_id = \(id) AND m.seq = \(seq)
                RETURNING \(unescaped: MessageRow.columns("m"))
                """,
                logger: logger)
            return try await firstMessage(rows, conversation: id)
        }
    }

    /// The message and the conversation's creator, for explaining why a
    /// change did not apply.
    private func messageForDiagnosis(_ seq: Int64, in id: UUID, for user: String) async throws -> (Message, String) {
        let found: (Message?, String)? = try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT c.created_by, \(unescaped: MessageRow.columns("m"))
                FROM conversations c
                LEFT JOIN messages m ON m.conversation_id = c.id AND m.seq = \(seq)
                WHERE c.id = \(id)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = \(user))
                """,
                logger: logger)
            for try await row in rows {
                let columns = row.makeRandomAccess()
                return (try MessageRow.decode(columns, alias: "m", conversation: id), try columns["created_by"].decode(String.self))
            }
            return nil
        }
        guard let (message, creator) = found else { throw StoreError.conversationNotFound }
        guard let message else { throw StoreError.messageNotFound }
        return (message, creator)
    }

    /// A page of history, newest first, with the conversation's last seq and
    /// version read in the same statement (one snapshot, one round trip).
    public func page(of id: UUID, for user: String, anchor: PageAnchor, limit: Int) async throws -> MessagePage {
        let scan = PageScan(anchor: anchor, limit: limit)
        return try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT c.last_seq, c.version AS conversation_version, \(unescaped: MessageRow.columns("m"))
                FROM conversations c
                LEFT JOIN LATERAL (
                    (SELECT * FROM messages
                     WHERE conversation_id = c.id AND seq <= \(scan.olderFrom)
                     ORDER BY seq DESC LIMIT \(scan.olderLimit))
                    UNION ALL
                    (SELECT * FROM messages
                     WHERE conversation_id = c.id AND seq >= \(scan.newerFrom)
                     ORDER BY seq ASC LIMIT \(scan.newerLimit))
                ) m ON true
                WHERE c.id = \(id)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = \(user))
                """,
                logger: logger)
            var head: (lastSeq: Int64, version: Int64)?
            var messages: [Message] = []
            for try await row in rows {
                let columns = row.makeRandomAccess()
                head = (try columns["last_seq"].decode(Int64.self), try columns["conversation_version"].decode(Int64.self))
                if let message = try MessageRow.decode(columns, alias: "m", conversation: id) { messages.append(message) }
            }
            guard let head else { throw StoreError.conversationNotFound }
            // UNION ALL promises no order across its branches: `sides` restores each side's.
            let (older, newer) = scan.sides(of: messages)
            let page = PageAssembly.assemble(
                anchor: anchor, limit: limit, lastSeq: head.lastSeq, older: older, newer: newer, seq: \.seq)
            return MessagePage(
                messages: page.rows, hasOlder: page.hasOlder, hasNewer: page.hasNewer, lastSeq: head.lastSeq,
                version: head.version)
        }
    }

    /// The seq to open history at for a point in time: the first message at
    /// or after `time`, or the newest when none is (nil while the
    /// conversation is empty).
    public func seq(at time: Date, in id: UUID, for user: String) async throws -> Int64? {
        // The driver traps on dates far outside PostgreSQL's range; nothing is
        // stored outside the API's range anyway, so clamp to it.
        let range = ScrollbackJSON.timestampRange
        let time = min(max(time, range.lowerBound), range.upperBound.addingTimeInterval(-1))
        let found: (Int64, Int64?)? = try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT c.last_seq,
                       (SELECT m.seq FROM messages m
                        WHERE m.conversation_id = c.id AND m.created_at >= \(time)
                        ORDER BY m.created_at, m.seq LIMIT 1)
                FROM conversations c
                WHERE c.id = \(id)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = \(user))
                """,
                logger: logger)
            for try await row in rows.decode((Int64, Int64?).self) { return row }
            return nil
        }
        guard let (lastSeq, seq) = found else { throw StoreError.conversationNotFound }
        return seq ?? (lastSeq > 0 ? lastSeq : nil)
    }

    /// The messages created, edited or deleted after `version`, oldest change
    /// first, each once in its latest state. Versions are dense and commit in
    /// order, so a client that applies these to any window it holds ends with
    /// what a fresh fetch of that window returns.
    public func changes(in id: UUID, for user: String, since version: Int64, limit: Int) async throws -> ChangeSet {
        try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT c.version AS conversation_version, \(unescaped: MessageRow.columns("m"))
                FROM conversations c
                LEFT JOIN LATERAL (
                    SELECT * FROM messages
                    WHERE conversation_id = c.id AND version > \(version)
                    ORDER BY version LIMIT \(limit + 1)
                ) m ON true
                WHERE c.id = \(id)
                  AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = \(user))
                ORDER BY m.version
                """,
                logger: logger)
            var current: Int64?
            var messages: [Message] = []
            for try await row in rows {
                let columns = row.makeRandomAccess()
                current = try columns["conversation_version"].decode(Int64.self)
                if let message = try MessageRow.decode(columns, alias: "m", conversation: id) { messages.append(message) }
            }
            guard let current else { throw StoreError.conversationNotFound }
            guard messages.count > limit else { return ChangeSet(messages: messages, hasMore: false, version: current) }
            messages.removeLast(messages.count - limit)
            return ChangeSet(messages: messages, hasMore: true, version: messages.last!.version)
        }
    }

    func firstMessage(_ rows: PostgresRowSequence, conversation: UUID) async throws -> Message? {
        for try await row in rows {
            return try MessageRow.decode(row.makeRandomAccess(), alias: "m", conversation: conversation)
        }
        return nil
    }
}
