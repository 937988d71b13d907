import Foundation
import PostgresNIO
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct MentionMigrationTests {
    /// sql/007_mentions.sql on a database that already holds messages: it
    /// applies without touching them, backfills nothing, and from then on
    /// sends and edits (of old messages too) record mentions.
    @Test func theMentionsMigrationAppliesToADatabaseWithMessages() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            let before = Migration.embedded.filter { $0.version < 7 }
            try await store.migrate(before)
            let id = try await store.createPlainly("alice", members: ["bob"])
            for n in 1...3 { try await store.appendPlainly("@bob old \(n)", from: "alice", to: id) }
            // Read by plain SQL: the store's statements read columns of later migrations.
            let rows: PostgresQuery = "SELECT seq || ' ' || body || ' ' || version FROM messages ORDER BY seq"
            let stored = try await store.values(String.self, rows)

            let applied = try await store.migrate()
            #expect(applied.contains("007_mentions"))
            #expect(try await store.values(String.self, rows) == stored)
            #expect(try await store.page(of: id, for: "bob", anchor: .newest, limit: 10).messages.map(\.body)
                == ["@bob old 3", "@bob old 2", "@bob old 1"])
            #expect(try await store.values(Int.self, "SELECT count(*)::int FROM mentions") == [0])
            #expect(try await store.conversation(id, for: "bob").unreadMentions == 0)

            _ = try await store.send(to: id, from: "alice", body: "@bob new", clientID: nil)
            _ = try await store.edit(1, in: id, by: "alice", body: "@bob old 1, edited")
            let listed = try await store.mentions(of: "bob", before: nil, limit: 10).mentions
            #expect(listed.map(\.seq) == [1, 4])
            #expect(try await store.conversation(id, for: "bob").unreadMentions == 2)
        }
    }
}
