import Foundation
import PostgresNIO
import ScrollbackModels

/// A point in the database's history that an inbox read can start from:
/// the `xmin` of an earlier read's snapshot (see sql/004_inbox.sql). Every
/// change a read returns was made by a transaction at or after its start,
/// so a read from a cursor may repeat what came before it, and misses
/// nothing that committed after it.
public struct InboxCursor: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var transaction: UInt64

    public init(transaction: UInt64) {
        self.transaction = transaction
    }

    /// The wire form: the transaction id in decimal.
    public init?(_ text: String) {
        guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let value = UInt64(text)
        else { return nil }
        transaction = value
    }

    public var description: String { String(transaction) }

    public static func < (lhs: InboxCursor, rhs: InboxCursor) -> Bool { lhs.transaction < rhs.transaction }
}

/// A user's conversations in one snapshot: which they are a member of, and
/// what changed in them since a cursor.
public struct InboxRead: Sendable, Equatable {
    /// Where the next read starts: everything before it is in this one.
    public var cursor: InboxCursor
    /// Every conversation the user is a member of in the snapshot; nil
    /// when the read was not asked for them.
    public var memberships: Set<UUID>?
    /// Conversations whose messages, or whose member row for the user
    /// (joined, read marker), changed since the cursor asked for; most
    /// recently active first.
    public var entries: [InboxEntry]
    /// Conversations the user was removed from since that cursor, and not
    /// added to again.
    public var removals: [InboxRemoval]
    /// More changed than the limit, or the cursor asked for is not one of
    /// this database's: the reader fetches the whole list instead.
    public var truncated: Bool
}

/// A conversation of the user's, as their list shows it, with where their
/// membership stands.
public struct InboxEntry: Sendable, Equatable {
    public var conversation: Conversation
    /// The membership's place among the additions and removals of this
    /// user to this conversation (larger is later).
    public var membership: Int64
    /// The user joined after the cursor the read started from.
    public var joined: Bool
    /// How many times the conversation's details (title, description,
    /// image, data, slow mode) changed, and whether they did since the
    /// cursor (`sql/034_conversation_details.sql`).
    public var detailsVersion: Int64 = 0
    public var detailsChanged = false
}

/// The user's last removal from a conversation.
public struct InboxRemoval: Sendable, Equatable {
    public var conversation: UUID
    /// Its place among the additions and removals (larger is later).
    public var membership: Int64
}

extension ScrollbackStore {
    /// What changed in `user`'s conversations at or after `cursor`, in one
    /// snapshot, at most `limit` conversations of each kind; nil `cursor`
    /// reads only where the user stands (no entries, no removals).
    /// `memberships`: also list every conversation the user is a member of
    /// (for a reader that has not followed the additions).
    public func inbox(
        of user: UserID, after cursor: InboxCursor?, limit: Int, memberships withMemberships: Bool = true
    ) async throws -> InboxRead {
        try await withConnection(writes: false, as: .inbox) { [logger] connection in
            try await connection.withTransaction(logger: logger) { connection in
                _ = try await connection.query(
                    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger
                ).collect()
                let head = try await connection.query(
                    """
                    SELECT pg_snapshot_xmin(pg_current_snapshot())::text,
                           pg_snapshot_xmax(pg_current_snapshot())::text,
                           ARRAY(SELECT conversation_id FROM members
                                 WHERE user_id = \(user.rawValue) AND \(withMemberships))
                    """,
                    logger: logger
                ).collect()
                guard let (xmin, xmax, memberships) = try head.first?.decode((String, String, [UUID]).self),
                    let next = InboxCursor(xmin), let newest = InboxCursor(xmax)
                else { throw MalformedRow() }
                var read = InboxRead(
                    cursor: next, memberships: withMemberships ? Set(memberships) : nil, entries: [], removals: [],
                    truncated: false)
                guard let cursor else { return read }
                guard cursor <= newest else {
                    read.truncated = true
                    return read
                }
                let since = cursor.description
                let rows = try await connection.query(
                    """
                    SELECT \(unescaped: Self.conversationColumns), me.joined_change,
                           me.joined_xid >= \(since)::xid8 AS joined_since,
                           c.details_version, c.details_xid >= \(since)::xid8 AS details_since
                    FROM \(unescaped: Self.conversationSource)
                    WHERE me.user_id = \(user.rawValue)
                      AND (c.changed_xid >= \(since)::xid8 OR me.changed_xid >= \(since)::xid8)
                    ORDER BY c.activity DESC
                    LIMIT \(limit + 1)
                    """,
                    logger: logger
                ).collect()
                for row in rows {
                    let columns = row.makeRandomAccess()
                    read.entries.append(
                        InboxEntry(
                            conversation: try Self.decodeConversation(row),
                            membership: try columns["joined_change"].decode(Int64.self),
                            joined: try columns["joined_since"].decode(Bool.self),
                            detailsVersion: try columns["details_version"].decode(Int64.self),
                            detailsChanged: try columns["details_since"].decode(Bool.self)))
                }
                let removed = try await connection.query(
                    """
                    SELECT r.conversation_id, r.removed_change FROM member_removals r
                    WHERE r.user_id = \(user.rawValue) AND r.removed_xid >= \(since)::xid8
                      AND NOT EXISTS (
                          SELECT 1 FROM members m
                          WHERE m.conversation_id = r.conversation_id AND m.user_id = r.user_id)
                    LIMIT \(limit + 1)
                    """,
                    logger: logger
                ).collect()
                for row in removed {
                    let (id, change) = try row.decode((UUID, Int64).self)
                    read.removals.append(InboxRemoval(conversation: id, membership: change))
                }
                if read.entries.count > limit || read.removals.count > limit {
                    read.truncated = true
                    read.entries = Array(read.entries.prefix(limit))
                    read.removals = Array(read.removals.prefix(limit))
                }
                return read
            }
        }
    }
}
