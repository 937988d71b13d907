import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct SearchStoreTests {
    @Test func hitsComeNewestFirstFromTheCallersConversationsOnly() async throws {
        try await TestDatabase.withStore { store in
            let trip = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let work = try await store.createConversation(creator: "bob", title: nil, members: ["alice"]).id
            let secret = try await store.createConversation(creator: "mallory", title: nil, members: []).id
            _ = try await store.send(to: trip, from: "bob", body: "Bring apples", clientID: nil)
            _ = try await store.send(to: work, from: "bob", body: "Nothing to see", clientID: nil)
            _ = try await store.send(to: secret, from: "mallory", body: "apples are mine", clientID: nil)
            _ = try await store.send(to: work, from: "alice", body: "Apples in the kitchen", clientID: nil)
            _ = try await store.send(to: trip, from: "alice", body: "more APPLES", clientID: nil)

            let page = try await found(store.search("apples", for: "alice", in: nil, after: nil, limit: 10))
            #expect(page.hits.map(\.message.body) == ["more APPLES", "Apples in the kitchen", "Bring apples"])
            #expect(page.hits.map(\.conversationId) == [trip, work, trip])
            #expect(page.hits.map(\.seq) == [2, 2, 1])
            #expect(page.hits.allSatisfy { $0.seq == $0.message.seq && $0.conversationId == $0.message.conversationId })
            #expect(page.next == nil)
            #expect(page.hits[0].snippet.highlightedWords == ["APPLES"])

            // One conversation only; and never one the caller is not in.
            let inWork = try await found(store.search("apples", for: "alice", in: work, after: nil, limit: 10))
            #expect(inWork.hits.map(\.message.body) == ["Apples in the kitchen"])
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.search("apples", for: "alice", in: secret, after: nil, limit: 10)
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.search("apples", for: "alice", in: UUID(), after: nil, limit: 10)
            }
        }
    }

    @Test func pagesEndExactlyAtTheLastHit() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            for index in 1...6 { _ = try await store.send(to: id, from: "alice", body: "kiwi \(index)", clientID: nil) }
            let first = try await found(store.search("kiwi", for: "alice", in: nil, after: nil, limit: 3))
            #expect(first.hits.map(\.seq) == [6, 5, 4])
            let next = try #require(first.next)
            let second = try await found(store.search("kiwi", for: "alice", in: nil, after: next, limit: 3))
            #expect(second.hits.map(\.seq) == [3, 2, 1])
            #expect(second.next == nil)
            let all = try await found(store.search("kiwi", for: "alice", in: nil, after: nil, limit: 6))
            #expect(all.hits.count == 6 && all.next == nil)
        }
    }

    @Test func pagingHasNoDuplicatesOrGapsWhileNewHitsArrive() async throws {
        try await TestDatabase.withStore { store in
            let one = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let two = try await store.createConversation(creator: "alice", title: nil, members: []).id
            var sent: [String] = []
            for index in 1...9 {
                let body = "lemon \(index)"
                _ = try await store.send(to: index % 2 == 0 ? one : two, from: "alice", body: body, clientID: nil)
                sent.append(body)
            }
            var seen: [String] = []
            var cursor: SearchPosition?
            var pages = 0
            repeat {
                let page = try await found(store.search("lemon", for: "alice", in: nil, after: cursor, limit: 2))
                seen += page.hits.map(\.message.body)
                cursor = page.next
                pages += 1
                // Newer hits arrive between pages: above the pass, not in it.
                _ = try await store.send(to: pages % 2 == 0 ? one : two, from: "alice", body: "lemon new \(pages)", clientID: nil)
            } while cursor != nil && pages < 20
            #expect(seen == sent.reversed())
            #expect(pages == 5)
        }
    }

    @Test func deletedMessagesAreNeverFoundAndEditsChangeWhatIsFound() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            _ = try await store.send(to: id, from: "alice", body: "banana bread", clientID: nil)
            _ = try await store.send(to: id, from: "alice", body: "banana split", clientID: nil)
            _ = try await store.delete(1, in: id, by: "alice")
            var hits = try await found(store.search("banana", for: "alice", in: nil, after: nil, limit: 10)).hits
            #expect(hits.map(\.seq) == [2])

            let edited = try await store.edit(2, in: id, by: "alice", body: "cherry pie")
            #expect(try await found(store.search("banana", for: "alice", in: nil, after: nil, limit: 10)).hits.isEmpty)
            hits = try await found(store.search("cherry", for: "alice", in: nil, after: nil, limit: 10)).hits
            #expect(hits.map(\.message) == [edited])
            #expect(hits.first?.snippet == SearchSnippet(text: "cherry pie", highlights: [SearchHighlight(start: 0, length: 6)]))

            _ = try await store.delete(2, in: id, by: "alice")
            #expect(try await found(store.search("cherry", for: "alice", in: nil, after: nil, limit: 10)).hits.isEmpty)
            let vectors = try await store.values(Int.self, "SELECT count(*)::int FROM messages WHERE search_vector IS NOT NULL")
            #expect(vectors == [0])
        }
    }

    /// A conversation longer than the statement's walk (its newest 1,000
    /// messages) is searched in two steps: the walk, then the index for
    /// what is older. Every page of every search, in that conversation and
    /// across the caller's list, equals what reading every message finds,
    /// for a word only the second step finds, a common one the walk alone
    /// answers, one of middling frequency, and hits on both sides of the
    /// walk's last message among messages that share its `created_at`.
    @Test func aLongConversationIsSearchedExactlyOnBothSidesOfTheWalk() async throws {
        try await TestDatabase.withStore { store in
            let long = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let count = 2_600
            // seq 1601 is the walk's last message from the top; 1598...1603 share one time.
            let kiwi: Set<Int> = [5, 700, 1500, 1600, 1601, 1602, 2590]
            func body(_ seq: Int) -> String {
                if kiwi.contains(seq) { return "kiwi \(seq)" }
                if seq % 97 == 0 { return "plum \(seq)" }
                return seq % 10 == 0 ? "lunch \(seq)" : "filler \(seq)"
            }
            let bodies = (1...count).map(body)
            _ = try await store.values(
                Int.self,
                """
                WITH inserted AS (
                    INSERT INTO messages (conversation_id, seq, sender, body, version, created_at)
                    SELECT \(long), n, 'alice', (\(bodies)::text[])[n], n,
                           timestamptz '2025-01-01 00:00:00+00'
                           + make_interval(secs => CASE WHEN n BETWEEN 1598 AND 1603 THEN 1598 ELSE n END)
                    FROM generate_series(1, \(count)) n
                    RETURNING 1),
                counted AS (
                    UPDATE conversations SET last_seq = \(count), version = \(count) WHERE id = \(long) RETURNING 1)
                SELECT (SELECT count(*)::int FROM inserted) + (SELECT count(*)::int FROM counted)
                """)
            let short = try await store.createConversation(creator: "alice", title: nil, members: []).id
            for text in ["kiwi now", "lunch now", "plum now", "nothing"] {
                _ = try await store.send(to: short, from: "alice", body: text, clientID: nil)
            }

            // What reading every message finds, newest first.
            func expected(_ word: String, in conversation: UUID?) -> [String] {
                let old = (1...count).reversed().filter { bodies[$0 - 1].hasPrefix(word + " ") }.map { "\(long) \($0)" }
                let new = ["kiwi now", "lunch now", "plum now"].firstIndex { $0.hasPrefix(word) }.map { ["\(short) \($0 + 1)"] } ?? []
                return conversation == long ? old : new + old
            }
            for word in ["kiwi", "lunch", "plum"] {
                for conversation in [long, nil] {
                    for limit in [3, 20] {
                        var seen: [String] = []
                        var cursor: SearchPosition?
                        var pages = 0
                        repeat {
                            let page = try await found(store.search(word, for: "alice", in: conversation, after: cursor, limit: limit))
                            #expect(page.hits.allSatisfy { $0.message.body.hasPrefix(word) })
                            seen += page.hits.map { "\($0.conversationId) \($0.seq)" }
                            cursor = page.next
                            pages += 1
                        } while cursor != nil && pages < 500
                        let all = expected(word, in: conversation)
                        #expect(seen == all, "\(word) in \(conversation == nil ? "every conversation" : "the long one"), pages of \(limit)")
                        #expect(pages == max(1, (all.count + limit - 1) / limit))
                    }
                }
            }
        }
    }

    @Test func conversationsTheCallerLeftAreNotSearched() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            _ = try await store.send(to: id, from: "alice", body: "the secret plan", clientID: nil)
            #expect(try await found(store.search("plan", for: "bob", in: nil, after: nil, limit: 10)).hits.count == 1)
            try await store.removeMember("bob", from: id, by: "alice")
            #expect(try await found(store.search("plan", for: "bob", in: nil, after: nil, limit: 10)).hits.isEmpty)
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.search("plan", for: "bob", in: id, after: nil, limit: 10)
            }
        }
    }

    @Test func queriesWithoutASearchableWordAreSaidSo() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            _ = try await store.send(to: id, from: "alice", body: "the quick fox", clientID: nil)
            for query in ["!!! ...", "-fox", "\"\""] {
                #expect(try await store.search(query, for: "alice", in: nil, after: nil, limit: 10) == .noSearchableWords, "\(query)")
            }
            // `simple` has no stop words; `english` has.
            #expect(try await found(store.search("the", for: "alice", in: nil, after: nil, limit: 10)).hits.count == 1)
            #expect(try await store.setSearchConfiguration("english") == .changed(from: "simple"))
            #expect(try await store.search("the and of", for: "alice", in: nil, after: nil, limit: 10) == .noSearchableWords)
            // Said so also for a conversation the caller cannot see: nothing about it is revealed.
            #expect(try await store.search("the", for: "alice", in: UUID(), after: nil, limit: 10) == .noSearchableWords)
        }
    }

    @Test func textInOtherLanguagesIsFoundWithSimple() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            _ = try await store.send(to: id, from: "alice", body: "Grüße aus München!", clientID: nil)
            _ = try await store.send(to: id, from: "alice", body: "Привет, мир", clientID: nil)
            _ = try await store.send(to: id, from: "alice", body: "Ça va très bien", clientID: nil)
            // Letters beyond ASCII are folded to lower case by the database's
            // LC_CTYPE; the test cluster's is C, which folds ASCII only.
            for (query, body) in [("münchen", "Grüße aus München!"), ("мир", "Привет, мир"), ("très", "Ça va très bien")] {
                let hits = try await found(store.search(query, for: "alice", in: nil, after: nil, limit: 10)).hits
                #expect(hits.map(\.message.body) == [body], "\(query)")
            }
            let greeting = try await found(store.search("grüße münchen", for: "alice", in: nil, after: nil, limit: 10)).hits
            #expect(greeting.first?.snippet.highlightedWords == ["Grüße", "München"])
        }
    }

    @Test func snippetsMarkWordsInUTF16AndBodiesCannotFakeMarks() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let body = "😀👍🏽 naïve \u{E000}fake\u{E001} test 🇩🇪 test"
            _ = try await store.send(to: id, from: "alice", body: body, clientID: nil)
            let hit = try #require(try await found(store.search("test", for: "alice", in: nil, after: nil, limit: 10)).hits.first)
            #expect(hit.message.body == body)
            let text = "😀👍🏽 naïve fake test 🇩🇪 test"
            #expect(hit.snippet.text == text)
            let first = text.utf16.distance(from: text.utf16.startIndex, to: text.range(of: "test")!.lowerBound.samePosition(in: text.utf16)!)
            #expect(hit.snippet.highlights.first == SearchHighlight(start: first, length: 4))
            #expect(hit.snippet.highlights.count == 2)
            #expect(hit.snippet.highlightedWords == ["test", "test"])
        }
    }

    @Test func backfillFillsMessagesWithoutVectorsAndLeavesVersionsAlone() async throws {
        try await TestDatabase.withStore { store in
            let one = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let two = try await store.createConversation(creator: "alice", title: nil, members: []).id
            for index in 1...5 {
                _ = try await store.send(to: one, from: "alice", body: "grape \(index)", clientID: nil)
                _ = try await store.send(to: two, from: "alice", body: "grape \(index)", clientID: nil)
            }
            _ = try await store.edit(2, in: one, by: "alice", body: "grape edited")
            _ = try await store.delete(3, in: two, by: "alice")
            #expect(try await store.backfillSearchVectors() == .done)  // the table was empty when it was migrated
            let before = try await store.values(String.self, "SELECT string_agg(conversation_id || ':' || seq || ':' || version || ':' || deleted, ',' ORDER BY conversation_id, seq) FROM messages")
            // As if stored before the search existed.
            _ = try await store.values(
                Int.self,
                "WITH u AS (UPDATE messages SET search_vector = NULL RETURNING 1) SELECT count(*)::int FROM u")
            _ = try await store.values(
                Int.self,
                "WITH u AS (UPDATE search_settings SET backfill_done = false, backfill_conversation = '00000000-0000-0000-0000-000000000000', backfill_seq = 0 RETURNING 1) SELECT count(*)::int FROM u")
            #expect(try await found(store.search("grape", for: "alice", in: nil, after: nil, limit: 20)).hits.isEmpty)

            var steps: [SearchBackfillStep] = []
            while steps.last != .done, steps.count < 20 { steps.append(try await store.backfillSearchVectors(batchSize: 4)) }
            #expect(steps.count == 4)  // 10 messages in batches of 4, then done
            #expect(steps.prefix(3).map { step in if case .filled(let count, _) = step { count } else { -1 } } == [4, 4, 2])
            #expect(try await found(store.search("grape", for: "alice", in: nil, after: nil, limit: 20)).hits.count == 9)
            let after = try await store.values(String.self, "SELECT string_agg(conversation_id || ':' || seq || ':' || version || ':' || deleted, ',' ORDER BY conversation_id, seq) FROM messages")
            #expect(after == before)
            #expect(try await store.values(Int.self, "SELECT count(*)::int FROM messages WHERE deleted AND search_vector IS NOT NULL") == [0])
            #expect(try await store.backfillSearchVectors() == .done)
        }
    }

    @Test func changingTheConfigurationIndexesEverythingAgain() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            _ = try await store.send(to: id, from: "alice", body: "the dogs were running", clientID: nil)
            #expect(try await found(store.search("run", for: "alice", in: nil, after: nil, limit: 10)).hits.isEmpty)
            #expect(try await store.setSearchConfiguration("simple") == .unchanged)
            guard case .unknown(let available) = try await store.setSearchConfiguration("klingon") else {
                Issue.record("an unknown configuration was accepted")
                return
            }
            #expect(available.contains("simple") && available.contains("english"))

            #expect(try await store.setSearchConfiguration("english") == .changed(from: "simple"))
            // New messages are indexed with it at once; older ones by the backfill.
            _ = try await store.send(to: id, from: "alice", body: "she runs", clientID: nil)
            #expect(try await found(store.search("run", for: "alice", in: nil, after: nil, limit: 10)).hits.map(\.seq) == [2])
            var steps = 0
            while try await store.backfillSearchVectors() != .done, steps < 10 { steps += 1 }
            #expect(try await found(store.search("run", for: "alice", in: nil, after: nil, limit: 10)).hits.map(\.seq) == [2, 1])
            #expect(try await store.setSearchConfiguration("english") == .unchanged)
        }
    }

    private func found(_ outcome: SearchOutcome) throws -> SearchPage {
        guard case .found(let page) = outcome else { throw UnexpectedOutcome(outcome: outcome) }
        return page
    }

    struct UnexpectedOutcome: Error {
        var outcome: SearchOutcome
    }
}
