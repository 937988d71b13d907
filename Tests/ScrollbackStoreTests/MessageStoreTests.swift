import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct MessageStoreTests {
    /// Sends `count` messages with bodies "m1", "m2", ... and returns the conversation id.
    func conversation(with count: Int, in store: ScrollbackStore) async throws -> UUID {
        let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
        for index in 1...max(count, 1) where count > 0 {
            _ = try await store.send(to: id, from: index.isMultiple(of: 2) ? "bob" : "alice", body: "m\(index)", clientID: nil)
        }
        return id
    }

    @Test func concurrentSendersGetEverySeqOnceWithNoGap() async throws {
        try await TestDatabase.withStore(maximumConnections: 20) { store in
            let id = try await store.createConversation(
                creator: "alice", title: nil, members: (0..<20).map { UserID(rawValue: "sender\($0)") }).id
            let seqs = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for sender in 0..<20 {
                    group.addTask {
                        var mine: [Int64] = []
                        for index in 0..<100 {
                            let outcome = try await store.send(
                                to: id, from: UserID(rawValue: "sender\(sender)"), body: "s\(sender)-\(index)", clientID: nil)
                            mine.append(outcome.message.seq)
                        }
                        return mine
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0 += $1 }
            }
            #expect(seqs.count == 2000)
            #expect(seqs.sorted() == Array(1...2000))
            #expect(try await store.conversation(id, for: "alice").lastSeq == 2000)
            // Each sender's own messages got increasing seqs, in the order sent.
            var pageSeqs: [Int64] = []
            var anchor = PageAnchor.newest
            while true {
                let page = try await store.page(of: id, for: "alice", anchor: anchor, limit: 200)
                pageSeqs += page.messages.map(\.seq)
                guard page.hasOlder, let oldest = page.messages.last else { break }
                anchor = .before(oldest.seq)
            }
            #expect(pageSeqs == Array((1...2000).reversed()))
        }
    }

    @Test func pagingBackWhileMessagesArriveReassemblesTheExactHistory() async throws {
        try await TestDatabase.withStore(maximumConnections: 6) { store in
            let id = try await conversation(with: 500, in: store)
            let writer = Task {
                for index in 1...300 {
                    _ = try await store.send(to: id, from: "bob", body: "live\(index)", clientID: nil)
                }
            }
            // Page back from the newest with an odd limit while the writer runs.
            let first = try await store.page(of: id, for: "alice", anchor: .newest, limit: 37)
            var collected = first.messages
            var oldest = try #require(first.messages.last).seq
            var newest = try #require(first.messages.first).seq
            var hasOlder = first.hasOlder
            while hasOlder {
                let page = try await store.page(of: id, for: "alice", anchor: .before(oldest), limit: 37)
                #expect(page.messages.count <= 37)
                collected += page.messages
                oldest = try #require(page.messages.last).seq
                hasOlder = page.hasOlder
            }
            try await writer.value
            // Then catch up forwards with `after` until nothing is newer.
            var hasNewer = true
            while hasNewer {
                let page = try await store.page(of: id, for: "alice", anchor: .after(newest), limit: 37)
                collected = page.messages + collected
                if let top = page.messages.first { newest = top.seq }
                hasNewer = page.hasNewer
            }
            let seqs = collected.map(\.seq)
            #expect(seqs == Array((1...800).reversed()))
            #expect(Set(collected.map(\.body)).count == 800)
            #expect(collected.last?.body == "m1")
            #expect(collected.first?.body == "live300")
        }
    }

    @Test func newestPageHasFlagsAndLastSeq() async throws {
        try await TestDatabase.withStore { store in
            let id = try await conversation(with: 10, in: store)
            let page = try await store.page(of: id, for: "bob", anchor: .newest, limit: 4)
            #expect(page.messages.map(\.seq) == [10, 9, 8, 7])
            #expect(page.messages.map(\.body) == ["m10", "m9", "m8", "m7"])
            #expect(page.hasOlder && !page.hasNewer)
            #expect(page.lastSeq == 10)
            let all = try await store.page(of: id, for: "bob", anchor: .newest, limit: 50)
            #expect(all.messages.count == 10 && !all.hasOlder && !all.hasNewer)
        }
    }

    @Test func emptyConversationGivesAnEmptyPageInEveryMode() async throws {
        try await TestDatabase.withStore { store in
            let id = try await conversation(with: 0, in: store)
            for anchor in [PageAnchor.newest, .before(1), .before(5), .after(0), .after(3), .around(1)] {
                let page = try await store.page(of: id, for: "alice", anchor: anchor, limit: 10)
                #expect(page == MessagePage(messages: [], hasOlder: false, hasNewer: false, lastSeq: 0, version: 0))
            }
        }
    }

    @Test func beforeAtTheEdges() async throws {
        try await TestDatabase.withStore { store in
            let id = try await conversation(with: 10, in: store)
            let beforeFirst = try await store.page(of: id, for: "alice", anchor: .before(1), limit: 5)
            #expect(beforeFirst.messages.isEmpty && !beforeFirst.hasOlder && beforeFirst.hasNewer)
            let beforeSecond = try await store.page(of: id, for: "alice", anchor: .before(2), limit: 5)
            #expect(beforeSecond.messages.map(\.seq) == [1] && !beforeSecond.hasOlder && beforeSecond.hasNewer)
            let beforeNewest = try await store.page(of: id, for: "alice", anchor: .before(10), limit: 3)
            #expect(beforeNewest.messages.map(\.seq) == [9, 8, 7] && beforeNewest.hasOlder && beforeNewest.hasNewer)
            let beyond = try await store.page(of: id, for: "alice", anchor: .before(1_000), limit: 3)
            #expect(beyond.messages.map(\.seq) == [10, 9, 8] && beyond.hasOlder && !beyond.hasNewer)
            let huge = try await store.page(of: id, for: "alice", anchor: .before(.max), limit: 2)
            #expect(huge.messages.map(\.seq) == [10, 9])
        }
    }

    @Test func afterAtTheEdges() async throws {
        try await TestDatabase.withStore { store in
            let id = try await conversation(with: 10, in: store)
            let fromStart = try await store.page(of: id, for: "alice", anchor: .after(0), limit: 3)
            #expect(fromStart.messages.map(\.seq) == [3, 2, 1] && !fromStart.hasOlder && fromStart.hasNewer)
            let afterFirst = try await store.page(of: id, for: "alice", anchor: .after(1), limit: 3)
            #expect(afterFirst.messages.map(\.seq) == [4, 3, 2] && afterFirst.hasOlder && afterFirst.hasNewer)
            let upToNewest = try await store.page(of: id, for: "alice", anchor: .after(8), limit: 5)
            #expect(upToNewest.messages.map(\.seq) == [10, 9] && upToNewest.hasOlder && !upToNewest.hasNewer)
            let afterNewest = try await store.page(of: id, for: "alice", anchor: .after(10), limit: 5)
            #expect(afterNewest.messages.isEmpty && afterNewest.hasOlder && !afterNewest.hasNewer)
            let beyond = try await store.page(of: id, for: "alice", anchor: .after(.max), limit: 5)
            #expect(beyond.messages.isEmpty && beyond.hasOlder && !beyond.hasNewer)
        }
    }

    @Test func aroundAtTheEdges() async throws {
        try await TestDatabase.withStore { store in
            let id = try await conversation(with: 10, in: store)
            let middle = try await store.page(of: id, for: "alice", anchor: .around(5), limit: 5)
            #expect(middle.messages.map(\.seq) == [7, 6, 5, 4, 3] && middle.hasOlder && middle.hasNewer)
            let even = try await store.page(of: id, for: "alice", anchor: .around(5), limit: 4)
            #expect(even.messages.map(\.seq) == [7, 6, 5, 4])
            let first = try await store.page(of: id, for: "alice", anchor: .around(1), limit: 5)
            #expect(first.messages.map(\.seq) == [5, 4, 3, 2, 1] && !first.hasOlder && first.hasNewer)
            let newest = try await store.page(of: id, for: "alice", anchor: .around(10), limit: 5)
            #expect(newest.messages.map(\.seq) == [10, 9, 8, 7, 6] && newest.hasOlder && !newest.hasNewer)
            let beyond = try await store.page(of: id, for: "alice", anchor: .around(50), limit: 3)
            #expect(beyond.messages.map(\.seq) == [10, 9, 8] && beyond.hasOlder && !beyond.hasNewer)
            let one = try await store.page(of: id, for: "alice", anchor: .around(4), limit: 1)
            #expect(one.messages.map(\.seq) == [4] && one.hasOlder && one.hasNewer)
            let wide = try await store.page(of: id, for: "alice", anchor: .around(2), limit: 200)
            #expect(wide.messages.map(\.seq) == Array((1...10).reversed()) && !wide.hasOlder && !wide.hasNewer)
        }
    }

    @Test func resendingAClientIDReturnsTheOriginalAndSpendsNoSeq() async throws {
        try await TestDatabase.withStore { store in
            let id = try await conversation(with: 2, in: store)
            let first = try await store.send(to: id, from: "alice", body: "hello", clientID: "c-1")
            guard case .created(let original) = first else {
                Issue.record("first send was not created: \(first)")
                return
            }
            #expect(original.seq == 3 && original.clientId == "c-1")
            let again = try await store.send(to: id, from: "alice", body: "hello", clientID: "c-1")
            #expect(again == .replayed(original))
            await #expect(throws: StoreError.idempotencyConflict) {
                try await store.send(to: id, from: "alice", body: "different", clientID: "c-1")
            }
            // Another sender may use the same key: keys are per sender.
            let bobs = try await store.send(to: id, from: "bob", body: "hello", clientID: "c-1")
            #expect(bobs.message.seq == 4)
            guard case .created = bobs else {
                Issue.record("bob's send was not created")
                return
            }
            let next = try await store.send(to: id, from: "alice", body: "after", clientID: nil)
            #expect(next.message.seq == 5)
            #expect(try await store.conversation(id, for: "alice").lastSeq == 5)
        }
    }

    @Test func aRetryOfTheOriginalSendStillReplaysAfterAnEditOrADelete() async throws {
        try await TestDatabase.withStore { store in
            let id = try await conversation(with: 0, in: store)
            _ = try await store.send(to: id, from: "alice", body: "first draft", clientID: "k-1")
            let edited = try await store.edit(1, in: id, by: "alice", body: "second thoughts")
            // The retry carries what was sent, not the edit: a replay, answered with the message as it is now.
            #expect(try await store.send(to: id, from: "alice", body: "first draft", clientID: "k-1") == .replayed(edited))
            // Only what was sent with that key matches it.
            await #expect(throws: StoreError.idempotencyConflict) {
                try await store.send(to: id, from: "alice", body: "second thoughts", clientID: "k-1")
            }
            // After a delete the retry gets the tombstone: resending never brings a message back.
            let tombstone = try await store.delete(1, in: id, by: "alice").message
            #expect(try await store.send(to: id, from: "alice", body: "first draft", clientID: "k-1") == .replayed(tombstone))
            #expect(try await store.conversation(id, for: "alice").lastSeq == 1)
            // Nothing derived from the erased body stays stored.
            let hashes = try await store.values(Int.self, "SELECT count(sent_body_hash) FROM messages").reduce(0, +)
            #expect(hashes == 0)
        }
    }

    @Test func concurrentDuplicateSendsStoreOneMessage() async throws {
        try await TestDatabase.withStore(maximumConnections: 10) { store in
            let id = try await conversation(with: 0, in: store)
            let outcomes = try await withThrowingTaskGroup(of: SendOutcome.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await store.send(to: id, from: "alice", body: "once", clientID: "retry-7") }
                }
                return try await group.reduce(into: [SendOutcome]()) { $0.append($1) }
            }
            let created = outcomes.filter { if case .created = $0 { true } else { false } }
            #expect(created.count == 1)
            #expect(Set(outcomes.map(\.message)).count == 1)
            #expect(try await store.conversation(id, for: "alice").lastSeq == 1)
        }
    }
}

