import Foundation
import Logging
import PostgresNIO
import ScrollbackModels

/// Where a pass over search results stands: the last hit returned, by
/// the three keys of the results' order. The next page continues below it
/// and reads nothing of the hit itself, so a position names no message the
/// caller could not see: what it holds, the caller was given.
public struct SearchPosition: Sendable, Hashable {
    /// The hit's `created_at`, in microseconds since 1970 (PostgreSQL's
    /// precision: a `Date` would round it).
    public var createdAtMicroseconds: Int64
    public var conversationID: UUID
    public var seq: Int64

    public init(createdAtMicroseconds: Int64, conversationID: UUID, seq: Int64) {
        self.createdAtMicroseconds = createdAtMicroseconds
        self.conversationID = conversationID
        self.seq = seq
    }
}

/// A message by its conversation and seq (how far the search backfill went).
public struct MessagePosition: Sendable, Hashable {
    public var conversationID: UUID
    public var seq: Int64

    public init(conversationID: UUID, seq: Int64) {
        self.conversationID = conversationID
        self.seq = seq
    }
}

/// One page of search hits, newest first, and where the next one starts
/// (nil when there are no more).
public struct SearchPage: Sendable, Equatable {
    public var hits: [SearchHit]
    public var next: SearchPosition?
}

/// What a search found; a query without a word that can be searched for
/// (only stop words of the configuration, only punctuation, only negated
/// words) is a normal answer, not an error.
public enum SearchOutcome: Sendable, Equatable {
    case found(SearchPage)
    case noSearchableWords
}

extension ScrollbackStore {
    /// The messages of the caller's current conversations (or of
    /// `conversation` only) that match `query` (web search syntax:
    /// `"a phrase"`, `or`, `-word`), newest first: by `created_at`, then
    /// conversation id, then seq, all descending, continuing below `after`.
    /// Deleted messages are never found: they have no search vector.
    public func search(
        _ query: String, for user: UserID, in conversation: UUID?, after: SearchPosition?, limit: Int
    ) async throws -> SearchOutcome {
        try await replicated(for: user) {
            try await readSearch(query, for: user, in: conversation, after: after, limit: limit)
        }
    }

    private func readSearch(
        _ query: String, for user: UserID, in conversation: UUID?, after: SearchPosition?, limit: Int
    ) async throws -> SearchOutcome {
        let statement = SearchStatement(
            query: query, user: user, conversation: conversation, after: after, limit: limit + 1,
            configuration: try await searchConfiguration())
        let rows = try await rows(statement, writes: false, as: .search)
        guard let head = rows.first else { throw MalformedRow() }
        let first = head.makeRandomAccess()
        let searchable = try first["searchable"].decode(Bool.self)
        let visible = try first["visible"].decode(Bool.self)
        guard searchable else { return .noSearchableWords }
        guard visible else { throw StoreError.conversationNotFound }
        var hits: [SearchHit] = []
        var positions: [SearchPosition] = []
        for row in rows {
            let columns = row.makeRandomAccess()
            guard let id = try columns["h_conversation_id"].decode(UUID?.self) else { continue }
            guard let message = try MessageRow.decode(columns, alias: "h", conversation: id) else { throw MalformedRow() }
            let snippet = SnippetMarkup.snippet(try columns["snippet"].decode(String.self))
            hits.append(SearchHit(conversationId: id, seq: message.seq, message: message, snippet: snippet))
            positions.append(
                SearchPosition(
                    createdAtMicroseconds: try columns["h_created_us"].decode(Int64.self), conversationID: id,
                    seq: message.seq))
        }
        guard hits.count > limit else { return .found(SearchPage(hits: hits, next: nil)) }
        hits.removeLast(hits.count - limit)
        return .found(SearchPage(hits: hits, next: positions[limit - 1]))
    }
}

/// The search, one statement, prepared once per connection: the query
/// parsed under the configured text search configuration, whether it has a
/// word to search for, whether the conversation asked for is visible, and up
/// to `limit` hits (the page size plus one, to tell whether there is more)
/// with their snippets, which are made for those rows only. Each of the
/// caller's conversations gives its own newest `limit` hits, and the page is
/// the newest of those.
///
/// A conversation is searched in two steps, so that neither a common word
/// nor a rare one is slow in a big conversation. `since` is the time of its
/// `walked`-th newest message below the cursor (read from `messages_by_time`
/// alone, in its order). First the messages from that time on are read
/// newest first and filtered (a common word stops at `limit` hits; a rare
/// one reads about `walked` messages, never more, whatever plan is chosen);
/// only when they hold fewer than `limit` hits and there are older messages,
/// the index on the conversation and the words
/// (`messages_search_by_conversation`, sql/024) finds the older hits, which
/// are then few: a word with fewer than `limit` hits in `walked` messages is
/// in about `limit / walked` of them. The two steps split the messages by
/// time at `since`, so none is in both or in neither. The filter of the
/// first step is written `(... @@ ...) IS TRUE` so that it cannot be
/// answered from that index (which would read every hit of a common word),
/// and the second step's bound likewise so that it cannot become a walk of
/// `messages_by_time` (which would read the whole conversation for a rare
/// one).
///
/// The statement makes the choice the planner could not (it plans each
/// conversation of the caller's list without knowing its size), so one plan
/// serves every word and every conversation, and it is prepared: planning
/// it took longer than running it for a common word (BENCHMARKS.md).
struct SearchStatement: PostgresPreparedStatement {
    static let name = "scrollback_search_v3"
    static let sql = """
        WITH q AS (
            SELECT websearch_to_tsquery($7::regconfig, $1) AS query
        )
        SELECT numnode(q.query) > 0 AND querytree(q.query) <> 'T' AS searchable,
               ($3::uuid IS NULL
                OR EXISTS (SELECT 1 FROM members WHERE conversation_id = $3::uuid AND user_id = $2)) AS visible,
               h.conversation_id AS h_conversation_id, (extract(epoch FROM h.created_at) * 1000000)::int8 AS h_created_us,
               \(MessageRow.columns("h", conversation: "h.conversation_id", readers: "ARRAY[$2]")),
               ts_headline($7::regconfig, translate(h.body, '\(SnippetMarkup.delimiters)', ''), q.query,
                           '\(SnippetMarkup.headlineOptions)') AS snippet
        FROM q
        LEFT JOIN LATERAL (
            SELECT m.* FROM members mb
            CROSS JOIN LATERAL (
                WITH since AS (
                    SELECT b.created_at FROM messages b
                    WHERE b.conversation_id = mb.conversation_id
                      AND b.created_at <= coalesce(\(cursorTime), 'infinity')
                    ORDER BY b.created_at DESC
                    OFFSET \(walked - 1) LIMIT 1
                ), newest_hits AS (
                    SELECT * FROM messages n
                    WHERE n.conversation_id = mb.conversation_id
                      AND ($4::uuid IS NULL
                           OR (n.created_at, n.conversation_id, n.seq) < (\(cursorTime), $4::uuid, $5::int8))
                      AND n.created_at >= coalesce((SELECT created_at FROM since), '-infinity')
                      AND (n.search_vector @@ q.query) IS TRUE
                    ORDER BY n.created_at DESC, n.seq DESC
                    LIMIT $6
                )
                SELECT * FROM newest_hits
                UNION ALL
                (SELECT * FROM (
                    SELECT * FROM messages o
                    WHERE o.conversation_id = mb.conversation_id AND o.search_vector @@ q.query
                      AND (o.created_at < (SELECT created_at FROM since)) IS TRUE
                    OFFSET 0
                 ) older
                 WHERE (SELECT count(*) FROM newest_hits) < $6 AND EXISTS (SELECT FROM since)
                 ORDER BY older.created_at DESC, older.seq DESC
                 LIMIT $6)
            ) m
            WHERE mb.user_id = $2 AND ($3::uuid IS NULL OR mb.conversation_id = $3::uuid)
            ORDER BY m.created_at DESC, m.conversation_id DESC, m.seq DESC
            LIMIT $6
        ) h ON numnode(q.query) > 0 AND querytree(q.query) <> 'T'
        ORDER BY h.created_at DESC, h.conversation_id DESC, h.seq DESC
        """
    static let parameters = [
        "query", "user_id", "in_conversation", "after_conversation", "after_seq", "limit", "config", "after_created_us",
    ]
    static let bindingDataTypes: [PostgresDataType] = [.text, .text, .uuid, .uuid, .int8, .int8, .text, .int8]

    /// The cursor's `created_at`, exactly (whole seconds and microseconds
    /// apart: a product of the whole count with an interval goes through a
    /// double); NULL without a cursor.
    static let cursorTime =
        "(timestamptz 'epoch' + ($8::int8 / 1000000) * interval '1 second' + ($8::int8 % 1000000) * interval '1 microsecond')"

    var query: String
    var user: UserID
    var conversation: UUID?
    var after: SearchPosition?
    var limit: Int
    var configuration: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 8)
        bindings.append(query)
        bindings.append(user.rawValue)
        bindings.append(conversation)
        bindings.append(after?.conversationID)
        bindings.append(after?.seq)
        bindings.append(Int64(limit))
        bindings.append(configuration)
        bindings.append(after?.createdAtMicroseconds)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }

    /// How many of a conversation's newest messages (below the cursor) the
    /// first step reads at most before the index is asked for older hits.
    static let walked = 1000
}

/// How `ts_headline` marks the matched words: with two private-use
/// characters, removed from the body before it is marked, so a body cannot
/// fake a highlight; the marks become ranges of the plain text.
enum SnippetMarkup {
    static let start: Unicode.Scalar = "\u{E000}"
    static let stop: Unicode.Scalar = "\u{E001}"
    static let delimiters = "\u{E000}\u{E001}"
    /// The default excerpt (about 15 to 35 words around the best match; the
    /// whole body when it is shorter), marked with our delimiters.
    static let headlineOptions = "StartSel=\u{E000}, StopSel=\u{E001}"

    /// The text without the marks, and each marked range in UTF-16 code
    /// units of that text (the unit of JavaScript strings, NSString and
    /// NSRange).
    static func snippet(_ marked: String) -> SearchSnippet {
        var text = String.UnicodeScalarView()
        var highlights: [SearchHighlight] = []
        var offset = 0
        var opened: Int?
        for scalar in marked.unicodeScalars {
            switch scalar {
            case start:
                opened = offset
            case stop:
                if let begin = opened, offset > begin { highlights.append(SearchHighlight(start: begin, length: offset - begin)) }
                opened = nil
            default:
                text.append(scalar)
                offset += UTF16.width(scalar)
            }
        }
        return SearchSnippet(text: String(text), highlights: highlights)
    }
}

// MARK: - The text search configuration and the backfill

/// What setting the text search configuration found.
public enum SearchConfigurationChange: Sendable, Equatable {
    /// Already in use: vectors are made with it (or being made by the backfill).
    case unchanged
    /// Changed from the one named: every vector is made again by the backfill.
    case changed(from: String)
    /// The database has no configuration of that name; these are the ones it has.
    case unknown(available: [String])
}

/// One step of the backfill of search vectors.
public enum SearchBackfillStep: Sendable, Equatable {
    /// A batch of `count` messages got their vectors, up to `through`.
    case filled(count: Int, through: MessagePosition)
    /// Every message has its vector under the current configuration.
    case done
}

extension ScrollbackStore {
    /// Sets the text search configuration that vectors are made with (the
    /// name of a row of `pg_ts_config`, such as `simple` or `english`,
    /// optionally schema-qualified). A change makes the backfill start again
    /// from the first message; until it is through, older messages are
    /// found by their words under the previous configuration.
    public func setSearchConfiguration(_ name: String) async throws -> SearchConfigurationChange {
        try await withTransaction(as: .searchBackfill) { [logger] connection in
            let known = try await connection.query(
                """
                SELECT EXISTS (
                    SELECT 1 FROM pg_ts_config c JOIN pg_namespace n ON n.oid = c.cfgnamespace
                    WHERE n.nspname || '.' || c.cfgname = \(name)
                       OR (c.cfgname = \(name) AND pg_ts_config_is_visible(c.oid)))
                """,
                logger: logger
            ).collect().first?.decode(Bool.self) ?? false
            guard known else {
                let available = try await connection.query(
                    "SELECT c.oid::regconfig::text FROM pg_ts_config c ORDER BY 1", logger: logger
                ).collect().map { try $0.decode(String.self) }
                return .unknown(available: available)
            }
            let current = try await connection.query(
                "SELECT config::text, config = \(name)::regconfig FROM search_settings FOR UPDATE", logger: logger
            ).collect()
            guard let (previous, same) = try current.first?.decode((String, Bool).self) else { throw MalformedRow() }
            if same {
                searchConfigurationCache.withLockedValue { $0 = name }
                return .unchanged
            }
            try await connection.query(
                """
                UPDATE search_settings
                SET config = \(name)::regconfig, backfill_conversation = '00000000-0000-0000-0000-000000000000',
                    backfill_seq = 0, backfill_done = false, backfill_done_at = NULL
                """,
                logger: logger)
            searchConfigurationCache.withLockedValue { $0 = name }
            return .changed(from: previous)
        }
    }

    /// Whether every message has its search vector (the backfill has nothing to do).
    public func isSearchBackfillDone() async throws -> Bool {
        let rows = try await rows("SELECT backfill_done FROM search_settings", writes: false, as: .searchBackfill)
        guard let done = try rows.first?.decode(Bool.self) else { throw MalformedRow() }
        return done
    }

    /// The configuration this process searches with: the one it set, or the
    /// one the database has (read once). Every instance is to be started with
    /// the same one; an instance that runs while another changes it searches
    /// with the old one until it restarts.
    func searchConfiguration() async throws -> String {
        if let name = searchConfigurationCache.withLockedValue({ $0 }) { return name }
        let rows = try await rows("SELECT config::text FROM search_settings", writes: false, as: .search)
        guard let name = try rows.first?.decode(String.self) else { throw MalformedRow() }
        searchConfigurationCache.withLockedValue { $0 = name }
        return name
    }

    /// Makes the search vectors of the next `size` messages in primary-key
    /// order after where the backfill stands, in one short transaction, and
    /// records the new position in it. Only `search_vector` is written: the
    /// messages' versions, bodies and edit times stay as they are, and no
    /// change is announced. A message edited or deleted meanwhile is updated
    /// in its latest state (the trigger has made its vector anyway).
    public func backfillSearchVectors(batchSize size: Int = 2_000) async throws -> SearchBackfillStep {
        try await withTransaction(as: .searchBackfill) { [logger] connection in
            let settings = try await connection.query(
                "SELECT backfill_conversation, backfill_seq, backfill_done FROM search_settings FOR UPDATE",
                logger: logger
            ).collect()
            guard let (conversation, seq, done) = try settings.first?.decode((UUID, Int64, Bool).self) else {
                throw MalformedRow()
            }
            if done { return .done }
            let filled = try await connection.query(
                """
                WITH batch AS (
                    SELECT conversation_id, seq FROM messages
                    WHERE (conversation_id, seq) > (\(conversation), \(seq))
                    ORDER BY conversation_id, seq
                    LIMIT \(size)
                ), updated AS (
                    UPDATE messages m
                    SET search_vector = CASE WHEN m.deleted THEN NULL ELSE to_tsvector(s.config, m.body) END
                    FROM batch b, search_settings s
                    WHERE m.conversation_id = b.conversation_id AND m.seq = b.seq
                    RETURNING 1
                ), last AS (
                    SELECT conversation_id, seq FROM batch ORDER BY conversation_id DESC, seq DESC LIMIT 1
                )
                SELECT (SELECT count(*) FROM updated), last.conversation_id, last.seq
                FROM (SELECT 1) one LEFT JOIN last ON true
                """,
                logger: logger
            ).collect()
            guard let (count, lastConversation, lastSeq) = try filled.first?.decode((Int64, UUID?, Int64?).self)
            else { throw MalformedRow() }
            guard let lastConversation, let lastSeq else {
                try await connection.query(
                    "UPDATE search_settings SET backfill_done = true, backfill_done_at = now()", logger: logger)
                return .done
            }
            try await connection.query(
                "UPDATE search_settings SET backfill_conversation = \(lastConversation), backfill_seq = \(lastSeq)",
                logger: logger)
            return .filled(count: Int(count), through: MessagePosition(conversationID: lastConversation, seq: lastSeq))
        }
    }
}
