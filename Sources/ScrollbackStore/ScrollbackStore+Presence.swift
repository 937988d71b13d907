import Foundation
import PostgresNIO
import ScrollbackModels

/// Presence across instances (`sql/014_mute_and_presence.sql`): each
/// instance writes how many sockets each of its users has, and beats; a
/// user is online while an instance that has not expired holds a socket of
/// theirs. Every write that may change whether a user is online anywhere
/// sends `w:` and the users on the change feed (`FeedEvent.presence`), and
/// each instance then reads their presence as it stands after the commit:
/// two instances writing at once can each miss the other's row, but the
/// read that follows the later commit cannot.
///
/// When a user was last seen is written to their `users` row only where
/// there is one: a socket that outlived its user's erasure (closed on every
/// instance by the erasure's `e:`, but a write may come first) must not
/// bring the user back.
extension ScrollbackStore {
    /// The end of a write of presence: its `beat` CTE's `created`, once the
    /// notifications of the users of `relation` are sent.
    private static func notifyingPresence(of relation: String) -> String {
        ", told AS (\n\(FeedEvent.notifyPresence(of: relation))\n)\nSELECT created, (SELECT count(*) FROM told) FROM beat"
    }

    /// Whether the instance's row was created anew, from the rows of a
    /// statement that ends with `notifyingPresence`.
    private static func createdAnew(_ rows: [PostgresRow]) throws -> Bool {
        guard let row = rows.first else { return true }
        let (created, _) = try row.decode((Bool, Int64).self)
        return created
    }

    /// Whether a member `m` (joined to `users` as `u`) is online, and when
    /// they were last seen, as every reader shows it: a user who hides
    /// their presence looks offline and never seen.
    static let presenceColumns = """
        NOT COALESCE(u.presence_hidden, false) AND EXISTS (
            SELECT 1 FROM presence p JOIN presence_instances i ON i.instance_id = p.instance_id
            WHERE p.user_id = m.user_id AND i.expires_at > now()),
        CASE WHEN COALESCE(u.presence_hidden, false) THEN NULL ELSE u.last_seen_at END
        """

    /// Keeps instance `instance`'s presence rows alive for `ttl` from now,
    /// and removes the instances that expired (killed ones) with their
    /// rows: their users are offline from then on, and were last seen at
    /// their instance's last beat. Answers whether the instance's row was
    /// created anew (it had expired and was removed: its rows must be
    /// written again).
    @discardableResult
    public func presenceBeat(_ instance: UUID, ttl: Duration) async throws -> Bool {
        let seconds = Double(ttl.nanoseconds) / 1e9
        let rows = try await rows(
            """
            WITH lost AS (
                SELECT p.user_id, max(i.beat_at) AS seen FROM presence p
                JOIN presence_instances i ON i.instance_id = p.instance_id
                WHERE i.expires_at < now() AND i.instance_id <> \(instance) GROUP BY p.user_id
            ), seen AS (
                UPDATE users u SET last_seen_at = GREATEST(u.last_seen_at, l.seen) FROM lost l WHERE u.id = l.user_id
            ), gone AS (
                DELETE FROM presence_instances WHERE expires_at < now() AND instance_id <> \(instance)
            ), beat AS (
                INSERT INTO presence_instances (instance_id, beat_at, expires_at)
                VALUES (\(instance), now(), now() + make_interval(secs => \(seconds)))
                ON CONFLICT (instance_id) DO UPDATE SET beat_at = EXCLUDED.beat_at, expires_at = EXCLUDED.expires_at
                RETURNING xmax = 0 AS created
            )
            \(unescaped: Self.notifyingPresence(of: "lost"))
            """,
            writes: true, as: .presence)
        return try Self.createdAnew(rows)
    }

    /// Writes how many sockets each of `sockets`' users has on `instance`
    /// (0: none, the row goes); with `replacingAll`, the instance's other
    /// rows go too. Answers whether the instance's row was created anew
    /// (it had expired and another instance removed it with its rows: they
    /// must all be written again).
    @discardableResult
    public func presenceWrite(
        _ instance: UUID, ttl: Duration, sockets: [(String, Int)], replacingAll: Bool
    ) async throws -> Bool {
        let seconds = Double(ttl.nanoseconds) / 1e9
        let users = sockets.map(\.0)
        let counts = sockets.map { Int32($0.1) }
        let rows = try await rows(
            """
            WITH beat AS (
                INSERT INTO presence_instances (instance_id, expires_at)
                VALUES (\(instance), now() + make_interval(secs => \(seconds)))
                ON CONFLICT (instance_id) DO UPDATE SET expires_at = EXCLUDED.expires_at
                RETURNING instance_id, xmax = 0 AS created
            ), given AS (
                SELECT * FROM unnest(\(users)::text[], \(counts)::int4[]) AS g(user_id, sockets)
            ), removed AS (
                DELETE FROM presence p
                WHERE p.instance_id = \(instance)
                  AND (p.user_id IN (SELECT user_id FROM given WHERE sockets = 0)
                       OR (\(replacingAll) AND p.user_id NOT IN (SELECT user_id FROM given)))
                RETURNING p.user_id
            ), seen AS (
                UPDATE users SET last_seen_at = now()
                WHERE id IN (SELECT user_id FROM removed UNION SELECT user_id FROM given WHERE sockets = 0)
            ), written AS (
                INSERT INTO presence (user_id, instance_id, sockets)
                SELECT g.user_id, b.instance_id, g.sockets FROM given g, beat b WHERE g.sockets > 0
                ON CONFLICT (user_id, instance_id) DO UPDATE SET sockets = EXCLUDED.sockets
                RETURNING user_id, xmax = 0 AS created
            ), changed AS (
                SELECT user_id FROM written WHERE created UNION SELECT user_id FROM removed
            )
            \(unescaped: Self.notifyingPresence(of: "changed"))
            """,
            writes: true, as: .presence)
        return try Self.createdAnew(rows)
    }

    /// Removes instance `instance` and its presence rows (a clean stop):
    /// its users were last seen now.
    public func presenceEnd(_ instance: UUID) async throws {
        _ = try await rows(
            """
            WITH seen AS (
                UPDATE users SET last_seen_at = now()
                WHERE id IN (SELECT user_id FROM presence WHERE instance_id = \(instance))
            ), gone AS (
                DELETE FROM presence_instances WHERE instance_id = \(instance)
            ), ended AS (
                SELECT user_id FROM presence WHERE instance_id = \(instance)
            )
            \(unescaped: FeedEvent.notifyPresence(of: "ended"))
            """,
            writes: true, as: .presence)
    }

    /// The presence of conversation `id`'s members as `viewer` may see it;
    /// nil when the viewer is not a member (strangers see nothing). A user
    /// who hides their presence looks offline and never seen.
    public func presence(of id: UUID, for viewer: UserID) async throws -> [MemberPresence]? {
        let rows = try await rows(
            """
            SELECT m.user_id, \(unescaped: Self.presenceColumns)
            FROM members m LEFT JOIN users u ON u.id = m.user_id
            WHERE m.conversation_id = \(id)
              AND EXISTS (SELECT 1 FROM members v WHERE v.conversation_id = \(id) AND v.user_id = \(viewer.rawValue))
            ORDER BY m.user_id COLLATE "C"
            """,
            writes: false, as: .presence)
        guard !rows.isEmpty else { return nil }
        return try rows.map { row in try Self.memberPresence(row.decode((String, Bool, Date?).self)) }
    }

    /// The presence of `users` in those of `conversations` they are
    /// members of, as the members of each see it now: what an instance
    /// tells its subscribers after a presence notification. `users` nil: every
    /// member of `conversations` (after the feed's connection was lost).
    public func presence(of users: [UserID]?, in conversations: [UUID]) async throws -> [ConversationMemberPresence] {
        guard !conversations.isEmpty, users.map({ !$0.isEmpty }) ?? true else { return [] }
        let rows = try await rows(
            """
            SELECT m.conversation_id, m.user_id, \(unescaped: Self.presenceColumns)
            FROM members m LEFT JOIN users u ON u.id = m.user_id
            WHERE m.conversation_id = ANY(\(conversations))
              AND (\(users == nil) OR m.user_id = ANY(\(users?.map(\.rawValue) ?? [])))
            """,
            writes: false, as: .presence)
        return try rows.map { row in
            let (conversation, user, online, seen) = try row.decode((UUID, String, Bool, Date?).self)
            return ConversationMemberPresence(
                conversation: conversation, presence: Self.memberPresence((user, online, seen)))
        }
    }

    private static func memberPresence(_ row: (String, Bool, Date?)) -> MemberPresence {
        MemberPresence(userId: row.0, online: row.1, lastSeenAt: row.1 ? nil : row.2)
    }

    /// Hides or shows `user`'s presence to everyone; the members who watch
    /// see the change live.
    public func setPresenceHidden(_ hidden: Bool, for user: UserID) async throws {
        _ = try await rows(
            """
            WITH set AS (
                INSERT INTO users AS u (id, presence_hidden) VALUES (\(user.rawValue), \(hidden))
                ON CONFLICT (id) DO UPDATE SET presence_hidden = EXCLUDED.presence_hidden
                RETURNING u.id
            )
            SELECT \(unescaped: FeedEvent.notify(FeedEvent.presenceKind, "id")) FROM set
            """,
            writes: true, as: .presence)
    }

    /// Which of `users` have a live socket on an instance that has not expired.
    public func online(_ users: [UserID]) async throws -> Set<UserID> {
        guard !users.isEmpty else { return [] }
        let rows = try await rows(
            """
            SELECT DISTINCT p.user_id FROM presence p
            JOIN presence_instances i ON i.instance_id = p.instance_id AND i.expires_at > now()
            WHERE p.user_id = ANY(\(users.map(\.rawValue)))
            """,
            writes: false, as: .presence)
        return Set(try rows.map { UserID(rawValue: try $0.decode(String.self)) })
    }
}

/// One member's presence in one conversation.
public struct ConversationMemberPresence: Sendable, Equatable {
    public var conversation: UUID
    public var presence: MemberPresence
}
