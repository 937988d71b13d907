import Foundation
import PostgresNIO
import ScrollbackModels

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
    /// Replaces a message's body, its data (`.some(nil)`: removes it), or
    /// both, those given; only its sender may. The edit takes the
    /// conversation's next version in the same statement.
    public func edit(
        _ seq: Int64, in id: UUID, by user: UserID, body: String? = nil, data: CustomData?? = nil
    ) async throws -> Message {
        for _ in 0..<Self.changeAttempts {
            if let edited = try await change(seq, in: id, by: user, .edit(body: body, data: data)) { return edited }
            let (message, _) = try await messageForDiagnosis(seq, in: id, for: user)
            guard message.sender == user.rawValue else { throw StoreError.forbidden(.editAnotherSendersMessage) }
            guard !message.deleted else { throw StoreError.messageDeleted }
            // The message committed after the change's snapshot was taken (a
            // send still in flight): it can be edited now, so try again.
        }
        throw StoreError.unavailable
    }

    /// Turns a message into a tombstone: the body is erased from storage, the
    /// seq stays. Its sender, an admin or the owner may; deleting a
    /// tombstone again returns it unchanged.
    public func delete(_ seq: Int64, in id: UUID, by user: UserID) async throws -> DeleteOutcome {
        for _ in 0..<Self.changeAttempts {
            if let tombstone = try await change(seq, in: id, by: user, .delete) { return .deleted(tombstone) }
            let (message, role) = try await messageForDiagnosis(seq, in: id, for: user)
            guard message.sender == user.rawValue || role.may(.deleteOthersMessage) else {
                throw StoreError.forbidden(.deleteAnotherSendersMessage)
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

    /// What a change does to a message.
    private enum Change {
        /// The body and the data given (nil: unchanged).
        case edit(body: String?, data: CustomData??)
        case delete
    }

    /// Edits message `seq` or deletes it, taking the
    /// conversation's next version, when it is not deleted and `user` may: its
    /// sender, or for a deletion also an admin or the owner. Locks are
    /// taken in the order every writer uses: the conversation row, then the
    /// member row (so a removal that committed meanwhile is seen), then the
    /// message row (re-checked if it changed meanwhile). Nil when nothing matched.
    private func change(_ seq: Int64, in id: UUID, by user: UserID, _ change: Change) async throws -> Message? {
        // A write drops the conversation's cached pages before it answers or throws (PageCache).
        defer { pageCache.invalidate(id) }
        var deleting = false
        var newBody: String?
        var newData: CustomData??
        switch change {
        case .edit(let body, let data): (newBody, newData) = (body, data)
        case .delete: (deleting, newBody, newData) = (true, "", .some(nil))
        }
        let settingData = newData != nil
        let dataJSON: String? = newData??.json
        let rows = try await rows(
            """
            WITH conv AS (
                SELECT id FROM conversations WHERE id = \(id)
                FOR NO KEY UPDATE
            ), member AS (
                -- FOR SHARE, not KEY SHARE: a role changed by a transaction
                -- that held the conversation before this one is read as it
                -- is now (a KEY SHARE lock takes the version of this
                -- statement's snapshot, and a member demoted a moment ago
                -- would keep their rights).
                SELECT user_id, role FROM members
                WHERE conversation_id = (SELECT id FROM conv) AND user_id = \(user.rawValue)
                FOR SHARE
            ), acting AS (
                SELECT role FROM member
                UNION ALL
                SELECT 'owner' FROM conv WHERE \(user.rawValue) = ''  -- the system (UserID.system)
            ), target AS (
                SELECT m.seq FROM messages m
                WHERE m.conversation_id = (SELECT id FROM conv) AND m.seq = \(seq) AND NOT m.deleted
                  AND (m.sender = \(user.rawValue)
                       OR (\(deleting) AND (SELECT role FROM acting) = ANY(\(Self.deletersOfOthers))))
                  AND EXISTS (SELECT 1 FROM acting)
                FOR UPDATE OF m
            ), c AS (
                UPDATE conversations SET version = version + 1, changed_xid = pg_current_xact_id()
                WHERE id = \(id) AND EXISTS (SELECT 1 FROM target)
                RETURNING version, \(unescaped: FeedEvent.notify("u", "id::text", "\(seq)", "version::text"))
            ), unreact AS (
                -- A tombstone keeps no reactions.
                DELETE FROM reactions
                WHERE conversation_id = \(id) AND seq = \(seq) AND \(deleting) AND EXISTS (SELECT 1 FROM c)
            ), unattach AS (
                -- Nor attachments: their bytes are collected after a grace period.
                UPDATE uploads SET removed_at = now()
                WHERE conversation_id = \(id) AND message_seq = \(seq) AND \(deleting) AND EXISTS (SELECT 1 FROM c)
            )
            UPDATE messages m
            SET version = c.version,
                body = COALESCE(\(newBody), m.body),
                data = CASE WHEN \(settingData) THEN \(dataJSON)::jsonb ELSE m.data END,
                deleted = \(deleting),
                sent_body_hash = CASE WHEN \(deleting) THEN NULL ELSE m.sent_body_hash END,
                reaction_emojis = CASE WHEN \(deleting) THEN NULL ELSE m.reaction_emojis END,
                reaction_counts = CASE WHEN \(deleting) THEN NULL ELSE m.reaction_counts END,
                attachments = CASE WHEN \(deleting) THEN NULL ELSE m.attachments END,
                edited_at = CASE WHEN \(deleting) THEN m.edited_at ELSE clock_timestamp() END
            FROM c
            WHERE m.conversation_id = \(id) AND m.seq = \(seq)
            RETURNING \(unescaped: MessageRow.columns("m", conversation: "m.conversation_id", readers: MessageRow.readers(user)))
            """,
            writes: true, as: .changeMessage)
        return try rows.first.flatMap { try MessageRow.decode($0.makeRandomAccess(), alias: "m", conversation: id) }
    }

    /// The roles that may delete others' messages.
    static let deletersOfOthers = MemberRole.allCases.filter { $0.may(.deleteOthersMessage) }.map(\.rawValue)

    /// The message and the caller's role, for explaining why a change did
    /// not apply.
    private func messageForDiagnosis(_ seq: Int64, in id: UUID, for user: UserID) async throws -> (Message, MemberRole) {
        let rows = try await rows(
            """
            SELECT COALESCE(me.role, 'owner') AS role,
                   \(unescaped: MessageRow.columns("m", conversation: "c.id", readers: MessageRow.readers(user)))
            FROM conversations c
            LEFT JOIN members me ON me.conversation_id = c.id AND me.user_id = \(user.rawValue)
            LEFT JOIN messages m ON m.conversation_id = c.id AND m.seq = \(seq)
            WHERE c.id = \(id) AND (me.user_id IS NOT NULL OR \(user.rawValue) = '')
            """,
            writes: false, as: .diagnoseChange)
        guard let columns = rows.first?.makeRandomAccess() else { throw StoreError.conversationNotFound }
        guard let message = try MessageRow.decode(columns, alias: "m", conversation: id) else {
            throw StoreError.messageNotFound
        }
        return (message, MemberRole(rawValue: try columns["role"].decode(String.self)) ?? .member)
    }
}
