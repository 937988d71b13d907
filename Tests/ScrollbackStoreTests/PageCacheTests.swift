import Foundation
import Logging
import Metrics
import PostgresNIO
import ScrollbackModels
@testable import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The newest-page cache: answered from memory while the change feed proves
/// a page current, and never otherwise.
@Suite struct PageCacheTests {
    // MARK: The cache alone

    static let conversation = UUID()

    /// A newest page at `version` with messages `seqs` (newest first).
    static func page(version: Int64, seqs: ClosedRange<Int64>, lastSeq: Int64? = nil) -> EncodedPage {
        let messages = seqs.reversed().map { seq in
            Message(
                conversationId: conversation, seq: seq, sender: "alice", body: "m\(seq)", clientId: nil,
                createdAt: Date(timeIntervalSince1970: 1_800_000_000), version: seq)
        }
        return EncodedPage(
            MessagePage(
                messages: messages, hasOlder: seqs.lowerBound > 1, hasNewer: false, lastSeq: lastSeq ?? seqs.upperBound,
                version: version))
    }

    static func listeningCache(capacity: Int = 1 << 20) -> PageCache {
        let cache = PageCache(capacity: capacity, factory: NOOPMetricsHandler.instance)
        cache.handle(.listening)
        return cache
    }

    @Test func aFillOvertakenByAChangeIsNotKept() throws {
        let id = Self.conversation
        // A change of a newer version than the fill read.
        var cache = Self.listeningCache()
        var ticket = try #require(cache.beginFill(of: id))
        cache.handle(.event(.changed(conversation: id, seq: 61, version: 61)))
        cache.finishFill(ticket, for: "alice", page: Self.page(version: 60, seqs: 11...60), limit: 50)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 20, minVersion: 0) == nil)

        // A notification of a version the read already saw does not void it.
        cache = Self.listeningCache()
        ticket = try #require(cache.beginFill(of: id))
        cache.handle(.event(.changed(conversation: id, seq: 60, version: 60)))
        cache.finishFill(ticket, for: "alice", page: Self.page(version: 60, seqs: 11...60), limit: 50)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 20, minVersion: 0)?.messages.count == 20)

        // A member change, a write through this instance, a lost or renewed listener.
        let voiding: [(PageCache) -> Void] = [
            { $0.handle(.event(.memberRemoved(conversation: id, user: "bob"))) },
            { $0.handle(.event(.memberAdded(conversation: id, user: "carol"))) },
            { $0.invalidate(id) },
            { $0.handle(.lost); $0.handle(.listening) },
            { $0.handle(.listening) },
        ]
        for (index, void) in voiding.enumerated() {
            cache = Self.listeningCache()
            ticket = try #require(cache.beginFill(of: id))
            void(cache)
            cache.finishFill(ticket, for: "alice", page: Self.page(version: 60, seqs: 11...60), limit: 50)
            #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 20, minVersion: 0) == nil, "case \(index)")
        }

        // A fill that read an older version and ends after one that read a
        // newer version is not kept: the instance never goes back in time.
        cache = Self.listeningCache()
        let older = try #require(cache.beginFill(of: id))
        let newer = try #require(cache.beginFill(of: id))
        cache.finishFill(newer, for: "alice", page: Self.page(version: 61, seqs: 12...61), limit: 50)
        cache.finishFill(older, for: "alice", page: Self.page(version: 60, seqs: 11...60), limit: 50)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 1, minVersion: 0)?.version == 61)
        let late = try #require(cache.beginFill(of: id))
        let bob = try #require(cache.beginFill(of: id))
        cache.finishFill(bob, for: "bob", page: Self.page(version: 62, seqs: 13...62), limit: 50)
        cache.finishFill(late, for: "alice", page: Self.page(version: 61, seqs: 12...61), limit: 50)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 1, minVersion: 0)?.version == 61,
                "the entry from before stays; the late read of 61 after 62 was proven is not kept again")

        // Another conversation's changes do not matter.
        cache = Self.listeningCache()
        ticket = try #require(cache.beginFill(of: id))
        cache.handle(.event(.changed(conversation: UUID(), seq: 99, version: 99)))
        cache.handle(.event(.memberRemoved(conversation: UUID(), user: "bob")))
        cache.finishFill(ticket, for: "alice", page: Self.page(version: 60, seqs: 11...60), limit: 50)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 20, minVersion: 0) != nil)
    }

    @Test func nothingIsKeptOrAnsweredWithoutTheListener() throws {
        let id = Self.conversation
        let cache = PageCache(capacity: 1 << 20, factory: NOOPMetricsHandler.instance)
        #expect(cache.beginFill(of: id) == nil)
        cache.handle(.listening)
        let ticket = try #require(cache.beginFill(of: id))
        cache.finishFill(ticket, for: "alice", page: Self.page(version: 60, seqs: 11...60), limit: 50)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 20, minVersion: 0) != nil)
        cache.handle(.lost)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 20, minVersion: 0) == nil)
        cache.handle(.listening)
        #expect(cache.page(of: id, for: "alice", anchor: .newest, limit: 20, minVersion: 0) == nil, "a lost listener keeps nothing")
        // Off: nothing at all.
        let off = PageCache(capacity: 0, factory: NOOPMetricsHandler.instance)
        off.handle(.listening)
        #expect(off.beginFill(of: id) == nil)
    }

    @Test func anEntryAnswersOnlyWhatItHoldsAndOnlyItsReader() throws {
        let id = Self.conversation
        let cache = Self.listeningCache()
        let ticket = try #require(cache.beginFill(of: id))
        cache.finishFill(ticket, for: "alice", page: Self.page(version: 70, seqs: 11...60), limit: 50)
        func page(_ anchor: PageAnchor, _ limit: Int, as user: UserID = "alice", min: Int64 = 0) -> EncodedPage? {
            cache.page(of: id, for: user, anchor: anchor, limit: limit, minVersion: min)
        }
        #expect(page(.newest, 50)?.messages.map(\.seq) == Array((11...60).reversed()))
        #expect(page(.newest, 51) == nil, "more than it holds, and older ones exist")
        #expect(page(.after(10), 5)?.messages.map(\.seq) == [15, 14, 13, 12, 11])
        #expect(page(.after(9), 5) == nil, "seq 10 is not held")
        #expect(page(.after(60), 5)?.messages.isEmpty == true)
        #expect(page(.before(60), 5) == nil && page(.around(30), 5) == nil)
        #expect(page(.newest, 5, as: "bob") == nil, "another reader (and maybe not a member)")
        #expect(page(.newest, 5, min: 70) != nil && page(.newest, 5, min: 71) == nil)
        // A notification at the entry's version keeps it; a newer one drops it.
        cache.handle(.event(.changed(conversation: id, seq: 60, version: 70)))
        #expect(page(.newest, 5) != nil)
        cache.handle(.event(.changed(conversation: id, seq: 61, version: 71)))
        #expect(page(.newest, 5) == nil)
    }

    @Test func theLeastRecentlyReadGoFirstAndTheSizeStaysBounded() throws {
        let one = Self.page(version: 50, seqs: 1...50).memoryBytes
        let cache = Self.listeningCache(capacity: one * 10)
        let ids = (0..<30).map { _ in UUID() }
        for (index, id) in ids.enumerated() {
            let ticket = try #require(cache.beginFill(of: id))
            cache.finishFill(ticket, for: "alice", page: Self.page(version: 50, seqs: 1...50), limit: 50)
            // The first conversation is read again and again: it stays.
            if index > 0 { #expect(cache.page(of: ids[0], for: "alice", anchor: .newest, limit: 1, minVersion: 0) != nil) }
            #expect(cache.statistics.bytes <= one * 10)
        }
        #expect(cache.statistics.entries <= 10 && cache.statistics.entries >= 8)
        #expect(cache.page(of: ids[29], for: "alice", anchor: .newest, limit: 1, minVersion: 0) != nil)
        #expect(cache.page(of: ids[1], for: "alice", anchor: .newest, limit: 1, minVersion: 0) == nil)
    }

    // MARK: The store, with its listener

    static let logger: Logger = {
        var logger = Logger(label: "scrollback.tests.page-cache")
        logger.logLevel = .critical
        return logger
    }()

    /// A migrated store with its page cache of `pageCacheBytes`, running
    /// while `body` runs.
    static func withStore(
        pageCacheBytes: Int = StoreOptions.defaultPageCacheBytes, _ body: (ScrollbackStore) async throws -> Void
    ) async throws {
        try await TestDatabase.withSchema { url, schema in
            let options = StoreOptions(
                maximumConnections: 6, statementTimeout: TestDatabase.patientTimeout,
                lockTimeout: TestDatabase.patientTimeout, searchPath: schema, pageCacheBytes: pageCacheBytes)
            let store = ScrollbackStore(url: url, options: options, logger: Self.logger)
            try await TestDatabase.running(store) {
                try await store.migrate()
                try await body(store)
            }
        }
    }

    /// A store whose change-feed listener runs (as live delivery runs it).
    static func withListeningStore(
        pageCacheBytes: Int = StoreOptions.defaultPageCacheBytes, _ body: (ScrollbackStore) async throws -> Void
    ) async throws {
        try await withStore(pageCacheBytes: pageCacheBytes) { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.listenToFeed(probeInterval: .seconds(1)) { _ in } }
                try await untilListening(store)
                try await body(store)
                group.cancelAll()
            }
        }
    }

    /// A store whose cache believes its listener is in place but hears no
    /// notification at all: only the store's own writes can drop its pages.
    static func withDeafStore(_ body: (ScrollbackStore) async throws -> Void) async throws {
        try await withStore { store in
            store.pageCache.handle(.listening)
            try await body(store)
        }
    }

    static func untilListening(_ store: ScrollbackStore, after epoch: UInt64 = 0) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while !(store.pageCache.statistics.listening && store.pageCache.statistics.epoch > epoch) {
            guard ContinuousClock.now < deadline else { throw CancellationError() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Changes message `seq`'s body in the database without a version or a
    /// notification: only a read from the database can see it.
    static func changeBehindTheStore(_ store: ScrollbackStore, _ id: UUID, _ seq: Int64, to body: String) async throws {
        _ = try await store.values(
            Int64.self,
            "UPDATE messages SET body = \(body) WHERE conversation_id = \(id) AND seq = \(seq) RETURNING seq")
    }

    static func notify(_ store: ScrollbackStore, _ payload: String) async throws {
        _ = try await store.values(String.self, "SELECT pg_notify(feed_channel(), \(payload))::text")
    }

    /// Polls `condition` for up to 30 s.
    static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test func aNewestPageComesFromMemoryUntilTheFeedSaysItChanged() async throws {
        try await Self.withListeningStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            for n in 1...60 { _ = try await store.send(to: id, from: "alice", body: "m\(n)", clientID: nil) }
            let first = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20)
            #expect(store.pageCache.statistics.hits == 0 && store.pageCache.statistics.entries == 1)

            // Behind the store's back: a read from memory does not see it.
            try await Self.changeBehindTheStore(store, id, 60, to: "behind")
            #expect(try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20) == first)
            #expect(try await store.cachedPage(of: id, for: "bob", anchor: .after(55), limit: 3).messages.map(\.body) == ["m58", "m57", "m56"])
            #expect(store.pageCache.statistics.hits == 2)
            // A caller who knows of a later version reads the database.
            let fresh = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20, minVersion: first.version + 1)
            #expect(fresh.messages.first?.body == "behind")

            // A notification of the version the page has changes nothing; a newer one drops it.
            // (Notifications are handled in order: once a later one for another
            // conversation has dropped that one's page, the first was handled.)
            let idText = id.uuidString.lowercased()
            let other = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            _ = try await store.send(to: other, from: "alice", body: "other", clientID: nil)
            _ = try await store.cachedPage(of: other, for: "bob", anchor: .newest, limit: 20)
            try await Self.changeBehindTheStore(store, other, 1, to: "other, behind")
            try await Self.changeBehindTheStore(store, id, 60, to: "behind again")
            try await Self.notify(store, "u:\(idText):60:\(first.version)")
            try await Self.notify(store, "u:\(other.uuidString.lowercased()):1:99")
            #expect(try await Self.eventually {
                try await store.cachedPage(of: other, for: "bob", anchor: .newest, limit: 20).messages.first?.body == "other, behind"
            })
            #expect(try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20).messages.first?.body == "behind")
            try await Self.notify(store, "u:\(idText):60:\(first.version + 1)")
            #expect(try await Self.eventually {
                try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20).messages.first?.body == "behind again"
            })

            // A kind of notification this version does not know drops it too.
            _ = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20)
            try await Self.changeBehindTheStore(store, id, 60, to: "after an unknown notification")
            try await Self.notify(store, "z:\(idText):something new")
            #expect(try await Self.eventually {
                try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20).messages.first?.body
                    == "after an unknown notification"
            })

            // A member change drops it too.
            _ = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20)
            try await Self.changeBehindTheStore(store, id, 60, to: "after a member change")
            try await Self.notify(store, "a:\(idText):carol")
            #expect(try await Self.eventually {
                try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 20).messages.first?.body == "after a member change"
            })
        }
    }

    @Test func aWriteThroughTheStoreIsReadAtOnce() async throws {
        try await Self.withDeafStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            for n in 1...5 { _ = try await store.send(to: id, from: "alice", body: "m\(n)", clientID: nil) }
            for round in 1...20 {
                _ = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 50)
                _ = try await store.cachedPage(of: id, for: "alice", anchor: .newest, limit: 50)
                // No notification reaches this store: the write itself dropped the pages.
                switch round % 4 {
                case 0: _ = try await store.send(to: id, from: "alice", body: "r\(round)", clientID: nil)
                case 1: _ = try await store.edit(1, in: id, by: "alice", body: "e\(round)")
                case 2: _ = try await store.react("👍", to: 2, in: id, by: "bob", adding: round % 8 == 2)
                default: _ = try await store.send(to: id, from: "bob", body: "b\(round)", clientID: nil, replyTo: 1)
                }
                for user: UserID in ["alice", "bob"] {
                    let cached = try await store.encodedPage(of: id, for: user, anchor: .newest, limit: 50)
                    let read = try await store.readPage(of: id, for: user, anchor: .newest, limit: 50)
                    #expect(cached.jsonBytes() == read.jsonBytes, "round \(round), \(user)")
                    #expect(try await store.encodedPage(of: id, for: user, anchor: .newest, limit: 50).jsonBytes() == read.jsonBytes)
                }
            }
            #expect(store.pageCache.statistics.hits >= 40, "the pages after each write came from memory")
            // A removal: the removed member's page is not answered from memory.
            _ = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 50)
            try await store.removeMember("bob", from: id, by: "alice")
            await #expect(throws: StoreError.conversationNotFound) {
                _ = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 50)
            }
        }
    }

    @Test func aLostListenerDropsEveryPage() async throws {
        try await Self.withListeningStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            for n in 1...3 { _ = try await store.send(to: id, from: "alice", body: "m\(n)", clientID: nil) }
            _ = try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 50)
            try await Self.changeBehindTheStore(store, id, 3, to: "while nobody listened")
            let epoch = store.pageCache.statistics.epoch
            let name = store.listenerApplicationName
            _ = try await store.values(
                Bool.self, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(name)")
            // Lost (epoch + 1), then listening again (epoch + 2).
            try await Self.untilListening(store, after: epoch + 1)
            #expect(try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 50).messages.first?.body
                == "while nobody listened")
        }
    }

    /// Every slice the cache answers is the page a read of the database
    /// gives, flags and all, on a conversation with edits, deletions,
    /// reactions and replies.
    @Test func slicesAreTheDatabasesPages() async throws {
        try await Self.withListeningStore { store in
            for total in [0, 7, 50, 130] {
                let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
                for n in 0..<total {
                    _ = try await store.send(
                        to: id, from: n % 3 == 0 ? "bob" : "alice", body: "message \(n)", clientID: nil,
                        replyTo: n % 5 == 4 ? 1 : nil)
                }
                if total > 0 {
                    _ = try await store.edit(Int64(total), in: id, by: total % 3 == 1 ? "bob" : "alice", body: "edited")
                    _ = try await store.delete(1, in: id, by: "alice")
                    _ = try await store.react("🎉", to: Int64(total), in: id, by: "bob", adding: true)
                }
                let hitsBefore = store.pageCache.statistics.hits
                _ = try await store.encodedPage(of: id, for: "bob", anchor: .newest, limit: 50)
                var anchors: [PageAnchor] = [.newest]
                let last = Int64(total)
                anchors += stride(from: max(last - 60, 0), through: last + 1, by: 1).map(PageAnchor.after)
                var compared = 0
                for anchor in anchors {
                    for limit in [1, 2, 5, 20, 49, 50, 51, 200] {
                        let cached = try await store.encodedPage(of: id, for: "bob", anchor: anchor, limit: limit)
                        var read = try await store.readPage(of: id, for: "bob", anchor: anchor, limit: limit)
                        #expect(cached.jsonBytes() == read.jsonBytes, "\(total) messages, \(anchor), limit \(limit)")
                        // Bob blocked Alice: her messages carry the flag, spliced into the same bytes.
                        for index in read.messages.indices { read.messages[index].blockedSender = read.messages[index].sender == "alice" }
                        #expect(
                            String(decoding: cached.jsonBytes(blocking: ["alice"]), as: UTF8.self)
                                == String(decoding: read.jsonBytes, as: UTF8.self),
                            "\(total) messages, \(anchor), limit \(limit), blocking alice")
                        compared += 1
                    }
                }
                let hits = store.pageCache.statistics.hits - hitsBefore
                #expect(hits > compared / 3, "\(total) messages: \(hits) of \(compared) pages from memory")
            }
        }
    }

    @Test func offMeansEveryPageIsRead() async throws {
        try await Self.withListeningStore(pageCacheBytes: 0) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            _ = try await store.send(to: id, from: "alice", body: "one", clientID: nil)
            _ = try await store.encodedPage(of: id, for: "bob", anchor: .newest, limit: 50)
            try await Self.changeBehindTheStore(store, id, 1, to: "read every time")
            #expect(try await store.cachedPage(of: id, for: "bob", anchor: .newest, limit: 50).messages.first?.body == "read every time")
            #expect(store.pageCache.statistics.entries == 0 && store.pageCache.statistics.hits == 0)
        }
    }
}

extension ScrollbackStore {
    /// A page as the server answers it (from the page cache when it can),
    /// read back as values.
    func cachedPage(
        of id: UUID, for user: UserID, anchor: PageAnchor, limit: Int, minVersion: Int64 = 0
    ) async throws -> MessagePage {
        try await encodedPage(of: id, for: user, anchor: anchor, limit: limit, minVersion: minVersion).decoded()
    }
}
