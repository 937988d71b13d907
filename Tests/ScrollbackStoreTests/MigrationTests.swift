import PostgresNIO
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct MigrationTests {
    @Test func migrationsApplyFromAnEmptySchemaOnceAndAreRecorded() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            let first = try await store.migrate()
            #expect(first == Migration.embedded.map(\.name))
            #expect(!first.isEmpty)
            let second = try await store.migrate()
            #expect(second.isEmpty)
            let recorded = try await store.values(String.self, "SELECT name FROM schema_migrations ORDER BY version")
            #expect(recorded == first)
            // The schema is really there: the tables answer.
            let tables = try await store.values(Int.self, "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('users', 'conversations', 'members', 'messages')").reduce(0, +)
            #expect(tables == 4)
        }
    }

    @Test func concurrentMigratorsApplyEachMigrationExactlyOnce() async throws {
        try await TestDatabase.withStore(maximumConnections: 6, migrated: false) { store in
            let runs = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<6 { group.addTask { try await store.migrate() } }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            // Exactly one run applied everything; the others found nothing to do.
            #expect(runs.filter { !$0.isEmpty } == [Migration.embedded.map(\.name)])
        }
    }

    /// A database that applied 013 before claims carried tokens (no
    /// `lease_token`, no `replayed_at`) gets them from 015, and its outbox
    /// claims and marks work.
    @Test func anOutboxFromBeforeClaimTokensIsUpgraded() async throws {
        try await TestDatabase.withStore { store in
            _ = try await store.values(
                Int.self,
                """
                WITH d AS (DELETE FROM schema_migrations WHERE name = '015_outbox_claim_tokens' RETURNING 1)
                SELECT count(*)::int FROM d
                """)
            _ = try await store.values(Int.self, "ALTER TABLE outbox DROP COLUMN lease_token, DROP COLUMN replayed_at")
            #expect(try await store.migrate() == ["015_outbox_claim_tokens"])
            try await store.registerOutboxSink(.webhook)
            _ = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
            let claimed = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            #expect(claimed.map(\.type) == ["conversation.created", "member.added", "member.added"])
            #expect(try await store.outboxDelivered(claimed.map(\.row), token: claimed[0].lease))
            #expect(try await store.replayOutbox(.webhook) == 0)
        }
    }

    /// Conversations from before roles get an owner: their creator, or
    /// their first member by user id when the creator had left. The call of
    /// the previous version's sends still stores.
    @Test func conversationsFromBeforeRolesGetAnOwner() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            try await store.migrate(Migration.embedded.filter { $0.version < 16 })
            let kept = try await store.createPlainly("alice", members: ["bob"])
            let left = try await store.createPlainly("carol", members: ["dave", "bob"])
            _ = try await store.values(
                Int.self,
                "WITH d AS (DELETE FROM members WHERE user_id = 'carol' RETURNING 1) SELECT count(*)::int FROM d")
            #expect(try await store.migrate(Migration.embedded.filter { $0.version <= 16 }) == ["016_roles_bans_slow_mode"])
            // Read as the schema stands at 016 (the store's own reads take later columns).
            func roles(_ id: UUID) async throws -> [String] {
                try await store.values(
                    String.self,
                    "SELECT user_id || ':' || role FROM members WHERE conversation_id = \(id) ORDER BY user_id COLLATE \"C\"")
            }
            #expect(try await roles(kept) == ["alice:owner", "bob:member"])
            #expect(try await roles(left) == ["bob:owner", "dave:member"])
            let seqs = try await store.values(
                Int64.self,
                """
                SELECT seq FROM store_sends(ARRAY[\(kept)]::uuid[], ARRAY['bob'], ARRAY['hi'], ARRAY[NULL::text],
                                            ARRAY[NULL::int8], '{}', '{}', 10)
                """)
            #expect(seqs == [1])
        }
    }

    @Test func embeddedMigrationsMatchTheSQLFolder() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: "sql").filter { $0.hasSuffix(".sql") }.sorted()
        #expect(Migration.embedded.map { $0.name + ".sql" } == names)
        for migration in Migration.embedded {
            let text = try String(contentsOfFile: "sql/\(migration.name).sql", encoding: .utf8)
            #expect(migration.sql.trimmingCharacters(in: .whitespacesAndNewlines) == text.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }
}

import Foundation
