import Foundation
import GRDB
import ScrollbackClient
import ScrollbackModels

/// The kit's offline store: one SQLite file (GRDB) that keeps, per
/// conversation, the window of messages a feed last showed (as contiguous
/// seq ranges, current as of one version), the read markers it saw, and its
/// outbox, and the profiles of the users each window (and the kept
/// conversation list) names, so an app opened offline shows names. Give it to `ConversationFeed(storage:)`: the feed shows what is on
/// disk at once, then resumes live from it, and its sends survive restarts.
///
/// It is bounded: when the messages held weigh more than `maxBytes` (their
/// JSON), the windows of the conversations opened least recently are
/// dropped, whole, until they fit; the conversation being written is kept,
/// and outboxes are never dropped (they hold what the user wrote). Each
/// call is one transaction.
public final class OfflineStore: FeedStorage, InboxStorage, Sendable {
    /// The default bound of the messages held: 32 MiB of their JSON.
    public static let defaultMaxBytes = 32 << 20

    public let maxBytes: Int
    private let database: DatabaseQueue

    /// Opens (creating it when missing) the store at `path`.
    public convenience init(path: String, maxBytes: Int = OfflineStore.defaultMaxBytes) throws {
        var configuration = Configuration()
        // Another store on the same file (another process, or another
        // instance in this one) may be writing: wait for it a while rather
        // than fail the write at once.
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // Written ahead: a write survives the app being killed; reads never wait for it.
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        try self.init(database: DatabaseQueue(path: path, configuration: configuration), maxBytes: maxBytes)
    }

    /// A store in memory only, gone with the process (for tests and previews).
    public static func inMemory(maxBytes: Int = OfflineStore.defaultMaxBytes) throws -> OfflineStore {
        try OfflineStore(database: DatabaseQueue(), maxBytes: maxBytes)
    }

    private init(database: DatabaseQueue, maxBytes: Int) throws {
        self.database = database
        self.maxBytes = max(maxBytes, 0)
        try Self.migrator.migrate(database)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("1: windows, read markers, outbox") { db in
            try db.execute(
                sql: """
                    CREATE TABLE conversation (
                        id TEXT PRIMARY KEY NOT NULL,
                        version INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL,
                        has_older INTEGER NOT NULL,
                        opened_at REAL NOT NULL,
                        bytes INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE message (
                        conversation_id TEXT NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                        seq INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        json BLOB NOT NULL,
                        PRIMARY KEY (conversation_id, seq)
                    ) WITHOUT ROWID;
                    CREATE TABLE segment (
                        conversation_id TEXT NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                        low INTEGER NOT NULL,
                        high INTEGER NOT NULL,
                        PRIMARY KEY (conversation_id, low)
                    ) WITHOUT ROWID;
                    CREATE TABLE read_marker (
                        conversation_id TEXT NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        seq INTEGER NOT NULL,
                        PRIMARY KEY (conversation_id, user_id)
                    ) WITHOUT ROWID;
                    CREATE TABLE outbox (
                        position INTEGER PRIMARY KEY AUTOINCREMENT,
                        conversation_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        json BLOB NOT NULL,
                        UNIQUE (conversation_id, client_id)
                    );
                    CREATE INDEX conversation_opened ON conversation (opened_at);
                    """)
        }
        migrator.registerMigration("2: the conversation list") { db in
            try db.execute(
                sql: """
                    CREATE TABLE inbox_row (
                        position INTEGER PRIMARY KEY,
                        json BLOB NOT NULL
                    );
                    """)
        }
        migrator.registerMigration("3: profiles kept with windows and the list") { db in
            try db.execute(
                sql: """
                    CREATE TABLE window_profile (
                        conversation_id TEXT NOT NULL REFERENCES conversation(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        json BLOB NOT NULL,
                        PRIMARY KEY (conversation_id, user_id)
                    ) WITHOUT ROWID;
                    CREATE TABLE inbox_profile (
                        user_id TEXT PRIMARY KEY NOT NULL,
                        version INTEGER NOT NULL,
                        json BLOB NOT NULL
                    ) WITHOUT ROWID;
                    """)
        }
        return migrator
    }

    // MARK: FeedStorage

    public func openWindow(of conversation: UUID) throws -> StoredWindow? {
        let id = conversation.stored
        return try database.write { db -> StoredWindow? in
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT version, last_seq, has_older FROM conversation WHERE id = ?", arguments: [id])
            else { return nil }
            try db.execute(sql: "UPDATE conversation SET opened_at = ? WHERE id = ?", arguments: [Self.now(), id])
            let decoder = ScrollbackJSON.decoder()
            let messages = try Data.fetchAll(
                db, sql: "SELECT json FROM message WHERE conversation_id = ? ORDER BY seq DESC", arguments: [id]
            ).map { try decoder.decode(Message.self, from: $0) }
            var readSeqs: [String: Int64] = [:]
            for marker in try Row.fetchAll(
                db, sql: "SELECT user_id, seq FROM read_marker WHERE conversation_id = ?", arguments: [id])
            {
                readSeqs[marker["user_id"]] = marker["seq"]
            }
            let users = try Data.fetchAll(
                db, sql: "SELECT json FROM window_profile WHERE conversation_id = ?", arguments: [id]
            ).map { try decoder.decode(UserProfile.self, from: $0) }
            return StoredWindow(
                messages: messages, version: row["version"], lastSeq: row["last_seq"], hasOlder: row["has_older"],
                readSeqs: readSeqs, users: ProfileSet(users))
        }
    }

    public func save(_ changes: WindowChanges) throws {
        let id = changes.conversationId.stored
        let encoder = ScrollbackJSON.encoder()
        let rows = try changes.messages.map { ($0.seq, $0.version, try encoder.encode($0)) }
        let profiles = try Self.encoded(changes.users)
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO conversation (id, version, last_seq, has_older, opened_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET
                        version = excluded.version, last_seq = excluded.last_seq, has_older = excluded.has_older
                    """,
                arguments: [id, changes.version, changes.lastSeq, changes.hasOlder, Self.now()])
            for (seq, version, json) in rows {
                try db.execute(
                    sql: """
                        INSERT INTO message (conversation_id, seq, version, json) VALUES (?, ?, ?, ?)
                        ON CONFLICT (conversation_id, seq) DO UPDATE SET version = excluded.version, json = excluded.json
                        """,
                    arguments: [id, seq, version, json])
            }
            // The ranges held, and nothing outside them.
            try db.execute(sql: "DELETE FROM segment WHERE conversation_id = ?", arguments: [id])
            for segment in changes.segments {
                try db.execute(
                    sql: "INSERT INTO segment (conversation_id, low, high) VALUES (?, ?, ?)",
                    arguments: [id, segment.lowerBound, segment.upperBound])
            }
            try db.execute(
                sql: """
                    DELETE FROM message WHERE conversation_id = ?1 AND NOT EXISTS (
                        SELECT 1 FROM segment s WHERE s.conversation_id = ?1 AND message.seq BETWEEN s.low AND s.high)
                    """,
                arguments: [id])
            if let readSeqs = changes.readSeqs {
                for (user, seq) in readSeqs {
                    try db.execute(
                        sql: """
                            INSERT INTO read_marker (conversation_id, user_id, seq) VALUES (?, ?, ?)
                            ON CONFLICT (conversation_id, user_id) DO UPDATE SET seq = max(seq, excluded.seq)
                            """,
                        arguments: [id, user, seq])
                }
            }
            for (user, version, json) in profiles {
                try db.execute(
                    sql: """
                        INSERT INTO window_profile (conversation_id, user_id, version, json) VALUES (?, ?, ?, ?)
                        ON CONFLICT (conversation_id, user_id) DO UPDATE SET version = excluded.version, json = excluded.json
                        WHERE excluded.version > window_profile.version
                        """,
                    arguments: [id, user, version, json])
            }
            for clientId in changes.acknowledged {
                try db.execute(
                    sql: "DELETE FROM outbox WHERE conversation_id = ? AND client_id = ?", arguments: [id, clientId])
            }
            try db.execute(
                sql: """
                    UPDATE conversation SET bytes = (
                        SELECT coalesce(sum(length(json)), 0) FROM message WHERE conversation_id = ?1)
                    WHERE id = ?1
                    """,
                arguments: [id])
            try evict(keeping: id, in: db)
        }
    }

    public func outbox(of conversation: UUID) throws -> [OutboxEntry] {
        let decoder = ScrollbackJSON.decoder()
        return try database.read { db in
            try Data.fetchAll(
                db, sql: "SELECT json FROM outbox WHERE conversation_id = ? ORDER BY position",
                arguments: [conversation.stored])
        }.map { try decoder.decode(OutboxEntry.self, from: $0) }
    }

    public func conversationsWithOutbox() throws -> [UUID] {
        try database.read { db in
            try String.fetchAll(
                db, sql: "SELECT conversation_id FROM outbox GROUP BY conversation_id ORDER BY min(position)")
        }.compactMap(UUID.init(uuidString:))
    }

    public func put(_ entry: OutboxEntry) throws {
        let json = try ScrollbackJSON.encoder().encode(entry)
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO outbox (conversation_id, client_id, json) VALUES (?, ?, ?)
                    ON CONFLICT (conversation_id, client_id) DO UPDATE SET json = excluded.json
                    """,
                arguments: [entry.conversationId.stored, entry.clientId, json])
        }
    }

    public func removeOutboxEntries(clientIds: [String], in conversation: UUID) throws {
        guard !clientIds.isEmpty else { return }
        try database.write { db in
            for clientId in clientIds {
                try db.execute(
                    sql: "DELETE FROM outbox WHERE conversation_id = ? AND client_id = ?",
                    arguments: [conversation.stored, clientId])
            }
        }
    }

    public func forget(_ conversation: UUID) throws {
        try database.write { db in
            try Self.dropWindow(conversation.stored, in: db)
            try db.execute(sql: "DELETE FROM outbox WHERE conversation_id = ?", arguments: [conversation.stored])
        }
    }

    // MARK: InboxStorage

    public func inboxRows() throws -> [Conversation] {
        let decoder = ScrollbackJSON.decoder()
        return try database.read { db in
            try Data.fetchAll(db, sql: "SELECT json FROM inbox_row ORDER BY position")
        }.map { try decoder.decode(Conversation.self, from: $0) }
    }

    public func saveInbox(_ rows: [Conversation]) throws {
        try saveInbox(rows, users: nil)
    }

    public func inboxUsers() throws -> ProfileSet {
        let decoder = ScrollbackJSON.decoder()
        return ProfileSet(
            try database.read { db in try Data.fetchAll(db, sql: "SELECT json FROM inbox_profile") }
                .map { try decoder.decode(UserProfile.self, from: $0) })
    }

    /// The rows, and the profiles they name: those of users the rows no
    /// longer name go; a profile replaces the one kept when of a higher version.
    public func saveInbox(_ rows: [Conversation], users: ProfileSet) throws {
        try saveInbox(rows, users: Optional(users))
    }

    /// The rows, and, unless nil, the profiles kept with them.
    private func saveInbox(_ rows: [Conversation], users: ProfileSet?) throws {
        let encoder = ScrollbackJSON.encoder()
        let encoded = try rows.map { try encoder.encode($0) }
        let profiles = try users.map { try Self.encoded(Array($0.profiles.values)) }
        try database.write { db in
            try db.execute(sql: "DELETE FROM inbox_row")
            for (position, json) in encoded.enumerated() {
                try db.execute(sql: "INSERT INTO inbox_row (position, json) VALUES (?, ?)", arguments: [position, json])
            }
            guard let profiles else { return }
            let kept = Set(profiles.map(\.0))
            for user in try String.fetchAll(db, sql: "SELECT user_id FROM inbox_profile") where !kept.contains(user) {
                try db.execute(sql: "DELETE FROM inbox_profile WHERE user_id = ?", arguments: [user])
            }
            for (user, version, json) in profiles {
                try db.execute(
                    sql: """
                        INSERT INTO inbox_profile (user_id, version, json) VALUES (?, ?, ?)
                        ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, json = excluded.json
                        WHERE excluded.version > inbox_profile.version
                        """,
                    arguments: [user, version, json])
            }
        }
    }

    /// Profiles as the store keeps them: by user id, with their version
    /// (a write keeps the higher one) and their JSON.
    private static func encoded(_ profiles: [UserProfile]) throws -> [(String, Int64, Data)] {
        let encoder = ScrollbackJSON.encoder()
        return try profiles.map { ($0.id, $0.version, try encoder.encode($0)) }
    }

    // MARK: Reading what is held

    /// The conversations whose windows are held, the one opened last first.
    public func conversations() throws -> [UUID] {
        try database.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM conversation ORDER BY opened_at DESC, id")
        }.compactMap(UUID.init(uuidString:))
    }

    /// What the messages held weigh (their JSON), in bytes.
    public func bytesHeld() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT coalesce(sum(bytes), 0) FROM conversation") ?? 0 }
    }

    /// The seq ranges held of a conversation, oldest first.
    public func segments(of conversation: UUID) throws -> [ClosedRange<Int64>] {
        try database.read { db in
            try Row.fetchAll(
                db, sql: "SELECT low, high FROM segment WHERE conversation_id = ? ORDER BY low",
                arguments: [conversation.stored]
            ).map { row -> ClosedRange<Int64> in row["low"]...row["high"] }
        }
    }

    // MARK: Bounds

    /// Drops the windows of the conversations opened least recently, but
    /// not `kept`'s, while the messages held weigh more than `maxBytes`.
    private func evict(keeping kept: String, in db: Database) throws {
        var total = try Int.fetchOne(db, sql: "SELECT coalesce(sum(bytes), 0) FROM conversation") ?? 0
        guard total > maxBytes else { return }
        let oldest = try Row.fetchAll(
            db, sql: "SELECT id, bytes FROM conversation WHERE id <> ? ORDER BY opened_at, id", arguments: [kept])
        for row in oldest where total > maxBytes {
            try Self.dropWindow(row["id"], in: db)
            total -= row["bytes"] as Int
        }
    }

    private static func dropWindow(_ id: String, in db: Database) throws {
        for table in ["message", "segment", "read_marker", "window_profile"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE conversation_id = ?", arguments: [id])
        }
        try db.execute(sql: "DELETE FROM conversation WHERE id = ?", arguments: [id])
    }

    /// Seconds since 1970, with the precision that orders two opens in a row.
    private static func now() -> Double { Date().timeIntervalSince1970 }
}

extension UUID {
    /// A conversation id as the store keeps it: lowercase, as the wire has it.
    fileprivate var stored: String { uuidString.lowercased() }
}
