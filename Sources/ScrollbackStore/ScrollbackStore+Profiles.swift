import Foundation
import PostgresNIO
import ScrollbackModels

/// The `name` and `picture` claims of a user's token (OpenID Connect), as
/// the server took them: each nil when absent or not usable.
public struct TokenProfile: Sendable, Hashable {
    public var name: String?
    public var picture: String?

    public init(name: String? = nil, picture: String? = nil) {
        self.name = name
        self.picture = picture
    }

    public var isEmpty: Bool { name == nil && picture == nil }
}

/// A profile as its row holds it: what the user or the operator set, and
/// what the identity provider's claims say.
public struct StoredProfile: Sendable, Equatable {
    public var id: UserID
    public var displayName: String?
    public var avatar: ProfileImage?
    public var data: CustomData?
    public var token = TokenProfile()
    public var version: Int64 = 0

    /// What every answer shows: what was set, else the claims.
    public var shown: UserProfile {
        UserProfile(
            id: id.rawValue, displayName: displayName ?? token.name,
            avatar: avatar ?? token.picture.map { ProfileImage(url: $0) }, data: data, version: version)
    }
}

/// Profiles (`sql/030_profiles.sql`): read by users who share a
/// conversation, searched by prefix, changed by their user, the operator
/// and the identity provider's claims.
extension ScrollbackStore {
    /// The columns of a profile under alias `u` (a LEFT JOIN may find none).
    static let profileColumns =
        "u.display_name, u.avatar::text, u.token_name, u.token_picture, COALESCE(u.profile_version, 0), u.data::text"

    /// SQL of "`user` shares a conversation with `viewer`" (both SQL expressions).
    static func sharesConversation(_ user: String, with viewer: String) -> String {
        """
        EXISTS (SELECT 1 FROM members a JOIN members b ON b.conversation_id = a.conversation_id
                WHERE a.user_id = \(viewer) AND b.user_id = \(user))
        """
    }

    static let avatarEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func storedProfile(
        id: UserID, displayName: String?, avatar: String?, tokenName: String?, tokenPicture: String?, version: Int64,
        data: String?
    ) throws -> StoredProfile {
        StoredProfile(
            id: id, displayName: displayName, avatar: try storedImage(avatar), data: try storedData(data),
            token: TokenProfile(name: tokenName, picture: tokenPicture), version: version)
    }

    /// The columns of `profileColumns`, as decoded.
    typealias ProfileColumns = (String?, String?, String?, String?, Int64, String?)

    static func storedProfile(id: String, _ columns: ProfileColumns) throws -> StoredProfile {
        try storedProfile(
            id: UserID(rawValue: id), displayName: columns.0, avatar: columns.1, tokenName: columns.2,
            tokenPicture: columns.3, version: columns.4, data: columns.5)
    }

    /// Decodes `id` then `profileColumns`.
    static func profile(in row: PostgresRow) throws -> StoredProfile {
        let (id, name, avatar, tokenName, tokenPicture, version, data) = try row.decode(
            (String, String?, String?, String?, String?, Int64, String?).self)
        return try storedProfile(id: id, (name, avatar, tokenName, tokenPicture, version, data))
    }

    // MARK: Reading

    /// The profiles of `ids` that `viewer` may read, in the order asked:
    /// their own, and those of users who share a conversation with them
    /// (nil: the operator, who reads any user recorded or a member
    /// somewhere). A user who was never described has a bare profile.
    public func profiles(of ids: [UserID], visibleTo viewer: UserID?) async throws -> [UserProfile] {
        guard !ids.isEmpty else { return [] }
        let names = ids.map(\.rawValue)
        let visible =
            viewer == nil
            ? "(u.id IS NOT NULL OR EXISTS (SELECT 1 FROM members m WHERE m.user_id = i.id))"
            : "(i.id = $2 OR \(Self.sharesConversation("i.id", with: "$2")))"
        var bindings = PostgresBindings()
        bindings.append(names)
        bindings.append(viewer?.rawValue ?? "")
        let rows = try await rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT i.id, \(Self.profileColumns)
                    FROM unnest($1::text[]) WITH ORDINALITY AS i (id, n)
                    LEFT JOIN users u ON u.id = i.id
                    WHERE \(visible)
                    ORDER BY i.n
                    """, binds: bindings),
            writes: false, as: .profiles)
        var seen = Set<String>()
        return try rows.map { try Self.profile(in: $0).shown }.filter { seen.insert($0.id).inserted }
    }

    /// The profiles of the users a page names (its senders): no check of who
    /// may read them (a member reads the senders of their conversation's
    /// messages), from the profile cache when it holds them.
    public func profiles(named users: Set<UserID>) async throws -> ProfileSet {
        let named = users.filter { !$0.rawValue.isEmpty }  // the system sends as no one
        guard !named.isEmpty else { return ProfileSet() }
        let (found, missing, ticket) = profileCache.lookup(named)
        guard !missing.isEmpty else { return ProfileSet(found) }
        let rows = try await rows(
            """
            SELECT i.id, \(unescaped: Self.profileColumns)
            FROM unnest(\(missing.map(\.rawValue))::text[]) AS i (id) LEFT JOIN users u ON u.id = i.id
            """,
            writes: false, as: .profiles)
        let read = try rows.map { try Self.profile(in: $0).shown }
        profileCache.keep(read, ticket: ticket)
        return ProfileSet(found + read)
    }

    /// One page of user search: users whose shown name or id has a word
    /// starting with `query` (`ProfileWords`), in the order of their shown
    /// name (lower case, byte order) then id, after `after`; only those who
    /// share a conversation with `viewer` (not the viewer), or any user for
    /// the operator (nil). `limit + 1` are read to tell whether more follow.
    public func searchUsers(
        _ query: String, visibleTo viewer: UserID?, after: UserSearchPosition?, limit: Int
    ) async throws -> (users: [UserProfile], next: UserSearchPosition?) {
        let (sql, bindings) = Self.userSearch(query, visibleTo: viewer, after: after, limit: limit)
        let rows = try await rows(PostgresQuery(unsafeSQL: sql, binds: bindings), writes: false, as: .profiles)
        var users: [UserProfile] = []
        var last: UserSearchPosition?
        for row in rows.prefix(limit) {
            let (id, name, avatar, tokenName, tokenPicture, version, data, sortName) = try row.decode(
                (String, String?, String?, String?, String?, Int64, String?, String).self)
            let profile = try Self.storedProfile(id: id, (name, avatar, tokenName, tokenPicture, version, data))
            users.append(profile.shown)
            last = UserSearchPosition(sortName: sortName, id: profile.id)
        }
        return (users, rows.count > limit ? last : nil)
    }

    /// The statement of a page of user search and its binds: `$1` the
    /// query as a `LIKE` prefix, `$2` the viewer, `$3` and `$4` the position
    /// after which the page starts, `$5` how many rows to read, `$6` the
    /// query's first one to three characters (`sql/033_user_search_order.sql`):
    /// the users of words starting with them come out of
    /// `user_words_by_prefix_N` in page order. The operator's form reads
    /// that index from the position on; the member's reads the users they
    /// share a conversation with once, then their words, and the planner
    /// may still start from the prefix's index when those users are many.
    static func userSearch(
        _ query: String, visibleTo viewer: UserID?, after: UserSearchPosition?, limit: Int
    ) -> (sql: String, binds: PostgresBindings) {
        let pattern =
            query.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_") + "%"
        // Characters as PostgreSQL's `left` counts them in UTF-8: code points.
        let scalars = query.unicodeScalars
        let length = min(max(scalars.count, 1), 3)
        var bindings = PostgresBindings()
        bindings.append(pattern)
        bindings.append(viewer?.rawValue ?? "")
        bindings.append(after?.sortName ?? "")
        bindings.append(after?.id.rawValue ?? "")
        bindings.append(limit + 1)
        bindings.append(String(String.UnicodeScalarView(scalars.prefix(length))))
        // Up to three characters, the equality is the whole condition.
        let words = "left(w.word, \(length)) = $6" + (scalars.count <= 3 ? "" : " AND w.word LIKE $1 ESCAPE '\\'")
        let shared =
            viewer == nil
            ? ("", "user_words w")
            : ("""
                WITH shared AS MATERIALIZED (
                    SELECT DISTINCT b.user_id FROM members a JOIN members b ON b.conversation_id = a.conversation_id
                    WHERE a.user_id = $2 AND b.user_id <> $2)

                """, "shared s JOIN user_words w ON w.user_id = s.user_id")
        let sql = """
            \(shared.0)SELECT u.id, \(profileColumns), p.sort_name
            FROM (SELECT DISTINCT w.sort_name, w.user_id FROM \(shared.1)
                  WHERE \(words) AND (w.sort_name, w.user_id) > ($3, $4)
                  ORDER BY w.sort_name, w.user_id
                  LIMIT $5) AS p
            JOIN users u ON u.id = p.user_id
            ORDER BY p.sort_name, p.user_id
            """
        return (sql, bindings)
    }

    /// The pairs of a viewer of `viewers` and a user of `users` who share
    /// a conversation (a user shares with themself when among the viewers):
    /// who is told of a profile change live.
    public func sharing(_ users: [UserID], with viewers: [UserID]) async throws -> [(viewer: UserID, changed: UserID)] {
        guard !users.isEmpty, !viewers.isEmpty else { return [] }
        let rows = try await rows(
            """
            SELECT DISTINCT a.user_id, b.user_id
            FROM members b JOIN members a ON a.conversation_id = b.conversation_id
            WHERE b.user_id = ANY(\(users.map(\.rawValue))::text[]) AND a.user_id = ANY(\(viewers.map(\.rawValue))::text[])
            """,
            writes: false, as: .profiles)
        return try rows.map { row in
            let (viewer, changed) = try row.decode((String, String).self)
            return (UserID(rawValue: viewer), UserID(rawValue: changed))
        }
    }

    // MARK: Writing

    /// Records `user` on first sight and, when their token carries the
    /// OpenID Connect `name` and `picture` claims, keeps those as the
    /// profile's fallback (a change of them is a change of the profile
    /// when the user set nothing of their own).
    public func ensureUser(_ userID: UserID, token: TokenProfile = TokenProfile()) async throws {
        if knownUsers.contains(userID, token: token) { return }
        if token.isEmpty {
            try await withConnection(writes: true, as: .ensureUser) { [logger] connection in
                try await Self.record(userID, on: connection, logger: logger)
            }
        } else {
            try await changeProfile(of: userID, as: .ensureUser) { $0.token = token }
        }
        knownUsers.insert(userID, token: token)
    }

    /// The user sets their profile (`PATCH /v1/users/me`).
    public func updateProfile(of user: UserID, _ change: UpdateProfileRequest) async throws -> UserProfile {
        try await changeProfile(of: user) { stored in
            stored.displayName = change.displayName.applied(to: stored.displayName)
            stored.avatar = change.avatar.applied(to: stored.avatar)
            stored.data = change.data.applied(to: stored.data)
        }
    }

    /// The operator sets a user's profile as a whole (`PUT /v1/admin/users/{id}/profile`).
    public func setProfile(of user: UserID, _ profile: SetProfileRequest) async throws -> UserProfile {
        try await changeProfile(of: user) { stored in
            stored.displayName = profile.displayName
            stored.avatar = profile.avatar
            stored.data = profile.data
        }
    }

    /// Changes `user`'s stored profile in one transaction, under the row's
    /// lock: records them if new, applies `change`, and when what shows
    /// changed takes the next version, writes the search words of the shown
    /// name, tells every instance (`n:`) and writes a `user.updated` event
    /// for the webhook.
    @discardableResult
    func changeProfile(
        of user: UserID, as name: StatementName = .profiles,
        alongside: (@Sendable (PostgresConnection, Logger) async throws -> Void)? = nil,
        _ change: @escaping @Sendable (inout StoredProfile) -> Void
    ) async throws -> UserProfile {
        defer { profileCache.invalidate(user) }
        return try await withTransaction(as: name) { [logger] connection in
            try await Self.record(user, on: connection, logger: logger)
            try await alongside?(connection, logger)
            let rows = try await connection.query(
                "SELECT u.id, \(unescaped: Self.profileColumns) FROM users u WHERE u.id = \(user.rawValue) FOR UPDATE",
                logger: logger
            ).collect()
            guard let row = rows.first else { throw MalformedRow() }
            let before = try Self.profile(in: row)
            var after = before
            change(&after)
            guard after != before else { return before.shown }
            if Self.isKept(before.avatar) && !Self.isKept(after.avatar) {
                // An avatar kept here that no longer shows (cleared, or the operator's URL instead).
                _ = try await connection.query("DELETE FROM images WHERE user_id = \(user.rawValue)", logger: logger).collect()
            }
            let shows = after.shown != before.shown
            let avatar = try after.avatar.map { String(decoding: try Self.avatarEncoder.encode($0), as: UTF8.self) }
            let updated = try await connection.query(
                """
                UPDATE users SET display_name = \(after.displayName), avatar = \(avatar)::jsonb,
                    data = \(after.data?.json)::jsonb,
                    token_name = \(after.token.name), token_picture = \(after.token.picture),
                    profile_version = CASE WHEN \(shows) THEN nextval('profile_versions') ELSE profile_version END
                WHERE id = \(user.rawValue)
                RETURNING profile_version
                """,
                logger: logger
            ).collect()
            after.version = try updated.first?.decode(Int64.self) ?? after.version
            guard shows else { return after.shown }
            if after.shown.displayName != before.shown.displayName {
                let words = after.shown.displayName.map(ProfileWords.words(of:)) ?? []
                // Two statements: an INSERT does not see what a DELETE of the same statement removed.
                _ = try await connection.query(
                    "DELETE FROM user_words WHERE user_id = \(user.rawValue) AND source = 'n' AND word <> ALL(\(words)::text[])",
                    logger: logger
                ).collect()
                _ = try await connection.query(
                    """
                    INSERT INTO user_words (user_id, source, word)
                    SELECT \(user.rawValue), 'n', w FROM unnest(\(words)::text[]) AS w
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                ).collect()
            }
            _ = try await connection.query(FeedEvent.notifyProfile(user), logger: logger).collect()
            _ = try await connection.query(
                """
                INSERT INTO outbox (event, sink, type, conversation_id, user_id, version)
                SELECT nextval('outbox_events'), s.name, 'user.updated', '00000000-0000-0000-0000-000000000000',
                       \(user.rawValue), \(after.version)
                FROM outbox_sinks s WHERE s.name = 'webhook'
                """,
                logger: logger
            ).collect()
            return after.shown
        }
    }

    /// Records `user` if new, with the search words of their id.
    static func record(_ user: UserID, on connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.query(
            """
            WITH recorded AS (INSERT INTO users (id) VALUES (\(user.rawValue)) ON CONFLICT (id) DO NOTHING RETURNING id)
            INSERT INTO user_words (user_id, source, word)
            SELECT recorded.id, 'i', w FROM recorded, unnest(\(ProfileWords.words(of: user.rawValue))::text[]) AS w
            """,
            logger: logger
        ).collect()
    }
}

/// Where a page of user search ended: the last user's sort name and id.
public struct UserSearchPosition: Sendable, Equatable {
    public var sortName: String
    public var id: UserID

    public init(sortName: String, id: UserID) {
        self.sortName = sortName
        self.id = id
    }
}
