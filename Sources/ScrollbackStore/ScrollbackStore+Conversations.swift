import Foundation
import PostgresNIO
import ScrollbackModels

extension ScrollbackStore {
    /// At most this many members in one conversation.
    public static let memberLimit = APILimits.maxMembers

    /// Creates a conversation whose members are `creator` (its owner) plus
    /// `members` (deduplicated), in one statement; refused when one of them
    /// blocked the creator. `description` and `data` are stored as given.
    public func createConversation(
        creator: UserID, title: String?, members: [UserID], description: String? = nil, data: CustomData? = nil
    ) async throws -> Conversation {
        guard
            let created = try await insertConversation(
                creator: creator, title: title, members: members, description: description, data: data)
        else {
            throw MalformedRow()
        }
        return created
    }

    /// The conversation of exactly `creator` and `members` (at most
    /// ``APILimits/maxDistinctMembers`` in all), and whether this call
    /// created it: one per set of members however many ask at once (a
    /// unique key on the sorted member ids), until its members change.
    public func distinctConversation(
        creator: UserID, title: String?, members: [UserID], description: String? = nil, data: CustomData? = nil
    ) async throws -> (conversation: Conversation, created: Bool) {
        let everyone = Array(Set(members + [creator])).sorted()
        guard everyone.count <= APILimits.maxDistinctMembers else {
            throw StoreError.distinctTooLarge(limit: APILimits.maxDistinctMembers)
        }
        let key = Self.distinctKey(everyone)
        // A creation that lost the race to another finds the winner's next time.
        for _ in 0..<3 {
            let existing = try await rows(
                "SELECT id FROM conversations WHERE distinct_key = \(key)", writes: false, as: .createConversation)
            if let id = try existing.first?.decode(UUID.self) { return (try await conversation(id, for: creator), false) }
            if let created = try await insertConversation(
                creator: creator, title: title, members: members, description: description, data: data,
                distinctKey: key)
            {
                return (created, true)
            }
        }
        throw StoreError.unavailable
    }

    /// The `distinct_key` of a conversation of `members` (sorted, distinct):
    /// their ids joined with `,`, each with `%` and `,` percent-encoded so
    /// that no two sets of ids make one key. An id without either is itself,
    /// as in the keys of earlier versions (whose ids had neither).
    static func distinctKey(_ members: [UserID]) -> String {
        members.map { member in
            member.rawValue.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: ",", with: "%2C")
        }.joined(separator: ",")
    }

    /// Inserts a conversation and its members in one statement; nil when
    /// `distinctKey` is taken already.
    private func insertConversation(
        creator: UserID, title: String?, members: [UserID], description: String?, data: CustomData?,
        distinctKey: String? = nil
    ) async throws -> Conversation? {
        let everyone = Array(Set(members + [creator])).sorted().map(\.rawValue)
        guard everyone.count <= Self.memberLimit else { throw StoreError.conversationFull(limit: Self.memberLimit) }
        let rows = try await rows(
            """
            WITH refused AS (
                SELECT 1 FROM blocks WHERE blocked = \(creator.rawValue) AND blocker = ANY(\(everyone)::text[]) LIMIT 1
            ), c AS (
                INSERT INTO conversations (title, created_by, distinct_key, description, data)
                SELECT \(title), \(creator.rawValue), \(distinctKey), \(description), \(data?.json)::jsonb
                WHERE NOT EXISTS (SELECT 1 FROM refused)
                ON CONFLICT (distinct_key) WHERE distinct_key IS NOT NULL DO NOTHING
                RETURNING id, title, created_by, created_at, last_seq, version, activity, description, data
            ), m AS (
                INSERT INTO members (conversation_id, user_id, role)
                SELECT c.id, u, CASE WHEN u = \(creator.rawValue) THEN 'owner' ELSE 'member' END
                FROM c, unnest(\(everyone)::text[]) AS u
                RETURNING user_id, \(unescaped: FeedEvent.notify("a", "conversation_id::text", "user_id"))
            )
            SELECT EXISTS (SELECT 1 FROM refused), c.id, c.title, c.created_by, c.created_at, c.last_seq, c.version,
                   c.activity, ARRAY(SELECT user_id FROM m ORDER BY user_id COLLATE "C"), c.description, c.data
            FROM (SELECT) AS one LEFT JOIN c ON true
            """,
            writes: true, as: .createConversation)
        guard let row = rows.first else { throw MalformedRow() }
        let (refused, id, title, createdBy, createdAt, lastSeq, version, activity, members, description, data) =
            try row.decode((Bool, UUID?, String?, String?, Date?, Int64?, Int64?, Int64?, [String], String?, String?).self)
        if refused { throw StoreError.forbidden(.blocked) }
        guard let id, let createdBy, let createdAt, let lastSeq, let version, let activity else { return nil }
        return Conversation(
            id: id, title: title, createdBy: createdBy, createdAt: createdAt, lastSeq: lastSeq, members: members,
            version: version, activity: activity, role: .owner, description: description,
            data: try Self.storedData(data))
    }

    /// What a conversation looks like to the member `me`: with their read
    /// marker, unread count and the newest message as a preview. Selected from
    /// `members me JOIN conversations c LEFT JOIN messages lm`.
    static let conversationColumns = """
        c.id, c.title, c.created_by, c.created_at, c.last_seq, c.version, c.activity, c.first_seq,
        ARRAY(SELECT user_id FROM members WHERE conversation_id = c.id ORDER BY user_id COLLATE "C") AS members,
        me.read_seq, \(unreadCount) AS unread_count, \(unreadMentions) AS unread_mentions,
        \(mutedNow) AS muted, CASE WHEN \(mutedNow) THEN me.muted_until END AS muted_until,
        me.role, c.slow_mode_seconds, c.description AS conversation_description, c.data AS conversation_data,
        c.image::text AS conversation_image,
        \(MessageRow.columns("lm", conversation: "c.id", readers: "ARRAY[me.user_id]"))
        """

    /// Whether member row `me` has the conversation muted now: the one
    /// definition, for lists and for push.
    static let mutedNow = "(me.muted AND (me.muted_until IS NULL OR me.muted_until > now()))"

    /// The messages after member row `me`'s read marker, not sent by that
    /// member, not deleted: the one definition of "unread".
    static let unreadCount = unread(of: "me")

    /// `unreadCount` of the member row under `alias`.
    static func unread(of alias: String) -> String {
        """
        (SELECT count(*) FROM messages u
         WHERE u.conversation_id = \(alias).conversation_id AND u.seq > \(alias).read_seq
           AND u.sender <> \(alias).user_id AND NOT u.deleted)
        """
    }

    /// The unread counts over every conversation of the user of `me` (a
    /// relation with a `user_id` column, before this join): `t.unread`
    /// messages and `t.conversations` with any, muted ones too. The one
    /// definition, for the badge a push carries and for `GET /v1/unread`.
    static let unreadCountsJoin = """
        CROSS JOIN LATERAL (
            SELECT COALESCE(sum(n.unread), 0)::int8 AS unread, count(*) FILTER (WHERE n.unread > 0)::int8 AS conversations
            FROM members mm CROSS JOIN LATERAL (SELECT \(unread(of: "mm")) AS unread) n
            WHERE mm.user_id = me.user_id) t
        """

    /// The mentions of member row `me` after its read marker (see
    /// sql/007_mentions.sql: a deleted message has none, nor has the
    /// sender's own), counted on the mentions' primary key.
    static let unreadMentions = """
        (SELECT count(*) FROM mentions um
         WHERE um.conversation_id = me.conversation_id AND um.user_id = me.user_id AND um.seq > me.read_seq)
        """

    static let conversationSource = """
        members me
        JOIN conversations c ON c.id = me.conversation_id
        LEFT JOIN messages lm ON lm.conversation_id = c.id AND lm.seq = c.last_seq
        """

    static func decodeConversation(_ row: PostgresRow) throws -> Conversation {
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
            unreadMentions: try columns["unread_mentions"].decode(Int64.self),
            lastMessage: try MessageRow.decode(columns, alias: "lm", conversation: id),
            version: try columns["version"].decode(Int64.self), activity: try columns["activity"].decode(Int64.self),
            muted: try columns["muted"].decode(Bool.self), mutedUntil: try columns["muted_until"].decode(Date?.self),
            role: MemberRole(rawValue: try columns["role"].decode(String.self)) ?? .member,
            slowModeSeconds: Int(try columns["slow_mode_seconds"].decode(Int32.self)),
            firstSeq: try columns["first_seq"].decode(Int64.self),
            description: try columns["conversation_description"].decode(String?.self),
            data: try storedData(try columns["conversation_data"].decode(String?.self)),
            image: try storedImage(try columns["conversation_image"].decode(String?.self)))
        return conversation
    }

    /// A picture as a `jsonb` column holds it (nil: none).
    static func storedImage(_ json: String?) throws -> ProfileImage? {
        guard let json else { return nil }
        guard let image = try? JSONDecoder().decode(ProfileImage.self, from: Data(json.utf8)) else { throw MalformedRow() }
        return image
    }

    /// Custom data as a `jsonb` column holds it (nil: none).
    static func storedData(_ json: String?) throws -> CustomData? {
        guard let json else { return nil }
        do {
            return try CustomData(json: Array(json.utf8))
        } catch {
            throw MalformedRow()
        }
    }

    /// The conversation, if `user` is a member.
    public func conversation(_ id: UUID, for user: UserID) async throws -> Conversation {
        let rows = try await rows(
            """
            SELECT \(unescaped: Self.conversationColumns)
            FROM \(unescaped: Self.conversationSource)
            WHERE me.user_id = \(user.rawValue) AND me.conversation_id = \(id)
            """,
            writes: false, as: .conversation)
        guard let row = rows.first else { throw StoreError.conversationNotFound }
        return try Self.decodeConversation(row)
    }

    /// The details of conversations as `conversation_updated` tells them
    /// (`sql/034_conversation_details.sql`); an id that names none is left
    /// out. No check of who may read them: for the subscribers of each.
    public func details(of ids: [UUID]) async throws -> [ConversationDetails] {
        let rows = try await rows(
            """
            SELECT id, title, description, image::text, data::text, slow_mode_seconds, details_version
            FROM conversations WHERE id = ANY(\(ids))
            """,
            writes: false, as: .conversation)
        return try rows.map { row in
            let (id, title, description, image, data, slowMode, version) = try row.decode(
                (UUID, String?, String?, String?, String?, Int32, Int64).self)
            return ConversationDetails(
                conversationId: id, title: title, description: description, image: try Self.storedImage(image),
                data: try Self.storedData(data), slowModeSeconds: Int(slowMode), detailsVersion: version)
        }
    }

    /// `user`'s unread messages over all their conversations, and how many
    /// conversations have any (muted ones too): the badge, as a push
    /// carries it.
    public func unreadCounts(for user: UserID) async throws -> UnreadCounts {
        let rows = try await rows(
            """
            SELECT t.unread, t.conversations
            FROM (SELECT \(user.rawValue)::text AS user_id) me \(unescaped: Self.unreadCountsJoin)
            """,
            writes: false, as: .conversations)
        guard let row = rows.first else { return UnreadCounts(unreadMessages: 0, unreadConversations: 0) }
        let (unread, conversations) = try row.decode((Int64, Int64).self)
        return UnreadCounts(unreadMessages: unread, unreadConversations: conversations)
    }

    /// A page of the user's conversations, most recently active first, after
    /// `position` (nil: from the top). Keyset on the activity mark, never an
    /// OFFSET. A page stops at `limit` conversations or at about
    /// ``StoreOptions/maxResponseBytes`` of JSON, whichever comes first.
    ///
    /// Activity changes while a client pages: a send moves its conversation
    /// to the top. One that was already listed only moves (nothing is lost),
    /// but one not listed yet would jump above the cursor and be skipped. So
    /// the position also carries how many conversations were listed and a
    /// digest of their ids; the set of the user's conversations above the
    /// mark is compared with it, in the same snapshot as the page, and
    /// `activityChanged` says the two differ: the client then restarts from
    /// the top (merging by id) to pick up what moved.
    public func conversations(
        for user: UserID, limit: Int, after position: ConversationListPosition?
    ) async throws -> ConversationListPage {
        try await replicated(for: user) { try await readConversations(for: user, limit: limit, after: position) }
    }

    private func readConversations(
        for user: UserID, limit: Int, after position: ConversationListPosition?
    ) async throws -> ConversationListPage {
        let position = position ?? .start
        let rows = try await rows(
            """
            WITH passed AS (
                SELECT count(*) AS n, COALESCE(bit_xor(hashtextextended(c.id::text, 0)), 0) AS digest
                FROM members me JOIN conversations c ON c.id = me.conversation_id
                WHERE me.user_id = \(user.rawValue) AND c.activity >= \(position.mark)
            )
            SELECT passed.n AS passed_count, passed.digest AS passed_digest, page.*
            FROM passed
            LEFT JOIN LATERAL (
                SELECT \(unescaped: Self.conversationColumns), hashtextextended(c.id::text, 0) AS id_hash
                FROM \(unescaped: Self.conversationSource)
                WHERE me.user_id = \(user.rawValue) AND c.activity < \(position.mark)
                ORDER BY c.activity DESC
                LIMIT \(limit + 1)
            ) page ON true
            ORDER BY page.activity DESC
            """,
            writes: false, as: .conversations)
        var passed = (count: position.count, digest: position.digest)
        var page: [(Conversation, hash: Int64)] = []
        for row in rows {
            let columns = row.makeRandomAccess()
            passed = (try columns["passed_count"].decode(Int64.self), try columns["passed_digest"].decode(Int64.self))
            guard try columns["id"].decode(UUID?.self) != nil else { continue }
            page.append((try Self.decodeConversation(row), try columns["id_hash"].decode(Int64.self)))
        }
        let activityChanged = passed != (position.count, position.digest)
        // At most `limit` conversations, and fewer when their members and
        // last messages would make a response of many megabytes.
        let kept = ResponseBudget.fittingCount(of: page.prefix(limit), limit: options.maxResponseBytes) {
            ResponseBudget.conversation($0.0)
        }
        let hasMore = page.count > kept
        page.removeLast(page.count - kept)
        let next = page.last.map { last in
            ConversationListPosition(
                mark: last.0.activity, count: passed.count + Int64(page.count),
                digest: page.reduce(passed.digest) { $0 ^ $1.hash })
        }
        return ConversationListPage(
            conversations: page.map(\.0), next: hasMore ? next : nil, activityChanged: activityChanged)
    }

    /// Moves the user's read marker to `seq`, never backwards: a smaller seq
    /// leaves it where it is. The member row's lock orders concurrent updates,
    /// and each takes the greater of the stored and the new value.
    public func markRead(_ seq: Int64, in id: UUID, by user: UserID) async throws -> ReadMarker {
        let rows = try await rows(
            """
            WITH c AS (
                SELECT last_seq FROM conversations WHERE id = \(id)
            ), moved AS (
                UPDATE members
                SET read_seq = GREATEST(read_seq, \(seq)),
                    changed_xid = CASE WHEN \(seq) > read_seq THEN pg_current_xact_id() ELSE changed_xid END
                WHERE conversation_id = \(id) AND user_id = \(user.rawValue) AND \(seq) <= (SELECT last_seq FROM c)
                RETURNING conversation_id, user_id, read_seq,
                          \(unescaped: FeedEvent.notify("r", "conversation_id::text", "read_seq::text", "user_id"))
            )
            SELECT (SELECT last_seq FROM c),
                   EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue)),
                   me.read_seq, \(unescaped: Self.unreadCount), \(unescaped: Self.unreadMentions)
            FROM (SELECT) AS one LEFT JOIN moved me ON true
            """,
            writes: true, as: .markRead)
        guard
            let (lastSeq, isMember, readSeq, unread, mentions) = try rows.first?.decode(
                (Int64?, Bool, Int64?, Int64?, Int64?).self)
        else { throw MalformedRow() }
        guard let lastSeq, isMember else { throw StoreError.conversationNotFound }
        guard let readSeq else { throw StoreError.readBeyondNewest(lastSeq: lastSeq) }
        return ReadMarker(
            conversationId: id, readSeq: readSeq, unreadCount: unread ?? 0, unreadMentions: mentions ?? 0)
    }

    /// Adds `user` to the conversation; any member may add, not a user who
    /// is banned from it. Adding someone who is already a member changes
    /// nothing.
    public func addMember(_ user: UserID, to id: UUID, by actor: UserID) async throws -> Conversation {
        // A write drops the conversation's cached pages before it answers or throws (PageCache).
        defer { pageCache.invalidate(id) }
        let outcome: MembershipChange = try await withTransaction(as: .addMember) { [logger] connection in
            guard try await Self.lockConversation(id, member: actor, on: connection, logger: logger) != nil else {
                return .notVisible
            }
            // A statement after the lock sees every membership change
            // committed before it: the count and the conflict are exact.
            let rows = try await connection.query(
                """
                WITH banned AS (
                    SELECT 1 FROM bans
                    WHERE conversation_id = \(id) AND user_id = \(user.rawValue) AND \(unescaped: Self.banInForce)
                ), blocked AS (
                    SELECT 1 FROM blocks WHERE blocker = \(user.rawValue) AND blocked = \(actor.rawValue)
                ), ins AS (
                    INSERT INTO members (conversation_id, user_id)
                    SELECT \(id), \(user.rawValue)
                    WHERE (SELECT count(*) FROM members WHERE conversation_id = \(id)) < \(Self.memberLimit)
                      AND NOT EXISTS (SELECT 1 FROM banned) AND NOT EXISTS (SELECT 1 FROM blocked)
                    ON CONFLICT (conversation_id, user_id) DO NOTHING
                    RETURNING user_id, \(unescaped: FeedEvent.notify("a", "conversation_id::text", "user_id"))
                ), undistinct AS (
                    \(unescaped: Self.undistinct(id: "\(id)", ifAny: "ins"))
                )
                SELECT (SELECT count(*) FROM ins),
                       EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue)),
                       EXISTS (SELECT 1 FROM banned), EXISTS (SELECT 1 FROM blocked)
                """,
                logger: logger
            ).collect()
            guard let (inserted, wasMember, banned, blocked) = try rows.first?.decode((Int64, Bool, Bool, Bool).self)
            else {
                return .full
            }
            if blocked && !wasMember { return .forbidden(.blocked) }
            if banned { return .banned }
            return inserted == 1 || wasMember ? .done : .full
        }
        try outcome.complete()
        return try await conversation(id, for: actor)
    }

    /// Removes `user` from the conversation: a member may remove themself
    /// (the owner only once ownership is handed over, or as the last
    /// member); the owner removes admins and members, an admin members
    /// (`MemberRole.may`). With `ban`, the user is also kept out until
    /// `until` (nil: until the ban is lifted), and may be banned when no
    /// longer a member. A send or edit waiting for the conversation row
    /// meanwhile checks membership again once it has the lock, so nothing of
    /// the removed member's is stored after the removal.
    public func removeMember(
        _ user: UserID, from id: UUID, by actor: UserID, ban: Bool = false, until: Date? = nil
    ) async throws {
        // A write drops the conversation's cached pages before it answers or throws (PageCache).
        defer { pageCache.invalidate(id) }
        let outcome: MembershipChange = try await withTransaction(as: .removeMember) { [logger] connection in
            guard let role = try await Self.lockConversation(id, member: actor, on: connection, logger: logger) else {
                return .notVisible
            }
            let rows = try await connection.query(
                """
                SELECT (SELECT role FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue)),
                       (SELECT count(*) FROM members WHERE conversation_id = \(id)),
                       (SELECT role FROM bans WHERE conversation_id = \(id) AND user_id = \(user.rawValue))
                """,
                logger: logger
            ).collect()
            guard let (targetRole, count, bannedRole) = try rows.first?.decode((String?, Int64, String?).self) else {
                throw MalformedRow()
            }
            let target = targetRole.flatMap(MemberRole.init(rawValue:))
            // A ban in force is replaced only by who may lift it (019).
            let banned = bannedRole.flatMap(MemberRole.init(rawValue:))
            if actor == user {
                if ban { return .forbidden(.ban) }
                if role == .owner, count > 1 { return .forbidden(.ownerMustHandOver) }
            } else if ban {
                guard role.may(.ban, on: target), role.may(.ban, on: banned) else { return .forbidden(.ban) }
            } else {
                guard target != nil else { return role.may(.removeMember) ? .notAMember : .forbidden(.removeAnotherMember) }
                guard role.may(.removeMember, on: target) else { return .forbidden(.removeAnotherMember) }
            }
            if ban {
                try await connection.query(
                    """
                    INSERT INTO bans (conversation_id, user_id, banned_by, until, role)
                    VALUES (\(id), \(user.rawValue), \(actor.rawValue), \(until), \((target ?? banned ?? .member).rawValue))
                    ON CONFLICT (conversation_id, user_id) DO UPDATE
                    SET banned_by = EXCLUDED.banned_by, banned_at = now(), until = EXCLUDED.until, role = EXCLUDED.role
                    """,
                    logger: logger
                ).collect()
                guard target != nil else { return .done }
            }
            let removed = try await connection.query(Self.removal(of: user, from: id), logger: logger).collect()
            return removed.isEmpty ? .notAMember : .done
        }
        try outcome.complete()
    }

    /// Removes `user`'s membership of `id` (under the conversation's lock,
    /// taken before): every instance is told, the removal is recorded for
    /// inboxes that resume, and a distinct conversation becomes ordinary.
    /// Answers a row when there was a membership.
    static func removal(of user: UserID, from id: UUID) -> PostgresQuery {
        """
        WITH removed AS (
            DELETE FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue)
            RETURNING conversation_id, user_id, role,
                      \(unescaped: FeedEvent.notify("x", "conversation_id::text", "user_id"))
        ), recorded AS (
            INSERT INTO member_removals (user_id, conversation_id)
            SELECT user_id, conversation_id FROM removed
            ON CONFLICT (user_id, conversation_id) DO UPDATE
            SET removed_xid = pg_current_xact_id(), removed_change = nextval('membership_change')
        ), undistinct AS (
            \(unescaped: Self.undistinct(id: "\(id)", ifAny: "removed"))
        )
        SELECT user_id, role FROM removed
        """
    }

    /// Whether a row of `bans` keeps its user out now.
    static let banInForce = "(until IS NULL OR until > now())"

    /// The SQL that makes conversation `id` (a uuid literal) an ordinary
    /// one when `relation` has a row: its members changed, so it is no
    /// longer "the" conversation of its members at creation.
    static func undistinct(id: String, ifAny relation: String) -> String {
        """
        UPDATE conversations SET distinct_key = NULL
        WHERE id = '\(id)' AND distinct_key IS NOT NULL AND EXISTS (SELECT 1 FROM \(relation))
        """
    }

    enum MembershipChange: Sendable {
        case done, notVisible, full, notAMember, banned
        case forbidden(StoreError.Forbidden)

        /// Throws what the outcome says went wrong.
        func complete() throws {
            switch self {
            case .done: return
            case .notVisible: throw StoreError.conversationNotFound
            case .notAMember: throw StoreError.memberNotFound
            case .full: throw StoreError.conversationFull(limit: ScrollbackStore.memberLimit)
            case .banned: throw StoreError.banned
            case .forbidden(let reason): throw StoreError.forbidden(reason)
            }
        }
    }

    /// Locks the conversation row for the rest of the transaction, then (in
    /// that order, the order every writer takes them) checks that `member`
    /// still belongs to it; returns their role. The system
    /// (`UserID.system`) acts with the owner's role in every conversation.
    static func lockConversation(
        _ id: UUID, member: UserID, on connection: PostgresConnection, logger: Logger
    ) async throws -> MemberRole? {
        let rows = try await connection.query(
            """
            WITH conv AS (
                SELECT id FROM conversations WHERE id = \(id) FOR UPDATE
            ), member AS (
                -- FOR SHARE, not KEY SHARE: after the wait for the
                -- conversation, the role is read as the transaction that held
                -- it left it (KEY SHARE takes the version of this statement's
                -- snapshot: an owner who had just handed over still looked
                -- like the owner, and a second handover broke
                -- `members_one_owner`).
                SELECT role FROM members
                WHERE conversation_id = (SELECT id FROM conv) AND user_id = \(member.rawValue)
                FOR SHARE
            )
            SELECT role FROM member
            UNION ALL
            SELECT 'owner' FROM conv WHERE \(member.rawValue) = ''  -- the system (UserID.system)
            """,
            logger: logger
        ).collect()
        return try rows.first.flatMap { MemberRole(rawValue: try $0.decode(String.self)) }
    }
}

/// Where a pass over a user's conversation list stands (see
/// `ScrollbackStore.conversations(for:limit:after:)`).
public struct ConversationListPosition: Sendable, Equatable {
    /// The activity mark of the last conversation listed.
    public var mark: Int64
    /// How many conversations were listed so far in this pass.
    public var count: Int64
    /// The XOR of PostgreSQL's `hashtextextended` of their ids.
    public var digest: Int64

    public init(mark: Int64, count: Int64, digest: Int64) {
        self.mark = mark
        self.count = count
        self.digest = digest
    }

    /// Before the first page.
    public static let start = ConversationListPosition(mark: .max, count: 0, digest: 0)
}

/// A page of a user's conversations.
public struct ConversationListPage: Sendable, Equatable {
    public var conversations: [Conversation]
    /// Where the next page starts; nil on the last page.
    public var next: ConversationListPosition?
    /// Some conversation moved above the cursor (or left the list) since the
    /// pass began: restart from the top to see it.
    public var activityChanged: Bool
}

extension ScrollbackStore {
    /// Mutes conversation `id` for `user` (until `until`, or until unmuted
    /// when nil), or unmutes it. `StoreError.conversationNotFound` when the
    /// user is not a member.
    public func setMute(_ id: UUID, for user: UserID, muted: Bool, until: Date?) async throws -> MuteState {
        let updated = try await rows(
            """
            UPDATE members SET muted = \(muted), muted_until = \(muted ? until : nil)
            WHERE conversation_id = \(id) AND user_id = \(user.rawValue)
            RETURNING 1
            """,
            writes: true, as: .mute)
        guard !updated.isEmpty else { throw StoreError.conversationNotFound }
        return MuteState(conversationId: id, muted: muted, mutedUntil: muted ? until : nil)
    }
}
