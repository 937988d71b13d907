import Foundation
import PostgresNIO
import ScrollbackModels

/// A reaction set or removed: the message as it is now, and whether this
/// call changed it (false for one the user had already, or did not have).
public struct ReactionOutcome: Sendable, Equatable {
    public var message: Message
    public var changed: Bool
}

extension ScrollbackStore {
    /// Adds (`adding`) or removes `user`'s `emoji` reaction to message `seq`.
    /// Idempotent: adding a reaction the user has, or removing one they do not
    /// have, changes nothing and returns the message as it is. A change takes
    /// the conversation's next version and rewrites the message's aggregate
    /// in the same statement, under the locks every writer takes in the same
    /// order (the conversation, the member, the message).
    public func react(
        _ emoji: String, to seq: Int64, in id: UUID, by user: UserID, adding: Bool
    ) async throws -> ReactionOutcome {
        // A write drops the conversation's cached pages before it answers or throws (PageCache).
        defer { pageCache.invalidate(id) }
        let limit = APILimits.maxReactionKinds
        // The emoji is bound once, in `params`, and read from there.
        let e = "(SELECT emoji FROM params)"
        // The aggregate after the change: a count moves, a new emoji goes last,
        // a count that reaches zero goes.
        let aggregate =
            adding
            ? """
            reaction_emojis = CASE WHEN \(e) = ANY(COALESCE(m.reaction_emojis, '{}'))
                THEN m.reaction_emojis ELSE array_append(COALESCE(m.reaction_emojis, '{}'), \(e)) END,
            reaction_counts = CASE WHEN \(e) = ANY(COALESCE(m.reaction_emojis, '{}'))
                THEN (SELECT array_agg(CASE WHEN e = \(e) THEN n + 1 ELSE n END ORDER BY i)
                      FROM unnest(m.reaction_emojis, m.reaction_counts) WITH ORDINALITY AS u(e, n, i))
                ELSE array_append(COALESCE(m.reaction_counts, '{}'), 1) END
            """
            : """
            reaction_emojis = (SELECT array_agg(e ORDER BY i)
                FROM unnest(m.reaction_emojis, m.reaction_counts) WITH ORDINALITY AS u(e, n, i)
                WHERE NOT (e = \(e) AND n <= 1)),
            reaction_counts = (SELECT array_agg(CASE WHEN e = \(e) THEN n - 1 ELSE n END ORDER BY i)
                FROM unnest(m.reaction_emojis, m.reaction_counts) WITH ORDINALITY AS u(e, n, i)
                WHERE NOT (e = \(e) AND n <= 1))
            """
        let change =
            adding
            ? """
            INSERT INTO reactions (conversation_id, seq, emoji, user_id)
            SELECT (SELECT id FROM conv), seq, \(e), (SELECT user_id FROM member) FROM target
            WHERE NOT deleted
              AND (\(e) = ANY(COALESCE(reaction_emojis, '{}'))
                   OR cardinality(COALESCE(reaction_emojis, '{}')) < \(limit))
            ON CONFLICT DO NOTHING
            RETURNING seq
            """
            : """
            DELETE FROM reactions
            WHERE conversation_id = (SELECT id FROM conv) AND seq = (SELECT seq FROM target WHERE NOT deleted)
              AND emoji = \(e) AND user_id = (SELECT user_id FROM member)
            RETURNING seq
            """
        let readers = MessageRow.readers(user)
        let rows = try await rows(
            """
            WITH params AS (
                SELECT \(emoji)::text AS emoji
            ), conv AS (
                SELECT id FROM conversations WHERE id = \(id)
                FOR NO KEY UPDATE
            ), member AS (
                SELECT user_id FROM members
                WHERE conversation_id = (SELECT id FROM conv) AND user_id = \(user.rawValue)
                FOR KEY SHARE
            ), target AS (
                SELECT m.seq, m.deleted, m.reaction_emojis FROM messages m
                WHERE m.conversation_id = (SELECT id FROM conv) AND m.seq = \(seq)
                  AND EXISTS (SELECT 1 FROM member)
                FOR UPDATE OF m
            ), change AS (
                \(unescaped: change)
            ), c AS (
                UPDATE conversations SET version = version + 1, changed_xid = pg_current_xact_id()
                WHERE id = \(id) AND EXISTS (SELECT 1 FROM change)
                RETURNING version, \(unescaped: FeedEvent.notify("u", "id::text", "\(seq)", "version::text"))
            ), updated AS (
                UPDATE messages m SET version = c.version, \(unescaped: aggregate)
                FROM c WHERE m.conversation_id = \(id) AND m.seq = \(seq)
                RETURNING m.*
            )
            SELECT EXISTS (SELECT 1 FROM member) AS is_member, EXISTS (SELECT 1 FROM change) AS changed,
                   \(unescaped: MessageRow.columns("r", conversation: "m_conversation", readers: readers))
            FROM (SELECT \(id)::uuid AS m_conversation) AS one
            LEFT JOIN (
                SELECT * FROM updated
                UNION ALL
                SELECT * FROM messages
                WHERE conversation_id = \(id) AND seq = \(seq) AND EXISTS (SELECT 1 FROM member)
                  AND NOT EXISTS (SELECT 1 FROM updated)
            ) r ON true
            """,
            writes: true, as: .react)
        guard let columns = rows.first?.makeRandomAccess(), try columns["is_member"].decode(Bool.self) else {
            throw StoreError.conversationNotFound
        }
        guard var message = try MessageRow.decode(columns, alias: "r", conversation: id) else {
            throw StoreError.messageNotFound
        }
        let changed = try columns["changed"].decode(Bool.self)
        if !changed {
            if message.deleted { throw StoreError.messageDeleted }
            let has = message.reactions.contains { $0.emoji == emoji }
            if adding && !has && message.reactions.count >= limit { throw StoreError.tooManyReactions(limit: limit) }
        }
        // The statement's snapshot predates its own change to the reactions:
        // whether this one is the caller's is known here.
        if let index = message.reactions.firstIndex(where: { $0.emoji == emoji }) {
            message.reactions[index].me = adding
        }
        return ReactionOutcome(message: message, changed: changed)
    }

    /// A page of the replies in the thread that message `root` started,
    /// newest first, with the anchors and flags of history (about the
    /// thread's replies), and the root as it is now, read in one snapshot.
    /// Both sides of the anchor are keyset scans on `messages_by_thread`.
    public func thread(
        of root: Int64, in id: UUID, for user: UserID, anchor: PageAnchor, limit: Int
    ) async throws -> ThreadPage {
        try await replicated(for: user) { try await readThread(of: root, in: id, for: user, anchor: anchor, limit: limit) }
    }

    private func readThread(
        of root: Int64, in id: UUID, for user: UserID, anchor: PageAnchor, limit: Int
    ) async throws -> ThreadPage {
        let scan = PageScan(anchor: anchor, limit: limit)
        let rows = try await rows(
            ThreadStatement(conversation: id, user: user, root: root, scan: scan), writes: false, as: .thread)
        guard let first = rows.first?.makeRandomAccess() else { throw StoreError.conversationNotFound }
        guard let rootMessage = try MessageRow.decode(first, alias: "t", conversation: id) else {
            throw StoreError.messageNotFound
        }
        if let threadRoot = rootMessage.threadRoot { throw StoreError.notAThreadRoot(root: threadRoot) }
        let version = try first["conversation_version"].decode(Int64.self)
        let firstReply = try first["first_reply"].decode(Int64?.self)
        let lastReply = try first["last_reply"].decode(Int64?.self)
        var replies: [Message] = []
        for row in rows {
            if let reply = try MessageRow.decode(row.makeRandomAccess(), alias: "m", conversation: id) {
                replies.append(reply)
            }
        }
        let (older, newer) = scan.sides(of: replies)
        // Replies are not dense in seq: the flags come from the thread's first
        // and last reply.
        let page = PageAssembly.assemble(
            anchor: anchor, limit: limit, firstSeq: firstReply ?? .max, lastSeq: lastReply ?? 0, older: older,
            newer: newer, seq: \.seq)
        return ThreadPage(
            root: rootMessage, messages: page.rows, hasOlder: page.hasOlder, hasNewer: page.hasNewer, version: version)
    }
}

/// The thread page's statement, prepared once per connection: the
/// conversation's version, the thread's first and last reply, the root, and
/// the two keyset scans of `messages_by_thread` around the anchor, if the
/// caller is a member. Rows are read by column name.
struct ThreadStatement: PostgresPreparedStatement {
    static let name = "scrollback_thread_v1"
    static let sql = """
        SELECT c.version AS conversation_version, reply.first_reply, reply.last_reply,
               \(MessageRow.columns("t", conversation: "c.id", readers: "ARRAY[$2::text]")),
               \(MessageRow.columns("m", conversation: "c.id", readers: "ARRAY[$2::text]"))
        FROM conversations c
        LEFT JOIN messages t ON t.conversation_id = c.id AND t.seq = $3
        CROSS JOIN LATERAL (
            SELECT min(seq) AS first_reply, max(seq) AS last_reply FROM messages
            WHERE conversation_id = c.id AND thread_root = $3
        ) reply
        LEFT JOIN LATERAL (
            (SELECT * FROM messages
             WHERE conversation_id = c.id AND thread_root = $3 AND seq <= $4
             ORDER BY seq DESC LIMIT $5)
            UNION ALL
            (SELECT * FROM messages
             WHERE conversation_id = c.id AND thread_root = $3 AND seq >= $6
             ORDER BY seq ASC LIMIT $7)
        ) m ON true
        WHERE c.id = $1
          AND EXISTS (SELECT 1 FROM members WHERE conversation_id = c.id AND user_id = $2)
        """
    static let parameters = ["conversation_id", "user_id", "root", "older_from", "older_limit", "newer_from", "newer_limit"]
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .text, .int8, .int8, .int8, .int8, .int8]

    var conversation: UUID
    var user: UserID
    var root: Int64
    var scan: PageScan

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 7)
        bindings.append(conversation)
        bindings.append(user.rawValue)
        bindings.append(root)
        bindings.append(scan.olderFrom)
        bindings.append(Int64(scan.olderLimit))
        bindings.append(scan.newerFrom)
        bindings.append(Int64(scan.newerLimit))
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}
