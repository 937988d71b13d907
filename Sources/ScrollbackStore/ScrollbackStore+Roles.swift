import Foundation
import PostgresNIO
import ScrollbackModels

/// Roles, bans and a conversation's settings (`sql/016_roles_bans_slow_mode.sql`).
/// Who may do what is `MemberRole.may`, checked here under the
/// conversation's lock, so a change of role that commits first is seen.
extension ScrollbackStore {
    /// Every member of conversation `id` with their role, by user id; the
    /// viewer must be a member.
    public func members(of id: UUID, for viewer: UserID) async throws -> [ConversationMember] {
        let rows = try await rows(
            """
            SELECT m.user_id, m.role, m.data FROM members m
            WHERE m.conversation_id = \(id)
              AND EXISTS (SELECT 1 FROM members v WHERE v.conversation_id = \(id) AND v.user_id = \(viewer.rawValue))
            ORDER BY m.user_id COLLATE "C"
            """,
            writes: false, as: .roles)
        guard !rows.isEmpty else { throw StoreError.conversationNotFound }
        return try rows.map { row in
            let (user, role, data) = try row.decode((String, String, String?).self)
            return ConversationMember(
                userId: user, role: MemberRole(rawValue: role) ?? .member, data: try Self.storedData(data))
        }
    }

    /// Gives `user` the role `role`; only the owner may. `.owner` hands
    /// ownership over: the owner becomes an admin first (one owner at a
    /// time), then `user` the owner. Answers the members whose role
    /// changed, in the order they changed; each is told live
    /// (`member_updated`).
    @discardableResult
    public func setRole(_ role: MemberRole, of user: UserID, in id: UUID, by actor: UserID) async throws
        -> [ConversationMember]
    {
        let (outcome, changed) = try await withTransaction(as: .roles) {
            [logger] connection -> (MembershipChange, [ConversationMember]) in
            guard let actorRole = try await Self.lockConversation(id, member: actor, on: connection, logger: logger)
            else { return (.notVisible, []) }
            let rows = try await connection.query(
                "SELECT role FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue)",
                logger: logger
            ).collect()
            guard let target = try rows.first.flatMap({ MemberRole(rawValue: try $0.decode(String.self)) }) else {
                return (actorRole.may(.changeRole) ? .notAMember : .forbidden(.changeRole), [])
            }
            guard actorRole.may(.changeRole, on: target) else { return (.forbidden(.changeRole), []) }
            var steps = [(user, role)]
            if role == .owner { steps.insert((actor, .admin), at: 0) }
            var changed: [ConversationMember] = []
            for (member, newRole) in steps {
                let updated = try await connection.query(
                    """
                    UPDATE members SET role = \(newRole.rawValue)
                    WHERE conversation_id = \(id) AND user_id = \(member.rawValue) AND role <> \(newRole.rawValue)
                    RETURNING \(unescaped: FeedEvent.notify("p", "conversation_id::text", "role", "user_id"))
                    """,
                    logger: logger
                ).collect()
                if !updated.isEmpty { changed.append(ConversationMember(userId: member.rawValue, role: newRole)) }
            }
            return (.done, changed)
        }
        try outcome.complete()
        return changed
    }

    /// Sets the data of `user`'s membership of conversation `id`
    /// (nil: none): `user` themself may, or the owner or an admin.
    public func setMemberData(_ data: CustomData?, of user: UserID, in id: UUID, by actor: UserID) async throws {
        let outcome: MembershipChange = try await withTransaction(as: .roles) { [logger] connection in
            guard let actorRole = try await Self.lockConversation(id, member: actor, on: connection, logger: logger)
            else { return .notVisible }
            guard user == actor || actorRole.may(.setMemberData) else { return .forbidden(.setMemberData) }
            let updated = try await connection.query(
                """
                UPDATE members SET data = \(data?.json)::jsonb
                WHERE conversation_id = \(id) AND user_id = \(user.rawValue)
                RETURNING 1
                """,
                logger: logger
            ).collect()
            return updated.isEmpty ? .notAMember : .done
        }
        try outcome.complete()
    }

    /// The bans of conversation `id` in force, by user id; the viewer must
    /// be a member who may list them (the owner or an admin).
    public func bans(of id: UUID, for viewer: UserID) async throws -> [Ban] {
        let rows = try await rows(
            """
            SELECT v.role, b.user_id, b.banned_by, b.banned_at, b.until
            FROM members v
            LEFT JOIN bans b ON b.conversation_id = v.conversation_id AND \(unescaped: Self.banInForce)
            WHERE v.conversation_id = \(id) AND v.user_id = \(viewer.rawValue)
            ORDER BY b.user_id COLLATE "C"
            """,
            writes: false, as: .roles)
        guard let first = rows.first else { throw StoreError.conversationNotFound }
        guard MemberRole(rawValue: try first.decode((String, String?, String?, Date?, Date?).self).0)?.may(.listBans) == true
        else { throw StoreError.forbidden(.ban) }
        return try rows.compactMap { row in
            let (_, user, by, at, until) = try row.decode((String, String?, String?, Date?, Date?).self)
            guard let user, let by, let at else { return nil }
            return Ban(userId: user, bannedBy: by, bannedAt: at, until: until)
        }
    }

    /// Lifts `user`'s ban from conversation `id`: who may ban a member of
    /// the role the user had when banned may lift it (the owner an admin's,
    /// an admin or the owner a member's); lifting no ban changes nothing.
    /// The user is not added back.
    public func unban(_ user: UserID, in id: UUID, by actor: UserID) async throws {
        let outcome: MembershipChange = try await withTransaction(as: .roles) { [logger] connection in
            guard let role = try await Self.lockConversation(id, member: actor, on: connection, logger: logger) else {
                return .notVisible
            }
            let banned = try await connection.query(
                "SELECT role FROM bans WHERE conversation_id = \(id) AND user_id = \(user.rawValue)", logger: logger
            ).collect().first.map { try $0.decode(String.self) }.flatMap(MemberRole.init(rawValue:))
            guard role.may(.ban, on: banned) else { return .forbidden(.ban) }
            try await connection.query(
                "DELETE FROM bans WHERE conversation_id = \(id) AND user_id = \(user.rawValue)", logger: logger
            ).collect()
            return .done
        }
        try outcome.complete()
    }

    /// Sets conversation `id`'s title, description and data (`.some(nil)`:
    /// none) and slow mode, those given; the owner or an admin may (the
    /// description and the data as the title). Answers the conversation as
    /// `actor` sees it.
    public func updateConversation(
        _ id: UUID, title: String??, slowModeSeconds: Int?, description: String?? = nil, data: CustomData?? = nil,
        by actor: UserID
    ) async throws -> Conversation {
        let outcome: MembershipChange = try await withTransaction(as: .roles) { [logger] connection in
            guard let role = try await Self.lockConversation(id, member: actor, on: connection, logger: logger) else {
                return .notVisible
            }
            guard title == nil || role.may(.setTitle), slowModeSeconds == nil || role.may(.setSlowMode),
                description == nil && data == nil || role.may(.setTitle)
            else {
                return .forbidden(.updateConversation)
            }
            let newTitle: String? = title ?? nil
            let newDescription: String? = description ?? nil
            let newData: String? = data??.json
            try await connection.query(
                """
                UPDATE conversations
                SET title = CASE WHEN \(title != nil) THEN \(newTitle) ELSE title END,
                    description = CASE WHEN \(description != nil) THEN \(newDescription) ELSE description END,
                    data = CASE WHEN \(data != nil) THEN \(newData)::jsonb ELSE data END,
                    slow_mode_seconds = COALESCE(\(slowModeSeconds.map(Int32.init)), slow_mode_seconds)
                WHERE id = \(id)
                """,
                logger: logger
            ).collect()
            return .done
        }
        try outcome.complete()
        return try await conversation(id, for: actor)
    }
}
