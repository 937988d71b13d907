import Foundation
import PostgresNIO
import ScrollbackModels

/// A page of a user's mentions, newest first.
public struct MentionListPage: Sendable, Equatable {
    public var mentions: [Mention]
    /// Where the next (older) page starts: the position of the last mention
    /// listed; nil on the last page.
    public var next: Int64?
}

extension ScrollbackStore {
    /// The mentions of `user` (sql/007_mentions.sql stores them) in the
    /// conversations they are still a member of, newest first, below
    /// `position` (nil: from the newest). A keyset scan on the mentions'
    /// `(user_id, position)` index, never an OFFSET; one snapshot, so a
    /// mention stored between two pages lands above the first page and none
    /// is listed twice or skipped.
    public func mentions(of user: UserID, before position: Int64?, limit: Int) async throws -> MentionListPage {
        try await replicated(for: user) { try await readMentions(of: user, before: position, limit: limit) }
    }

    private func readMentions(of user: UserID, before position: Int64?, limit: Int) async throws -> MentionListPage {
        let rows = try await rows(
            """
            SELECT mn.position, mn.conversation_id, mn.seq <= me.read_seq AS read,
                   \(unescaped: MessageRow.columns("m", conversation: "m.conversation_id", readers: "ARRAY[me.user_id]"))
            FROM mentions mn
            JOIN members me ON me.conversation_id = mn.conversation_id AND me.user_id = mn.user_id
            JOIN messages m ON m.conversation_id = mn.conversation_id AND m.seq = mn.seq
            WHERE mn.user_id = \(user.rawValue) AND mn.position < \(position ?? .max) AND NOT m.deleted
            ORDER BY mn.position DESC
            LIMIT \(limit + 1)
            """,
            writes: false, as: .mentions)
        var mentions: [(Mention, position: Int64)] = []
        for row in rows {
            let columns = row.makeRandomAccess()
            let conversation = try columns["conversation_id"].decode(UUID.self)
            guard let message = try MessageRow.decode(columns, alias: "m", conversation: conversation) else {
                throw MalformedRow()
            }
            mentions.append(
                (
                    Mention(
                        conversationId: conversation, seq: message.seq, message: message,
                        read: try columns["read"].decode(Bool.self)),
                    try columns["position"].decode(Int64.self)
                ))
        }
        let more = mentions.count > limit
        mentions = Array(mentions.prefix(limit))
        return MentionListPage(mentions: mentions.map(\.0), next: more ? mentions.last?.position : nil)
    }
}
