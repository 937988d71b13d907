import Foundation
import PostgresNIO
import ScrollbackModels

extension ScrollbackStore {
    /// At most this many members in one conversation.
    public static let memberLimit = 1_000

    /// Creates a conversation whose members are `creator` plus `members`
    /// (deduplicated), in one statement.
    public func createConversation(creator: String, title: String?, members: [String]) async throws -> Conversation {
        let everyone = Array(Set(members + [creator])).sorted()
        guard everyone.count <= Self.memberLimit else { throw StoreError.conversationFull(limit: Self.memberLimit) }
        return try await withStoreErrors {
            let rows = try await client.query(
                """
                WITH c AS (
                    INSERT INTO conversations (title, created_by) VALUES (\(title), \(creator))
                    RETURNING id, title, created_by, created_at, last_seq
                ), m AS (
                    INSERT INTO members (conversation_id, user_id)
                    SELECT c.id, u FROM c, unnest(\(everyone)::text[]) AS u
                    RETURNING user_id
                )
                SELECT c.id, c.title, c.created_by, c.created_at, c.last_seq,
                       ARRAY(SELECT user_id FROM m ORDER BY user_id COLLATE "C")
                FROM c
                """,
                logger: logger)
            for try await (id, title, createdBy, createdAt, lastSeq, members) in rows.decode(
                (UUID, String?, String, Date, Int64, [String]).self)
            {
                return Conversation(
                    id: id, title: title, createdBy: createdBy, createdAt: createdAt, lastSeq: lastSeq, members: members)
            }
            throw StoreError.unavailable
        }
    }

    /// What a conversation looks like to the member `me`: with their read
    /// marker, unread count and the newest message as a preview. Selected from
    /// `members me JOIN conversations c LEFT JOIN messages lm`.
    static let conversationColumns = """
        c.id, c.title, c.created_by, c.created_at, c.last_seq, c.activity,
        ARRAY(SELECT user_id FROM members WHERE conversation_id = c.id ORDER BY user_id COLLATE "C") AS members,
        me.read_seq, \(unreadCount) AS unread_count,
        \(MessageRow.columns("lm"))
        """

    /// The messages after member row `me`'s read marker, not sent by that
    /// member, not deleted: the one definition of "unread".
    static let unreadCount = """
        (SELECT count(*) FROM messages u
         WHERE u.conversation_id = me.conversation_id AND u.seq > me.read_seq
           AND u.sender <> me.user_id AND NOT u.deleted)
        """

    static let conversationSource = """
        members me
        JOIN conversations c ON c.id = me.conversation_id
        LEFT JOIN messages lm ON lm.conversation_id = c.id AND lm.seq = c.last_seq
        """

    static func decodeConversation(_ row: PostgresRow) throws -> (Conversation, activity: Int64) {
        let columns = row.makeRandomAccess()
        let id = try columns["id"].decode(UUID.self)
        let conversation = Conversation(
            id: id,
            title: try columns["title"].decode(String?.self),
            createdBy: try columns["created_by"].decode(String.self),
            createdAt: try columns["created_at"].decode(Date.self),
            lastSeq: try columns["last_seq"].decode(Int64.self),
            members: try columns["members"].decode([String].self),
            readSeq: try columns["read_seq"].decode(Int64.self),
            unreadCount: try columns["unread_count"].decode(Int64.self),
            lastMessage: try MessageRow.decode(columns, alias: "lm", conversation: id))
        return (conversation, try columns["activity"].decode(Int64.self))
    }

    /// The conversation, if `user` is a member.
    public func conversation(_ id: UUID, for user: String) async throws -> Conversation {
        try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT \(unescaped: Self.conversationColumns)
                FROM \(unescaped: Self.conversationSource)
                WHERE me.user_id = \(user) AND me.conversation_id = \(id)
                """,
                logger: logger)
            for try await row in rows { return try Self.decodeConversation(row).0 }
            throw StoreError.conversationNotFound
        }
    }

    /// The user's conversations, most recently active first. `after` is the
    /// activity mark of the last conversation of the previous page (keyset:
    /// never an OFFSET). Returns the page and the mark to continue from, or
    /// nil when this was the last page.
    public func conversations(
        for user: String, limit: Int, after activityMark: Int64?
    ) async throws -> (conversations: [Conversation], next: Int64?) {
        let mark = activityMark ?? .max
        return try await withStoreErrors {
            let rows = try await client.query(
                """
                SELECT \(unescaped: Self.conversationColumns)
                FROM \(unescaped: Self.conversationSource)
                WHERE me.user_id = \(user) AND c.activity < \(mark)
                ORDER BY c.activity DESC
                LIMIT \(limit + 1)
                """,
                logger: logger)
            var page: [(Conversation, activity: Int64)] = []
            for try await row in rows { page.append(try Self.decodeConversation(row)) }
            guard page.count > limit else { return (page.map(\.0), nil) }
            page.removeLast()
            return (page.map(\.0), page.last?.activity)
        }
    }

    /// Moves the user's read marker to `seq`, never backwards: a smaller seq
    /// leaves it where it is. The member row's lock orders concurrent updates,
    /// and each takes the greater of the stored and the new value.
    public func markRead(_ seq: Int64, in id: UUID, by user: String) async throws -> ReadMarker {
        let outcome: (Int64?, Bool, Int64?, Int64?) = try await withStoreErrors {
            let rows = try await client.query(
                """
                WITH c AS (
                    SELECT last_seq FROM conversations WHERE id = \(id)
                ), moved AS (
                    UPDATE members SET read_seq = GREATEST(read_seq, \(seq))
                    WHERE conversation_id = \(id) AND user_id = \(user) AND \(seq) <= (SELECT last_seq FROM c)
                    RETURNING conversation_id, user_id, read_seq
                )
                SELECT (SELECT last_seq FROM c),
                       EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user)),
                       me.read_seq, \(unescaped: Self.unreadCount)
                FROM (SELECT) AS one LEFT JOIN moved me ON true
                """,
                logger: logger)
            for try await row in rows.decode((Int64?, Bool, Int64?, Int64?).self) { return row }
            throw StoreError.unavailable
        }
        let (lastSeq, isMember, readSeq, unread) = outcome
        guard let lastSeq, isMember else { throw StoreError.conversationNotFound }
        guard let readSeq else { throw StoreError.readBeyondNewest(lastSeq: lastSeq) }
        return ReadMarker(conversationId: id, readSeq: readSeq, unreadCount: unread ?? 0)
    }

    /// Adds `user` to the conversation; any member may add. Adding someone who
    /// is already a member changes nothing.
    public func addMember(_ user: String, to id: UUID, by actor: String) async throws -> Conversation {
        let outcome: MembershipChange = try await withStoreErrors {
            try await client.withTransaction(logger: logger) { connection in
                guard try await lockConversation(id, member: actor, on: connection) != nil else { return .notVisible }
                // A statement after the lock sees every membership change
                // committed before it: the count and the conflict are exact.
                let rows = try await connection.query(
                    """
                    WITH ins AS (
                        INSERT INTO members (conversation_id, user_id)
                        SELECT \(id), \(user)
                        WHERE (SELECT count(*) FROM members WHERE conversation_id = \(id)) < \(Self.memberLimit)
                        ON CONFLICT (conversation_id, user_id) DO NOTHING
                        RETURNING user_id
                    )
                    SELECT (SELECT count(*) FROM ins),
                           EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user))
                    """,
                    logger: logger)
                for try await (inserted, wasMember) in rows.decode((Int64, Bool).self) {
                    return inserted == 1 || wasMember ? .done : .full
                }
                return .full
            }
        }
        switch outcome {
        case .notVisible: throw StoreError.conversationNotFound
        case .full: throw StoreError.conversationFull(limit: Self.memberLimit)
        default: return try await conversation(id, for: actor)
        }
    }

    /// Removes `user` from the conversation. A member may remove themself; the
    /// creator may remove anyone.
    public func removeMember(_ user: String, from id: UUID, by actor: String) async throws {
        let outcome: MembershipChange = try await withStoreErrors {
            try await client.withTransaction(logger: logger) { connection in
                guard let creator = try await lockConversation(id, member: actor, on: connection) else {
                    return .notVisible
                }
                guard actor == user || creator == actor else {
                    let rows = try await connection.query(
                        "SELECT EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user))",
                        logger: logger)
                    for try await isMember in rows.decode(Bool.self) { return isMember ? .forbidden : .notAMember }
                    return .notAMember
                }
                let rows = try await connection.query(
                    "DELETE FROM members WHERE conversation_id = \(id) AND user_id = \(user) RETURNING user_id",
                    logger: logger)
                for try await _ in rows { return .done }
                return .notAMember
            }
        }
        switch outcome {
        case .done: return
        case .notVisible: throw StoreError.conversationNotFound
        case .notAMember: throw StoreError.memberNotFound
        default:
            throw StoreError.forbidden(
                "Only the conversation's creator can remove other members; a member can remove themself.")
        }
    }

    private enum MembershipChange: Sendable {
        case done, notVisible, full, notAMember, forbidden
    }

    /// Locks the conversation row for the rest of the transaction, when
    /// `member` belongs to it; returns its creator.
    private func lockConversation(_ id: UUID, member: String, on connection: PostgresConnection) async throws -> String? {
        let rows = try await connection.query(
            """
            SELECT created_by FROM conversations
            WHERE id = \(id)
              AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(member))
            FOR UPDATE
            """,
            logger: logger)
        for try await creator in rows.decode(String.self) { return creator }
        return nil
    }
}

