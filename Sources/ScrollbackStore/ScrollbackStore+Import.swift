import Foundation
import PostgresNIO
import ScrollbackModels

/// One line of an import, checked on its own (`ImportLine` parsed and
/// validated by the server): what it declares, or what is wrong with it.
public struct ImportEntry: Sendable {
    public enum Record: Sendable {
        case conversation(
            id: UUID, createdBy: UserID, title: String?, createdAt: Date?, description: String? = nil,
            data: CustomData? = nil)
        case member(conversation: UUID, user: UserID, role: MemberRole, joinedAt: Date?)
        case message(
            conversation: UUID, externalID: String, sender: UserID, body: String, createdAt: Date,
            data: CustomData? = nil, type: String? = nil)
        case reaction(conversation: UUID, messageExternalID: String, user: UserID, emoji: String, createdAt: Date?)
        case readMarker(conversation: UUID, user: UserID, messageExternalID: String)
        /// A profile as a whole (the operator's `setProfile`).
        case user(id: UserID, displayName: String?, avatar: ProfileImage?, data: CustomData?)
    }

    /// 1 for the first line.
    public var line: Int
    /// Nil for a blank line, or one with a `problem`.
    public var record: Record?
    public var problem: String?

    public init(line: Int, record: Record?, problem: String? = nil) {
        self.line = line
        self.record = record
        self.problem = problem
    }
}

/// History brought from another service (`POST /v1/admin/import`).
///
/// The whole import is one transaction: its lines are staged in a
/// temporary table as they arrive, checked together (each problem with its
/// line), and only when there is none applied set by set; anything that
/// stops it halfway (a client gone, a database restart, a crash) rolls all
/// of it back, and running it again completes it. Messages get the next
/// seqs of their conversation in the order of their lines, which must be
/// `created_at` order; a conversation must have no messages, unless they
/// are exactly those of the file's lines (imported before: left as they
/// are, so importing a file twice changes nothing). Profiles (`user`
/// lines) are set as a whole; one set again as it is stays at its version.
/// The import pushes to no device and fires no webhook (`scrollback.import`,
/// sql/021); open sockets are told of the profiles it changed.
extension ScrollbackStore {
    /// Lines staged per statement.
    static let importBatch = 2_000

    public func importHistory(
        _ batches: AsyncThrowingStream<[ImportEntry], any Error>, dryRun: Bool
    ) async throws -> ImportReport {
        let (report, moved) = try await withConnection(writes: true, bounded: false, repeatable: false, as: .importing) {
            [logger] connection -> (ImportReport, [UUID]) in
            try await Self.whileOpen(connection) {
                try await connection.query("BEGIN", logger: logger)
                do {
                    let (report, moved) = try await Self.runImport(batches, dryRun: dryRun, on: connection, logger: logger)
                    if dryRun || report.problemCount > 0 {
                        try await connection.query("ROLLBACK", logger: logger)
                        return (report, [])
                    }
                    try await connection.query("COMMIT", logger: logger)
                    return (report, moved)
                } catch {
                    // A connection that died rolled back with it (and a query on
                    // it may never end); otherwise the transaction is ended here.
                    if !Self.endsConnection(error) { _ = try? await connection.query("ROLLBACK", logger: logger) }
                    throw error
                }
            }
        }
        for id in moved { pageCache.invalidate(id) }
        return report
    }

    /// The report, and the conversations whose messages it stored.
    private static func runImport(
        _ batches: AsyncThrowingStream<[ImportEntry], any Error>, dryRun: Bool, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> (ImportReport, [UUID]) {
        var moved: [UUID] = []
        for statement: PostgresQuery in [
            "SET LOCAL statement_timeout = 0",
            "SET LOCAL scrollback.import = 'on'",
            // What `pg_stat_activity` shows for it: an import, and of which schema.
            "SELECT set_config('application_name', 'scrollback import ' || current_schema(), true)",
            """
            CREATE TEMP TABLE import_lines (
                line            integer PRIMARY KEY,
                kind            text    NOT NULL,
                conversation_id uuid    NOT NULL,
                user_id         text,
                role            text,
                title           text,
                external_id     text,
                body            text,
                created_at      timestamptz,
                emoji           text,
                description     text,
                data            jsonb,
                message_type    text,
                avatar          jsonb,
                words           text[]
            ) ON COMMIT DROP
            """,
        ] {
            try await connection.query(statement, logger: logger)
        }
        var lines = 0
        var problems: [ImportProblem] = []
        var problemCount = 0
        for try await batch in batches {
            var staged = StagedLines()
            for entry in batch {
                lines = max(lines, entry.line)
                if let problem = entry.problem {
                    problemCount += 1
                    if problems.count < APILimits.maxImportProblemsListed {
                        problems.append(ImportProblem(line: entry.line, message: problem))
                    }
                }
                if let record = entry.record { staged.append(entry.line, record) }
            }
            if !staged.lines.isEmpty { try await connection.query(staged.insert, logger: logger) }
        }
        try await connection.query("ANALYZE import_lines", logger: logger)
        // One import of a schema at a time from here, once its lines are
        // staged: the second of two imports of the same file (a client
        // retrying a long one) checks the stored history after the first
        // committed, and finds it imported, rather than storing the same
        // messages again and breaking `messages_external_id`.
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtext('scrollback.import'), hashtext(current_schema()))", logger: logger)
        let found = try await connection.query(ImportSQL.problems, logger: logger).collect()
        for row in found {
            let (line, message) = try row.decode((Int32, String).self)
            problemCount += 1
            if problems.count < APILimits.maxImportProblemsListed {
                problems.append(ImportProblem(line: Int(line), message: message))
            }
        }
        problems.sort { $0.line < $1.line }
        var report = ImportReport(dryRun: dryRun, lines: lines, problems: problems, problemCount: problemCount)
        guard problemCount == 0 else { return (report, []) }
        try await connection.query(ImportSQL.alreadyImported, logger: logger)
        func count(_ query: PostgresQuery) async throws -> Int {
            let rows = try await connection.query(query, logger: logger).collect()
            return Int(try rows.first?.decode(Int64.self) ?? 0)
        }
        report.alreadyImported = try await count("SELECT count(*) FROM import_done")
        report.conversations = try await count(ImportSQL.conversations)
        report.members = try await count(ImportSQL.members)
        for row in try await connection.query(ImportSQL.messages, logger: logger).collect() {
            let (id, stored) = try row.decode((UUID, Int64).self)
            report.messages += Int(stored)
            moved.append(id)
        }
        // The conversations of reactions and read markers on messages stored
        // before, locked as those of the file's messages are (a retention
        // pass deleting those messages waits, and finds the reactions).
        try await connection.query(ImportSQL.lockReactedConversations, logger: logger)
        report.reactions = try await count(ImportSQL.reactions)
        try await connection.query(ImportSQL.reactionSums, logger: logger)
        report.readMarkers = try await count(ImportSQL.readMarkers)
        report.users = try await count(ImportSQL.profiles)
        try await connection.query(ImportSQL.profileWords, logger: logger)
        return (report, moved)
    }
}

/// Lines ready for one `INSERT` into `import_lines`, column by column.
private struct StagedLines {
    var lines: [Int32] = []
    var kinds: [String] = []
    var conversations: [UUID] = []
    var users: [String] = []
    var roles: [String] = []
    var titles: [String] = []
    var externalIDs: [String] = []
    var bodies: [String] = []
    var times: [String] = []
    var emojis: [String] = []
    var descriptions: [String] = []
    var datas: [String] = []
    var messageTypes: [String] = []
    var avatars: [String] = []
    var words: [String] = []

    /// Arrays cannot hold NULL here: an empty string stands for it.
    mutating func append(_ line: Int, _ record: ImportEntry.Record) {
        var (kind, conversation, user, role, title, externalID, body, time, emoji) =
            ("", UUID(), "", "", "", "", "", "", "")
        var (description, data, messageType, avatar, nameWords) = ("", "", "", "", "")
        func stamp(_ date: Date?) -> String { date.map(ScrollbackJSON.formatTimestamp) ?? "" }
        switch record {
        case .conversation(let id, let createdBy, let text, let createdAt, let about, let own):
            (kind, conversation, user, title, time) = ("conversation", id, createdBy.rawValue, text ?? "", stamp(createdAt))
            (description, data) = (about ?? "", own?.json ?? "")
        case .member(let id, let member, let memberRole, let joinedAt):
            (kind, conversation, user, role, time) = ("member", id, member.rawValue, memberRole.rawValue, stamp(joinedAt))
        case .message(let id, let external, let sender, let text, let createdAt, let own, let type):
            (kind, conversation, externalID, user, body, time) = ("message", id, external, sender.rawValue, text, stamp(createdAt))
            (data, messageType) = (own?.json ?? "", type ?? "")
        case .reaction(let id, let external, let reactor, let kindOf, let createdAt):
            (kind, conversation, externalID, user, emoji, time) = ("reaction", id, external, reactor.rawValue, kindOf, stamp(createdAt))
        case .readMarker(let id, let reader, let external):
            (kind, conversation, user, externalID) = ("read_marker", id, reader.rawValue, external)
        case .user(let id, let name, let image, let own):
            (kind, conversation, user, title, data) = ("user", ImportSQL.noConversation, id.rawValue, name ?? "", own?.json ?? "")
            avatar = image.flatMap { try? ScrollbackStore.avatarEncoder.encode($0) }.map { String(decoding: $0, as: UTF8.self) } ?? ""
            // Words hold no newline: `ProfileWords` splits at it.
            nameWords = (name.map(ProfileWords.words(of:)) ?? []).joined(separator: "\n")
        }
        lines.append(Int32(line))
        kinds.append(kind)
        conversations.append(conversation)
        users.append(user)
        roles.append(role)
        titles.append(title)
        externalIDs.append(externalID)
        bodies.append(body)
        times.append(time)
        emojis.append(emoji)
        descriptions.append(description)
        datas.append(data)
        messageTypes.append(messageType)
        avatars.append(avatar)
        words.append(nameWords)
    }

    var insert: PostgresQuery {
        """
        INSERT INTO import_lines
        SELECT l, k, c, NULLIF(u, ''), NULLIF(r, ''), NULLIF(ti, ''), NULLIF(x, ''), NULLIF(b, ''),
               NULLIF(t, '')::timestamptz, NULLIF(e, ''), NULLIF(de, ''), NULLIF(da, '')::jsonb, NULLIF(mt, ''),
               NULLIF(av, '')::jsonb, CASE WHEN k = 'user' THEN string_to_array(NULLIF(w, ''), E'\\n') END
        FROM unnest(\(lines)::int4[], \(kinds)::text[], \(conversations)::uuid[], \(users)::text[], \(roles)::text[],
                    \(titles)::text[], \(externalIDs)::text[], \(bodies)::text[], \(times)::text[], \(emojis)::text[],
                    \(descriptions)::text[], \(datas)::text[], \(messageTypes)::text[], \(avatars)::text[],
                    \(words)::text[])
             AS s (l, k, c, u, r, ti, x, b, t, e, de, da, mt, av, w)
        """
    }
}

/// The statements of an import, on `import_lines`.
enum ImportSQL {
    /// The conversation of a line that names none (`user`).
    static let noConversation = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// Every problem the lines have together, with its line: references to
    /// conversations, members and messages the file does not declare and
    /// the database does not have, `created_at` going back, an
    /// `external_id` given twice to different messages, a conversation that
    /// has messages already (not these), too many kinds of reaction, a
    /// conversation that would have two owners.
    static let problems: PostgresQuery = """
        WITH declared AS (
            SELECT DISTINCT conversation_id AS id FROM import_lines WHERE kind = 'conversation'
        ), existing AS (
            SELECT c.id, c.last_seq FROM conversations c
            WHERE c.id IN (SELECT DISTINCT conversation_id FROM import_lines)
        ), known AS (
            SELECT id FROM declared UNION SELECT id FROM existing
        ), everyone AS (
            SELECT DISTINCT conversation_id, user_id FROM import_lines WHERE kind = 'member'
            UNION
            SELECT m.conversation_id, m.user_id FROM members m WHERE m.conversation_id IN (SELECT id FROM existing)
        ), msgs AS (
            SELECT line, conversation_id, external_id, user_id, body, created_at,
                   max(created_at) OVER (PARTITION BY conversation_id ORDER BY line
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS latest_before,
                   first_value(line) OVER (PARTITION BY conversation_id, external_id ORDER BY line) AS first_line
            FROM import_lines WHERE kind = 'message'
        ), stored AS (
            -- Conversations with messages that are not exactly the file's.
            SELECT e.id FROM existing e
            WHERE e.last_seq > 0 AND EXISTS (SELECT 1 FROM msgs WHERE conversation_id = e.id)
              AND (e.last_seq <> (SELECT count(*) FROM msgs WHERE conversation_id = e.id AND line = first_line)
                   OR EXISTS (
                       SELECT 1 FROM messages dm WHERE dm.conversation_id = e.id
                         AND NOT EXISTS (
                             SELECT 1 FROM msgs f
                             WHERE f.conversation_id = e.id AND f.external_id = dm.external_id AND f.user_id = dm.sender)))
        ), targets AS (
            SELECT f.conversation_id, f.external_id FROM msgs f WHERE f.line = f.first_line
            UNION
            SELECT dm.conversation_id, dm.external_id FROM messages dm
            WHERE dm.conversation_id IN (SELECT id FROM existing) AND dm.external_id IS NOT NULL
        ), kinds AS (
            SELECT line, conversation_id, external_id, emoji,
                   dense_rank() OVER (PARTITION BY conversation_id, external_id ORDER BY first) AS rank
            FROM (
                SELECT line, conversation_id, external_id, emoji,
                       min(line) OVER (PARTITION BY conversation_id, external_id, emoji) AS first
                FROM import_lines WHERE kind = 'reaction'
            ) r
        )
        SELECT line, problem FROM (
            SELECT l.line, 'conversation ' || l.conversation_id
                   || ' is neither declared by a "conversation" line nor stored' AS problem
            FROM import_lines l
            WHERE l.kind NOT IN ('conversation', 'user') AND l.conversation_id NOT IN (SELECT id FROM known)
            UNION ALL
            SELECT l.line, l.user_id || ' is not a member of conversation ' || l.conversation_id
                   || ': add a "member" line for them'
            FROM import_lines l
            WHERE l.kind IN ('message', 'reaction', 'read_marker') AND l.conversation_id IN (SELECT id FROM known)
              AND NOT EXISTS (
                  SELECT 1 FROM everyone e WHERE e.conversation_id = l.conversation_id AND e.user_id = l.user_id)
            UNION ALL
            SELECT m.line, 'created_at ' || to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                   || ' is before that of an earlier message of conversation ' || m.conversation_id
                   || ': list each conversation''s messages in created_at order'
            FROM msgs m WHERE m.created_at < m.latest_before
            UNION ALL
            SELECT m.line, 'external_id ' || m.external_id || ' was given on line ' || m.first_line
                   || ' to a different message (sender or body)'
            FROM msgs m JOIN msgs f ON f.conversation_id = m.conversation_id AND f.line = m.first_line
            WHERE m.line <> m.first_line AND (f.body <> m.body OR f.user_id <> m.user_id)
            UNION ALL
            SELECT min(m.line), 'conversation ' || m.conversation_id
                   || ' already has messages: an import fills only a conversation that has none'
            FROM msgs m WHERE m.conversation_id IN (SELECT id FROM stored) GROUP BY m.conversation_id
            UNION ALL
            SELECT l.line, 'no message with external_id ' || l.external_id || ' in conversation ' || l.conversation_id
            FROM import_lines l
            WHERE l.kind IN ('reaction', 'read_marker') AND l.conversation_id IN (SELECT id FROM known)
              AND NOT EXISTS (
                  SELECT 1 FROM targets t WHERE t.conversation_id = l.conversation_id AND t.external_id = l.external_id)
            UNION ALL
            SELECT min(o.line), 'conversation ' || o.conversation_id
                   || ' would have more than one owner: give "role": "owner" to one member only'
            FROM (
                -- A member stored already keeps their role.
                SELECT l.line, l.conversation_id, l.user_id FROM import_lines l
                WHERE l.kind = 'member' AND l.role = 'owner'
                  AND NOT EXISTS (
                      SELECT 1 FROM members m WHERE m.conversation_id = l.conversation_id AND m.user_id = l.user_id)
            ) o
            GROUP BY o.conversation_id
            HAVING count(DISTINCT o.user_id) + (
                SELECT count(*) FROM members m WHERE m.conversation_id = o.conversation_id AND m.role = 'owner') > 1
            UNION ALL
            SELECT k.line, 'a message can have at most \(unescaped: "\(APILimits.maxReactionKinds)") kinds of reaction'
            FROM kinds k WHERE k.rank > \(unescaped: "\(APILimits.maxReactionKinds)")
        ) p
        ORDER BY line
        """

    /// Locks the conversations that reactions and read markers of the file
    /// name, in id order.
    static let lockReactedConversations: PostgresQuery = """
        SELECT 1 FROM conversations
        WHERE id IN (SELECT conversation_id FROM import_lines WHERE kind IN ('reaction', 'read_marker'))
        ORDER BY id FOR NO KEY UPDATE
        """

    /// `import_done`: the conversations whose messages are already the
    /// file's (imported before), which the import leaves as they are.
    static let alreadyImported: PostgresQuery = """
        CREATE TEMP TABLE import_done ON COMMIT DROP AS
        SELECT c.id FROM conversations c
        WHERE c.last_seq > 0 AND c.id IN (SELECT conversation_id FROM import_lines WHERE kind = 'message')
        """

    /// The new conversations; answers how many.
    static let conversations: PostgresQuery = """
        WITH users AS (
            INSERT INTO users (id)
            SELECT DISTINCT user_id FROM import_lines WHERE user_id IS NOT NULL
            ON CONFLICT (id) DO NOTHING
            RETURNING id
        ), id_words AS (
            -- The search words of the new users' ids, folded as sql/030 folds them.
            INSERT INTO user_words (user_id, source, word)
            SELECT DISTINCT u.id, 'i', left(w.word, 100)
            FROM users u
            CROSS JOIN LATERAL unnest(array_prepend(lower(u.id), regexp_split_to_array(lower(u.id), '[^a-z0-9]+')))
                AS w (word)
            WHERE w.word <> ''
            ON CONFLICT DO NOTHING
        ), created AS (
            INSERT INTO conversations (id, title, created_by, created_at, description, data)
            SELECT DISTINCT ON (conversation_id) conversation_id, title, user_id, COALESCE(created_at, now()),
                   description, data
            FROM import_lines WHERE kind = 'conversation'
            ORDER BY conversation_id, line
            ON CONFLICT (id) DO NOTHING
            RETURNING id
        )
        SELECT count(*) FROM created
        """

    /// The memberships (an existing one is kept as it is); every instance
    /// is told, for the members' inboxes.
    static let members: PostgresQuery = """
        WITH added AS (
            INSERT INTO members (conversation_id, user_id, role, joined_at)
            SELECT DISTINCT ON (conversation_id, user_id) conversation_id, user_id, COALESCE(role, 'member'),
                   COALESCE(created_at, now())
            FROM import_lines WHERE kind = 'member' AND conversation_id NOT IN (SELECT id FROM import_done)
            ORDER BY conversation_id, user_id, line
            ON CONFLICT (conversation_id, user_id) DO NOTHING
            RETURNING conversation_id, user_id,
                      \(unescaped: FeedEvent.notify("a", "conversation_id::text", "user_id"))
        )
        SELECT count(*) FROM added
        """

    /// The messages, with their conversation's next seqs and versions in
    /// line order, then the conversations moved on; every instance is told
    /// of each conversation once. The conversations are locked in id order,
    /// as every writer takes them.
    static let messages: PostgresQuery = """
        WITH locked AS (
            SELECT c.id, c.last_seq, c.version FROM conversations c
            WHERE c.id IN (SELECT conversation_id FROM import_lines WHERE kind = 'message')
              AND c.id NOT IN (SELECT id FROM import_done)
            ORDER BY c.id FOR NO KEY UPDATE
        ), numbered AS (
            SELECT m.conversation_id, m.user_id, m.body, m.created_at, m.external_id, m.data, m.message_type,
                   row_number() OVER (PARTITION BY m.conversation_id ORDER BY m.line) AS n
            FROM (
                SELECT DISTINCT ON (conversation_id, external_id) * FROM import_lines
                WHERE kind = 'message' ORDER BY conversation_id, external_id, line
            ) m
        ), stored AS (
            INSERT INTO messages (conversation_id, seq, sender, body, created_at, version, external_id, data, type)
            SELECT n.conversation_id, l.last_seq + n.n, n.user_id, n.body, n.created_at, l.version + n.n, n.external_id,
                   n.data, n.message_type
            FROM numbered n JOIN locked l ON l.id = n.conversation_id
            RETURNING conversation_id
        ), moved AS (
            UPDATE conversations c
            SET last_seq = c.last_seq + s.n, version = c.version + s.n, activity = nextval('conversation_activity'),
                changed_xid = pg_current_xact_id()
            FROM (SELECT conversation_id, count(*) AS n FROM stored GROUP BY conversation_id) s
            WHERE c.id = s.conversation_id
            RETURNING c.id, s.n, \(unescaped: FeedEvent.notify("u", "c.id::text", "c.last_seq::text", "c.version::text"))
        )
        SELECT id, n FROM moved
        """

    /// The reactions.
    static let reactions: PostgresQuery = """
        WITH added AS (
            INSERT INTO reactions (conversation_id, seq, emoji, user_id, created_at)
            -- Without a time, the reactions of a message keep the order of their lines.
            SELECT r.conversation_id, m.seq, r.emoji, r.user_id,
                   COALESCE(r.created_at, m.created_at + r.line * interval '1 microsecond')
            FROM import_lines r
            JOIN messages m ON m.conversation_id = r.conversation_id AND m.external_id = r.external_id
            WHERE r.kind = 'reaction' AND r.conversation_id NOT IN (SELECT id FROM import_done)
            ON CONFLICT DO NOTHING
            RETURNING conversation_id
        )
        SELECT count(*) FROM added
        """

    /// The aggregates of the messages the reactions are on, from the
    /// reactions stored (by the statement before).
    static let reactionSums: PostgresQuery = """
        UPDATE messages m
        SET \(unescaped: ScrollbackStore.reactionAggregate(conversation: "m.conversation_id", seq: "m.seq"))
        FROM (
            SELECT DISTINCT t.conversation_id, t.seq
            FROM import_lines r
            JOIN messages t ON t.conversation_id = r.conversation_id AND t.external_id = r.external_id
            WHERE r.kind = 'reaction' AND r.conversation_id NOT IN (SELECT id FROM import_done)
        ) a
        WHERE m.conversation_id = a.conversation_id AND m.seq = a.seq
        """

    /// The read markers (never moved back).
    static let readMarkers: PostgresQuery = """
        WITH marks AS (
            SELECT r.conversation_id, r.user_id, max(m.seq) AS seq
            FROM import_lines r
            JOIN messages m ON m.conversation_id = r.conversation_id AND m.external_id = r.external_id
            WHERE r.kind = 'read_marker' AND r.conversation_id NOT IN (SELECT id FROM import_done)
            GROUP BY r.conversation_id, r.user_id
        ), moved AS (
            UPDATE members me SET read_seq = marks.seq
            FROM marks
            WHERE me.conversation_id = marks.conversation_id AND me.user_id = marks.user_id AND me.read_seq < marks.seq
            RETURNING me.user_id
        )
        SELECT count(*) FROM moved
        """

    /// The profiles of `user` lines (the last line of a user wins), each
    /// that changed at the next version, every instance told; answers how
    /// many changed.
    static let profiles: PostgresQuery = """
        WITH given AS (
            SELECT DISTINCT ON (user_id) user_id, title AS display_name, avatar, data
            FROM import_lines WHERE kind = 'user' ORDER BY user_id, line DESC
        ), changed AS (
            UPDATE users u
            SET display_name = g.display_name, avatar = g.avatar, data = g.data,
                profile_version = nextval('profile_versions')
            FROM given g
            WHERE u.id = g.user_id
              AND (u.display_name, u.avatar, u.data) IS DISTINCT FROM (g.display_name, g.avatar, g.data)
            RETURNING u.id, \(unescaped: FeedEvent.notify("n", "u.id"))
        )
        SELECT count(*) FROM changed
        """

    /// The search words of the names of `user` lines (the last line of a
    /// user wins): those of a name the user shows.
    static let profileWords: PostgresQuery = """
        WITH given AS (
            SELECT DISTINCT ON (l.user_id) l.user_id, l.words, l.title
            FROM import_lines l WHERE l.kind = 'user' ORDER BY l.user_id, l.line DESC
        ), shown AS (
            -- A user without a name of their own shows the identity provider's
            -- (whose words stay); one with neither shows no name.
            SELECT g.user_id, COALESCE(g.words, '{}') AS words FROM given g JOIN users u ON u.id = g.user_id
            WHERE g.title IS NOT NULL OR u.token_name IS NULL
        ), dropped AS (
            DELETE FROM user_words w USING shown s
            WHERE w.user_id = s.user_id AND w.source = 'n' AND w.word <> ALL(s.words)
        )
        INSERT INTO user_words (user_id, source, word)
        SELECT s.user_id, 'n', x FROM shown s, unnest(s.words) AS x
        ON CONFLICT DO NOTHING
        """
}
