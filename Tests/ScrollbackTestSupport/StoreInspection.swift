import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackModels
@testable import ScrollbackStore

extension ScrollbackStore {
    /// The first column of every row of `query`, run on the store's own
    /// schema: for tests that look behind the API at what is stored (on
    /// the pool, but not timed as any of the store's statements).
    /// Appends a message by plain SQL, as a send of any schema from
    /// `002` on stores it: for tests of a migration, whose schema is older
    /// than the function the store sends with (`store_sends`, `sql/010`).
    public func appendPlainly(_ body: String, from sender: UserID, to id: UUID) async throws {
        _ = try await values(
            Int64.self,
            """
            WITH c AS (
                UPDATE conversations SET last_seq = last_seq + 1, version = version + 1 WHERE id = \(id)
                RETURNING id, last_seq, version
            )
            INSERT INTO messages (conversation_id, seq, sender, body, version)
            SELECT id, last_seq, \(sender.rawValue), \(body), version FROM c
            RETURNING seq
            """)
    }

    /// Creates a conversation of `creator` and `members` by plain SQL, as
    /// any schema from `001` on stores one: for tests of a migration.
    public func createPlainly(_ creator: UserID, members: [UserID]) async throws -> UUID {
        let everyone = Array(Set(members + [creator])).map(\.rawValue)
        let ids = try await values(
            UUID.self,
            """
            WITH c AS (INSERT INTO conversations (created_by) VALUES (\(creator.rawValue)) RETURNING id),
            m AS (INSERT INTO members (conversation_id, user_id) SELECT c.id, u FROM c, unnest(\(everyone)::text[]) AS u)
            SELECT id FROM c
            """)
        return ids[0]
    }

    public func values<T: PostgresDecodable>(_ type: T.Type, _ query: PostgresQuery) async throws -> [T] {
        try await primary.current.client.withConnection { [logger] connection in
            try await connection.query(query, logger: logger).collect()
        }.map { try $0.decode(T.self) }
    }
}

extension ScrollbackStore {
    /// The schema the store works in (each test has its own).
    public var schema: String? { options.searchPath }
}

extension TestDatabase {
    /// Runs `body` on a connection of its own (outside the store's pool) in
    /// `store`'s schema: another client of the same database, for holding
    /// locks or looking at rows while the store works.
    public static func otherConnection<T: Sendable>(
        to store: ScrollbackStore, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await admin(try await url()) { connection in
            if let schema = store.schema {
                try await connection.query("SET search_path TO \(unescaped: schema)", logger: logger)
            }
            return try await body(connection)
        }
    }

    /// Every raw payload on the feed's channel while `body` runs.
    public static func feedPayloads(
        on store: ScrollbackStore, _ body: () async throws -> Void
    ) async throws -> [String] {
        let received = NIOLockedValueBox<[String]>([])
        try await TestDatabase.otherConnection(to: store) { listener in
            try await withThrowingTaskGroup(of: Void.self) { group in
                let listening = NIOLockedValueBox(false)
                // The schema's channel (sql/027).
                var channel = FeedEvent.channel
                for try await name in try await listener.query("SELECT feed_channel()", logger: .init(label: "test"))
                    .decode(String.self)
                {
                    channel = name
                }
                group.addTask { [channel] in
                    try await listener.listen(on: channel) { notifications in
                        listening.withLockedValue { $0 = true }
                        for try await notification in notifications {
                            received.withLockedValue { $0.append(notification.payload) }
                        }
                    }
                }
                while !listening.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
                try await body()
                // Notifications of a commit arrive after its answer: the
                // marker is notified after every write above committed.
                _ = try await listener.query("SELECT pg_notify(feed_channel(), 'marker')", logger: .init(label: "test"))
                let deadline = ContinuousClock.now + .seconds(60)
                while !received.withLockedValue({ $0.contains("marker") }), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(5))
                }
                group.cancelAll()
            }
        }
        return received.withLockedValue { $0 }.filter { $0 != "marker" }
    }
}
