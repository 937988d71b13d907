import Foundation
import PostgresNIO
import ScrollbackModels
@testable import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// User search against an oracle: every page of every prefix, for the
/// operator and for a member, is the users whose words start with it, in
/// page order, after names set, renamed at once, cleared, given by a token
/// and imported; and each word keeps its user's sort name
/// (`sql/033_user_search_order.sql`).
@Suite struct UserSearchStoreTests {
    static let firstNames = [
        "Mara", "Marta", "Márton", "Maria José", "Zoë", "Yusuf", "Иван", "mar_ia", "Ma", "Schmidt", "Émile", "Marx",
    ]
    static let lastNames = ["Martinez", "Ma", "Schmidt", "Marx", "Young", "Müller-Marsh", "50%"]

    static func name(_ n: Int) -> String? {
        if n % 9 == 0 { return nil }
        let first = firstNames[(n * 7) % firstNames.count]
        return n % 4 == 0 ? first : "\(first) \(lastNames[(n * 5) % lastNames.count])"
    }

    @Test func everyPageOfEveryPrefixIsTheOraclesForTheOperatorAndAMember() async throws {
        try await TestDatabase.withStore { store in
            let users = (0..<90).map { UserID(rawValue: String(format: "u%02d", $0)) }
            // The viewer shares a conversation with every third user.
            let shared = Set(users.enumerated().filter { $0.offset % 3 == 0 }.map(\.element))
            _ = try await store.createConversation(creator: "viewer", title: nil, members: Array(shared))
            _ = try await store.createConversation(creator: "u01", title: nil, members: Array(users.prefix(30)))
            // The viewer has a name that matches: a member never finds themself.
            try await store.ensureUser("viewer", token: TokenProfile(name: "Mara Viewer"))
            for (n, user) in users.enumerated() {
                if n % 5 == 1 {
                    try await store.ensureUser(user, token: TokenProfile(name: Self.name(n + 1)))
                } else {
                    _ = try await store.setProfile(of: user, SetProfileRequest(displayName: Self.name(n)))
                }
            }
            // Renamed at once, some twice, some cleared (their id, or their token's name, shows).
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (n, user) in users.enumerated() where n % 2 == 0 {
                    group.addTask {
                        _ = try await store.setProfile(of: user, SetProfileRequest(displayName: Self.name(n + 3)))
                        if n % 6 == 0 {
                            _ = try await store.setProfile(of: user, SetProfileRequest(displayName: Self.name(n + 8)))
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Imported: profiles of users known and new.
            let imported = (80..<100).map { n in
                ImportEntry(
                    line: n - 79,
                    record: .user(
                        id: UserID(rawValue: String(format: "u%02d", n)), displayName: Self.name(n * 11), avatar: nil,
                        data: nil))
            }
            let report = try await store.importHistory(AsyncThrowingStream { $0.yield(imported); $0.finish() }, dryRun: false)
            #expect(report.problemCount == 0)

            try await Self.expectWordsKeepTheirSortNames(store)
            let everyone = try await Self.oracleUsers(store)
            #expect(everyone.count == 101)  // u00 to u99 and the viewer

            var checked = 0
            for raw in ["m", "ma", "mar", "mart", "MÁRT", "mari", "z", "y", "и", "ив", "sch", "schm", "marx", "ma_", "50%",
                        "u", "u0", "u07", "maria j", "müller-m", "q"] {
                let query = try #require(ProfileWords.query(raw))
                for viewer in [nil, UserID("viewer")] {
                    let expected = everyone.filter { user in
                        user.words.contains { $0.unicodeScalars.starts(with: query.unicodeScalars) }
                            && (viewer == nil || shared.contains(user.id))
                    }.map(\.id)
                    for limit in [1, 4, 50] {
                        var found: [UserID] = []
                        var after: UserSearchPosition?
                        repeat {
                            let page = try await store.searchUsers(query, visibleTo: viewer, after: after, limit: limit)
                            #expect(page.users.count <= limit)
                            found += page.users.map { UserID(rawValue: $0.id) }
                            after = page.next
                            #expect(after == nil || page.users.count == limit)
                        } while after != nil && found.count <= expected.count
                        #expect(found == expected, "\(raw.debugDescription), \(viewer?.rawValue ?? "operator"), limit \(limit)")
                        checked += 1
                    }
                }
            }
            #expect(checked == 21 * 2 * 3)
        }
    }

    /// The migration on users and words written before it: each word takes
    /// its user's sort name, and renames from then on carry to the words.
    @Test func theMigrationGivesEveryWordItsUsersSortName() async throws {
        try await TestDatabase.withStore(migrated: false) { store in
            try await store.migrate(Migration.embedded.filter { $0.version < 33 })
            _ = try await store.values(
                Int.self,
                """
                WITH u AS (INSERT INTO users (id, display_name) VALUES ('ann', 'Zora Ann'), ('bo', NULL) RETURNING id)
                INSERT INTO user_words (user_id, source, word)
                VALUES ('ann', 'n', 'zora'), ('ann', 'n', 'ann'), ('ann', 'i', 'ann'), ('bo', 'i', 'bo')
                RETURNING 1
                """)
            let applied = try await store.migrate()
            #expect(applied.contains("033_user_search_order"))
            try await Self.expectWordsKeepTheirSortNames(store)
            #expect(try await store.values(String.self, "SELECT sort_name FROM user_words ORDER BY user_id, word")
                == ["zora ann", "zora ann", "zora ann", "bo"])
            _ = try await store.setProfile(of: "bo", SetProfileRequest(displayName: "Abel"))
            try await Self.expectWordsKeepTheirSortNames(store)
            #expect(try await store.searchUsers("a", visibleTo: nil, after: nil, limit: 5).users.map(\.id) == ["bo", "ann"])
        }
    }

    static func expectWordsKeepTheirSortNames(_ store: ScrollbackStore, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let stale = try await store.values(
            Int.self,
            "SELECT count(*)::int FROM user_words w JOIN users u ON u.id = w.user_id WHERE w.sort_name <> u.sort_name")
        #expect(stale == [0], "words whose sort name is not their user's", sourceLocation: sourceLocation)
    }

    struct OracleUser {
        var id: UserID
        var words: Set<String>
    }

    /// Every user, in page order (their sort name, then id, byte order), with
    /// the words of their id and of the name they show as `ProfileWords`
    /// folds them.
    static func oracleUsers(_ store: ScrollbackStore) async throws -> [OracleUser] {
        let rows = try await store.values(
            String.self,
            """
            SELECT json_build_array(id, sort_name, COALESCE(display_name, token_name))::text FROM users
            """)
        let users = try rows.map { row in
            let fields = try JSONDecoder().decode([String?].self, from: Data(row.utf8))
            let id = fields[0]!
            let words = Set(ProfileWords.words(of: id) + (fields[2].map(ProfileWords.words(of:)) ?? []))
            return (sortName: fields[1]!, user: OracleUser(id: UserID(rawValue: id), words: words))
        }
        return users.sorted {
            $0.sortName == $1.sortName
                ? Array($0.user.id.rawValue.utf8).lexicographicallyPrecedes(Array($1.user.id.rawValue.utf8))
                : Array($0.sortName.utf8).lexicographicallyPrecedes(Array($1.sortName.utf8))
        }.map(\.user)
    }
}
