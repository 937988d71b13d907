import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct SearchMigrationTests {
    /// sql/009: the search index keeps no pending list, so no send has to
    /// merge one. `gin_clean_pending_list` merges what is pending and says
    /// how many pages it freed: some before the migration, none after; and
    /// none in the index on the conversation and the words that replaces it
    /// (sql/024), which finds what the old one found.
    @Test func afterItsMigrationTheSearchIndexHoldsNothingPending() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            try await store.migrate(Migration.embedded.filter { $0.version < 9 })
            let id = try await store.createPlainly("alice", members: ["bob"])
            func sendSome(_ word: String, plainly: Bool) async throws {
                for n in 1...20 {
                    if plainly {
                        try await store.appendPlainly("\(word) \(n)", from: "bob", to: id)
                    } else {
                        _ = try await store.send(to: id, from: "bob", body: "\(word) \(n)", clientID: nil)
                    }
                }
            }
            func pendingPages(_ index: String = "messages_search") async throws -> [Int] {
                try await store.values(Int.self, "SELECT gin_clean_pending_list(\(index)::regclass)::int")
            }
            // Before it, sends leave their words pending (the control).
            try await sendSome("olive", plainly: true)
            #expect(try await pendingPages().first ?? 0 > 0)
            try await sendSome("caper", plainly: true)

            // With the feed's channel (sql/027): the store's sends notify on
            // it; and the send function the store calls (sql/031).
            #expect(
                try await store.migrate(
                    Migration.embedded.filter {
                        $0.version < 24 || $0.name == "027_feed_channel" || $0.name == "031_custom_data"
                    })
                    .contains("009_search_index_without_pending_list"))
            // What was pending is merged by the migration, and sends leave nothing pending.
            #expect(try await pendingPages() == [0])
            try await sendSome("thyme", plainly: false)
            #expect(try await pendingPages() == [0])
            guard case .found(let found) = try await store.search("caper", for: "alice", in: nil, after: nil, limit: 50) else {
                Issue.record("caper is a searchable word")
                return
            }
            #expect(found.hits.count == 20)

            #expect(try await store.migrate().contains("024_search_by_conversation"))
            let indexes = try await store.values(
                String.self, "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'messages_search%' ORDER BY 1")
            #expect(indexes == ["messages_search_by_conversation"])
            try await sendSome("basil", plainly: false)
            #expect(try await pendingPages("messages_search_by_conversation") == [0])
            for (word, count) in [("caper", 20), ("olive", 20), ("basil", 20), ("thyme", 20)] {
                guard case .found(let page) = try await store.search(word, for: "alice", in: id, after: nil, limit: 50) else {
                    Issue.record("\(word) is a searchable word")
                    return
                }
                #expect(page.hits.count == count, "\(word)")
            }
        }
    }

    @Test func theSearchMigrationAppliesToADatabaseWithMessagesAndTheBackfillIndexesThem() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            try await store.migrate(Migration.embedded.filter { $0.version < 6 })
            let id = try await store.createPlainly("alice", members: ["bob"])
            for n in 1...30 { try await store.appendPlainly("olive \(n)", from: n % 2 == 0 ? "alice" : "bob", to: id) }
            // An edit and a deletion as the schema of the time stores them (the
            // store's statements read columns of later migrations).
            _ = try await store.values(
                Int64.self,
                """
                WITH c AS (UPDATE conversations SET version = version + 1 WHERE id = \(id) RETURNING version)
                UPDATE messages SET body = 'olive edited', edited_at = now(), version = (SELECT version FROM c)
                WHERE conversation_id = \(id) AND seq = 4 RETURNING seq
                """)
            _ = try await store.values(
                Int64.self,
                """
                WITH c AS (UPDATE conversations SET version = version + 1 WHERE id = \(id) RETURNING version)
                UPDATE messages SET body = '', deleted = true, version = (SELECT version FROM c)
                WHERE conversation_id = \(id) AND seq = 5 RETURNING seq
                """)
            let versions = try await store.values(Int64.self, "SELECT version FROM messages ORDER BY seq")

            #expect(try await store.migrate().contains("006_search"))
            // Added without a value: nothing was rewritten.
            #expect(try await store.values(Int.self, "SELECT count(*)::int FROM messages WHERE search_vector IS NOT NULL") == [0])
            guard case .found(let before) = try await store.search("olive", for: "alice", in: nil, after: nil, limit: 50) else {
                Issue.record("olive is a searchable word")
                return
            }
            #expect(before.hits.isEmpty)

            var steps = 0
            while try await store.backfillSearchVectors(batchSize: 7) != .done, steps < 20 { steps += 1 }
            #expect(steps == 5)
            guard case .found(let after) = try await store.search("olive", for: "alice", in: nil, after: nil, limit: 50) else {
                Issue.record("olive is a searchable word")
                return
            }
            #expect(after.hits.count == 29)
            #expect(after.hits.first?.seq == 30 && !after.hits.contains { $0.seq == 5 })
            #expect(try await store.values(Int64.self, "SELECT version FROM messages ORDER BY seq") == versions)
            // Messages sent after the migration are indexed as they are stored.
            _ = try await store.send(to: id, from: "bob", body: "olive oil", clientID: nil)
            #expect(try await store.values(Int.self, "SELECT count(*)::int FROM messages WHERE seq = 31 AND search_vector IS NOT NULL") == [1])
        }
    }
}
