import Foundation
import PostgresNIO
import ScrollbackModels

/// A user's data for the operator: everything about them, exported, and
/// their erasure. Both work in keyset batches, so neither memory nor any
/// lock grows with how much the user wrote.
extension ScrollbackStore {
    /// Rows per statement of an export or an erasure.
    public static let privacyBatch = 500

    /// Whether the service holds anything about `user`: they called it, or
    /// others recorded them (added them to a conversation, banned, blocked
    /// or reported them), whether or not they ever made a request. Every
    /// table a user's id is kept in whose rows an erasure removes is asked,
    /// each through an index on the id (bans and reports, the small ones,
    /// through a scan).
    public func userExists(_ user: UserID) async throws -> Bool {
        let id = user.rawValue
        let rows = try await rows(
            """
            SELECT EXISTS (SELECT 1 FROM users WHERE id = \(id))
                OR EXISTS (SELECT 1 FROM members WHERE user_id = \(id))
                OR EXISTS (SELECT 1 FROM member_removals WHERE user_id = \(id))
                OR EXISTS (SELECT 1 FROM devices WHERE user_id = \(id))
                OR EXISTS (SELECT 1 FROM blocks WHERE blocker = \(id) OR blocked = \(id))
                OR EXISTS (SELECT 1 FROM bans WHERE user_id = \(id) OR banned_by = \(id))
                OR EXISTS (SELECT 1 FROM reports WHERE reporter = \(id) OR user_id = \(id) OR message_sender = \(id))
                OR EXISTS (SELECT 1 FROM presence WHERE user_id = \(id))
            """, writes: false, as: .privacy)
        return try rows.first?.decode(Bool.self) ?? false
    }

    /// The conversations `user` is or was a member of, by id, `batch` at a
    /// time, after `after`.
    private func conversationsOf(_ user: UserID, after: UUID?, batch: Int) async throws -> [UUID] {
        let rows = try await rows(
            """
            SELECT id FROM (
                SELECT conversation_id AS id FROM members WHERE user_id = \(user.rawValue)
                UNION
                SELECT conversation_id FROM member_removals WHERE user_id = \(user.rawValue)
            ) c
            WHERE \(after)::uuid IS NULL OR id > \(after)
            ORDER BY id LIMIT \(batch)
            """,
            writes: false, as: .privacy)
        return try rows.map { try $0.decode(UUID.self) }
    }

    /// Every conversation of `user`, a batch of ids at a time.
    private func forEachConversation(of user: UserID, batch: Int, _ body: (UUID) async throws -> Void) async throws {
        var after: UUID?
        while true {
            let ids = try await conversationsOf(user, after: after, batch: batch)
            for id in ids { try await body(id) }
            guard ids.count == batch, let last = ids.last else { return }
            after = last
        }
    }

    // MARK: - Export

    /// Everything about `user`, one record at a time (`UserExportRecord`):
    /// the user, each conversation with their role and read marker (or that
    /// they left it), their messages in each, their reactions, devices (no
    /// tokens), the reports they filed and the users they blocked. Ask
    /// `userExists` first (the admin route does, to answer 404 before it
    /// streams): for a user the service holds nothing about, this emits a
    /// `user` record and nothing more.
    public func exportUser(
        _ user: UserID, batch: Int = privacyBatch, emit: (UserExportRecord) async throws -> Void
    ) async throws {
        // No row for a user who never called the service (others added them).
        let found = try await rows(
            """
            SELECT u.id, \(unescaped: Self.profileColumns), u.created_at, u.last_seen_at FROM users u
            WHERE u.id = \(user.rawValue)
            """,
            writes: false, as: .privacy)
        var exported = ExportedUser(id: user.rawValue, createdAt: nil, lastSeenAt: nil)
        if let row = found.first {
            let (id, name, avatar, tokenName, tokenPicture, version, data, createdAt, lastSeen) = try row.decode(
                (String, String?, String?, String?, String?, Int64, String?, Date?, Date?).self)
            let profile = try Self.storedProfile(id: id, (name, avatar, tokenName, tokenPicture, version, data))
            exported = ExportedUser(
                id: user.rawValue, createdAt: createdAt, lastSeenAt: lastSeen, displayName: profile.displayName,
                avatar: profile.avatar, data: profile.data, providerName: profile.token.name,
                providerPicture: profile.token.picture)
        }
        try await emit(.user(exported))
        if Self.isKept(exported.avatar), let image = try await avatar(of: user, visibleTo: nil) {
            try await emit(.avatar(ExportedImage(contentType: image.contentType, sha256: image.sha256, bytes: image.bytes)))
        }
        let readers = MessageRow.readers(user)
        try await forEachConversation(of: user, batch: batch) { id in
            let membership = try await rows(
                """
                SELECT c.title, m.role, m.joined_at, m.read_seq FROM conversations c
                LEFT JOIN members m ON m.conversation_id = c.id AND m.user_id = \(user.rawValue)
                WHERE c.id = \(id)
                """,
                writes: false, as: .privacy)
            if let (title, role, joined, read) = try membership.first?.decode((String?, String?, Date?, Int64?).self) {
                try await emit(
                    .membership(
                        ExportedMembership(
                            conversationId: id, title: title, role: role.flatMap(MemberRole.init(rawValue:)),
                            joinedAt: joined, readSeq: read, left: role == nil)))
            }
            var after: Int64 = 0
            while true {
                let messages = try await rows(
                    """
                    SELECT \(unescaped: MessageRow.columns("m", conversation: "m.conversation_id", readers: readers))
                    FROM messages m
                    WHERE m.conversation_id = \(id) AND m.seq > \(after) AND m.sender = \(user.rawValue)
                    ORDER BY m.seq LIMIT \(batch)
                    """,
                    writes: false, as: .privacy)
                for row in messages {
                    guard let message = try MessageRow.decode(row.makeRandomAccess(), alias: "m", conversation: id) else {
                        continue
                    }
                    try await emit(.message(Self.exported(message, of: user)))
                    after = message.seq
                }
                if messages.count < batch { break }
            }
            var reactionsAfter: (Int64, String) = (0, "")
            while true {
                let reactions = try await rows(
                    """
                    SELECT seq, emoji, created_at FROM reactions
                    WHERE conversation_id = \(id) AND user_id = \(user.rawValue)
                      AND (seq, emoji) > (\(reactionsAfter.0), \(reactionsAfter.1))
                    ORDER BY seq, emoji LIMIT \(batch)
                    """,
                    writes: false, as: .privacy)
                for row in reactions {
                    let (seq, emoji, at) = try row.decode((Int64, String, Date).self)
                    try await emit(.reaction(ExportedReaction(conversationId: id, seq: seq, emoji: emoji, createdAt: at)))
                    reactionsAfter = (seq, emoji)
                }
                if reactions.count < batch { break }
            }
        }
        for row in try await rows(
            "SELECT device_id, platform, created_at FROM devices WHERE user_id = \(user.rawValue) ORDER BY device_id",
            writes: false, as: .privacy)
        {
            let (device, platform, at) = try row.decode((String, String, Date).self)
            try await emit(.device(ExportedDevice(deviceId: device, platform: platform, createdAt: at)))
        }
        for row in try await rows(
            """
            SELECT \(unescaped: Self.reportColumns) FROM reports r
            WHERE r.reporter = \(user.rawValue) ORDER BY r.created_at, r.id
            """,
            writes: false, as: .privacy)
        {
            var reader = RowReader(row)
            try await emit(.report(try Self.decodeReport(&reader)))
        }
        for block in try await blocks(of: user) { try await emit(.block(block)) }
    }

    /// `message` of `user`'s as their export holds it: their own data only
    /// (GDPR Art. 15(4)). A reply keeps what it answers by seq and sender,
    /// but not the words of another user's message; a thread they started
    /// keeps its count and time, and of those who replied only themselves.
    static func exported(_ message: Message, of user: UserID) -> Message {
        var message = message
        if let parent = message.replyTo, parent.sender != user.rawValue {
            message.replyTo?.excerpt = nil
        }
        message.thread?.participants.removeAll { $0 != user.rawValue }
        return message
    }

    // MARK: - Erasure

    /// Erases `user`'s personal data, in short transactions: they leave
    /// every conversation (an owner's ownership passes to the
    /// longest-standing admin, else member), so nothing they send is stored
    /// from then on; then, conversation by conversation and `batch` seqs at
    /// a time, their messages become tombstones of ``UserID/erased`` (body,
    /// attachments, reactions and idempotency key gone, the seq kept so every
    /// other member's history stays dense, each batch taking the
    /// conversation's next version so open windows revalidate through
    /// `changes`), their reactions go and their id leaves the threads they
    /// replied in; then, in one transaction, every other row that names
    /// them: mentions, devices, presence, blocks either way, bans of them,
    /// slow-mode marks, the reports they filed or that name them, their
    /// uploads, the record of the conversations they left, and the user;
    /// where others keep what they did (a ban they made, a conversation they
    /// created) the id becomes ``UserID/erased``. The same transaction tells
    /// every instance (`e:`), which closes the user's sockets. An erasure
    /// that stopped halfway is run again as it is. `StoreError.userNotFound`
    /// for a user the service holds nothing about.
    public func eraseUser(_ user: UserID, batch: Int = privacyBatch) async throws -> UserErasure {
        guard try await userExists(user) else { throw StoreError.userNotFound }
        // First, so the user's tokens stop working while the rest goes.
        _ = try await revokeTokens(of: user)
        var erasure = UserErasure(userId: user.rawValue, conversations: 0, messages: 0, reactions: 0, devices: 0)
        try await forEachConversation(of: user, batch: batch) { id in
            if try await leave(id, user) { erasure.conversations += 1 }
            erasure.messages += try await eraseMessages(of: user, in: id, batch: batch)
            erasure.reactions += try await eraseReactions(of: user, in: id, batch: batch)
            try await eraseParticipation(of: user, in: id, batch: batch)
        }
        let id = user.rawValue
        let erased = UserID.erased.rawValue
        let counts = try await withTransaction(as: .privacy) { [logger] connection -> Int in
            let devices = try await connection.query(
                "DELETE FROM devices WHERE user_id = \(id) RETURNING device_id", logger: logger
            ).collect().count
            for statement: PostgresQuery in [
                "DELETE FROM mentions WHERE user_id = \(id)",
                "DELETE FROM presence WHERE user_id = \(id)",
                "DELETE FROM blocks WHERE blocker = \(id) OR blocked = \(id)",
                "DELETE FROM slow_mode_sends WHERE user_id = \(id)",
                "DELETE FROM bans WHERE user_id = \(id)",
                "UPDATE bans SET banned_by = \(erased) WHERE banned_by = \(id)",
                "DELETE FROM reports WHERE reporter = \(id) OR user_id = \(id)",
                """
                UPDATE reports SET message_body = NULL, message_sender = NULL
                WHERE message_sender = \(id)
                """,
                // Uploads and created conversations are in the conversations
                // they left (each read through its index).
                """
                UPDATE uploads SET removed_at = coalesce(removed_at, now()), uploader = \(erased)
                WHERE conversation_id IN (SELECT conversation_id FROM member_removals WHERE user_id = \(id))
                  AND uploader = \(id)
                """,
                """
                UPDATE conversations SET created_by = \(erased)
                WHERE id IN (SELECT conversation_id FROM member_removals WHERE user_id = \(id)) AND created_by = \(id)
                """,
                "DELETE FROM member_removals WHERE user_id = \(id)",
                "DELETE FROM users WHERE id = \(id)",
                "SELECT \(unescaped: FeedEvent.notify("e", "u.id")) FROM (SELECT \(id)::text AS id) u",
            ] {
                _ = try await connection.query(statement, logger: logger).collect()
            }
            return devices
        }
        erasure.devices = counts
        knownUsers.forget(user)
        return erasure
    }

    /// Removes `user` from conversation `id`, handing an owner's ownership
    /// to the longest-standing admin, else member; true when they were a member.
    private func leave(_ id: UUID, _ user: UserID) async throws -> Bool {
        defer { pageCache.invalidate(id) }
        return try await withTransaction(as: .privacy) { [logger] connection -> Bool in
            guard try await Self.lockConversation(id, member: .system, on: connection, logger: logger) != nil else {
                return false
            }
            let removed = try await connection.query(Self.removal(of: user, from: id), logger: logger).collect()
            guard let (_, role) = try removed.first?.decode((String, String).self) else { return false }
            if role == MemberRole.owner.rawValue {
                _ = try await connection.query(
                    """
                    UPDATE members SET role = 'owner'
                    WHERE conversation_id = \(id) AND user_id = (
                        SELECT user_id FROM members WHERE conversation_id = \(id)
                        ORDER BY role = 'admin' DESC, joined_at, user_id LIMIT 1)
                    RETURNING \(unescaped: FeedEvent.notify("p", "conversation_id::text", "role", "user_id"))
                    """,
                    logger: logger
                ).collect()
            }
            return true
        }
    }

    /// Makes `user`'s messages in `id` tombstones of ``UserID/erased``
    /// (those they deleted themselves too), `batch` seqs at a time, each
    /// batch one short transaction; answers how many.
    private func eraseMessages(of user: UserID, in id: UUID, batch: Int) async throws -> Int {
        var erased = 0
        var from: Int64 = 1
        while true {
            defer { pageCache.invalidate(id) }
            let (count, lastSeq) = try await withTransaction(as: .privacy) { [logger, from] connection -> (Int, Int64) in
                let rows = try await connection.query(
                    """
                    WITH conv AS (
                        SELECT id, last_seq FROM conversations WHERE id = \(id) FOR NO KEY UPDATE
                    ), locked AS (
                        -- Reads `conv` first: the conversation's lock comes first, as for every writer.
                        SELECT m.seq, c.last_seq FROM conv c JOIN messages m ON m.conversation_id = c.id
                        WHERE m.seq >= \(from) AND m.seq < \(from + Int64(batch))
                          AND m.sender = \(user.rawValue)
                        FOR UPDATE OF m
                    ), \(unescaped: Self.versionedTargets), unreact AS (
                        DELETE FROM reactions r USING target t WHERE r.conversation_id = \(id) AND r.seq = t.seq
                    ), unattach AS (
                        UPDATE uploads u SET removed_at = now() FROM target t
                        WHERE u.conversation_id = \(id) AND u.message_seq = t.seq AND u.removed_at IS NULL
                    ), erased AS (
                        UPDATE messages m
                        SET version = c.version - t.total + t.n, body = '', deleted = true, sent_body_hash = NULL,
                            reaction_emojis = NULL, reaction_counts = NULL, attachments = NULL, data = NULL,
                            sender = \(UserID.erased.rawValue), client_id = NULL
                        FROM c, target t
                        WHERE m.conversation_id = \(id) AND m.seq = t.seq
                        RETURNING m.seq
                    )
                    SELECT (SELECT count(*) FROM erased),
                           -- (`conv` cannot be read again once `c` updated its row.)
                           (SELECT last_seq FROM conversations WHERE id = \(id))
                    """,
                    logger: logger
                ).collect()
                guard let (count, last) = try rows.first?.decode((Int64, Int64?).self) else { throw MalformedRow() }
                return (Int(count), last ?? 0)
            }
            erased += count
            from += Int64(batch)
            if from > lastSeq { return erased }
        }
    }

    /// The CTEs `target` (the seqs of `locked`, numbered) and `c` (the
    /// conversation `conv` taking the next version for each, and its `u:`
    /// notification): each message an erasure changes takes a version of
    /// its own, one per change as always, `c.version - t.total + t.n`.
    static let versionedTargets = """
        target AS (
            SELECT seq, row_number() OVER (ORDER BY seq) AS n, count(*) OVER () AS total FROM locked
        ), c AS (
            UPDATE conversations SET version = version + (SELECT count(*) FROM target),
                changed_xid = pg_current_xact_id()
            WHERE id = (SELECT id FROM conv) AND EXISTS (SELECT 1 FROM target)
            RETURNING version,
                \(FeedEvent.notify("u", "id::text", "(SELECT max(seq) FROM target)::text", "version::text"))
        )
        """

    /// Takes `user`'s id out of the threads in `id` they replied in (the
    /// participants a thread's root shows), `batch` roots at a time, each
    /// root taking the conversation's next version as any change does.
    private func eraseParticipation(of user: UserID, in id: UUID, batch: Int) async throws {
        while true {
            defer { pageCache.invalidate(id) }
            let count = try await withTransaction(as: .privacy) { [logger] connection -> Int64 in
                let rows = try await connection.query(
                    """
                    WITH conv AS (
                        SELECT id FROM conversations WHERE id = \(id) FOR NO KEY UPDATE
                    ), locked AS (
                        SELECT m.seq FROM conv c JOIN messages m ON m.conversation_id = c.id
                        WHERE m.thread_participants @> ARRAY[\(user.rawValue)]::text[]
                        ORDER BY m.seq LIMIT \(batch)
                        FOR UPDATE OF m
                    ), \(unescaped: Self.versionedTargets), changed AS (
                        UPDATE messages m
                        SET version = c.version - t.total + t.n,
                            thread_participants = array_remove(m.thread_participants, \(user.rawValue))
                        FROM c, target t
                        WHERE m.conversation_id = \(id) AND m.seq = t.seq
                        RETURNING m.seq
                    )
                    SELECT count(*) FROM changed
                    """,
                    logger: logger
                ).collect()
                return try rows.first?.decode(Int64.self) ?? 0
            }
            if count < Int64(batch) { return }
        }
    }

    /// The SQL that sets a message's reaction aggregate (`reaction_emojis`
    /// and `reaction_counts`, sql/005) from the reactions stored: each emoji
    /// once with its count, in the order each was first used.
    static func reactionAggregate(conversation: String, seq: String) -> String {
        """
        reaction_emojis = (SELECT array_agg(a.emoji ORDER BY a.first, a.emoji) FROM (
            SELECT emoji, min(created_at) AS first FROM reactions
            WHERE conversation_id = \(conversation) AND seq = \(seq) GROUP BY emoji) a),
        reaction_counts = (SELECT array_agg(a.n ORDER BY a.first, a.emoji) FROM (
            SELECT emoji, min(created_at) AS first, count(*)::integer AS n FROM reactions
            WHERE conversation_id = \(conversation) AND seq = \(seq) GROUP BY emoji) a)
        """
    }

    /// Removes `user`'s reactions in `id`, the messages of `batch` at a
    /// time, rewriting each message's aggregate from the reactions left.
    private func eraseReactions(of user: UserID, in id: UUID, batch: Int) async throws -> Int {
        var removed = 0
        while true {
            defer { pageCache.invalidate(id) }
            let count = try await withTransaction(as: .privacy) { [logger] connection -> Int in
                _ = try await connection.query(
                    "SELECT 1 FROM conversations WHERE id = \(id) FOR NO KEY UPDATE", logger: logger
                ).collect()
                let gone = try await connection.query(
                    """
                    DELETE FROM reactions r
                    WHERE r.conversation_id = \(id) AND r.user_id = \(user.rawValue)
                      AND r.seq IN (
                          SELECT DISTINCT seq FROM reactions
                          WHERE conversation_id = \(id) AND user_id = \(user.rawValue) ORDER BY seq LIMIT \(batch))
                    RETURNING r.seq
                    """,
                    logger: logger
                ).collect()
                guard !gone.isEmpty else { return 0 }
                let seqs = Array(Set(try gone.map { try $0.decode(Int64.self) }))
                _ = try await connection.query(
                    """
                    WITH target AS (
                        SELECT seq, row_number() OVER (ORDER BY seq) AS n FROM unnest(\(seqs)::int8[]) AS s (seq)
                    ), c AS (
                        UPDATE conversations SET version = version + \(seqs.count), changed_xid = pg_current_xact_id()
                        WHERE id = \(id)
                        RETURNING version,
                            \(unescaped: FeedEvent.notify("u", "id::text", "\(seqs.max() ?? 0)", "version::text"))
                    )
                    UPDATE messages m
                    SET version = c.version - \(seqs.count) + t.n,
                        \(unescaped: Self.reactionAggregate(conversation: "m.conversation_id", seq: "m.seq"))
                    FROM c, target t
                    WHERE m.conversation_id = \(id) AND m.seq = t.seq
                    """,
                    logger: logger
                ).collect()
                return gone.count
            }
            removed += count
            if count == 0 { return removed }
        }
    }
}
