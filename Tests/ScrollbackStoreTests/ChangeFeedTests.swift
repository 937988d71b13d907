import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct ChangeFeedTests {
    @Test func payloadsParseAndUnknownOnesAreIgnored() {
        let id = UUID()
        let text = id.uuidString.lowercased()
        #expect(FeedEvent(payload: "m:\(text):7:9") == .changed(conversation: id, seq: 7, version: 9))
        #expect(FeedEvent(payload: "u:\(text):3:10") == .changed(conversation: id, seq: 3, version: 10))
        #expect(FeedEvent(payload: "r:\(text):7:bob@example.com") == .read(conversation: id, user: "bob@example.com", seq: 7))
        #expect(FeedEvent(payload: "x:\(text):bob") == .memberRemoved(conversation: id, user: "bob"))
        #expect(FeedEvent(payload: "t:\(text):bob") == .typing(conversation: id, user: "bob"))
        for unknown in ["", "m", "m:\(text)", "m:nope:1:2", "m:\(text):x:2", "q:\(text):bob", "x:\(text):a:b"] {
            #expect(FeedEvent(payload: unknown) == nil, "\(unknown)")
        }
    }

    /// Every write notifies the feed itself, in commit order, with ids only;
    /// a replay or a refused write notifies nothing.
    @Test func everyWriteNotifiesInCommitOrderAndRefusedWritesDoNot() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            try await Self.listening(to: store, conversation: id) { events in
                _ = try await store.send(to: id, from: "alice", body: "one", clientID: "c1")
                _ = try await store.send(to: id, from: "alice", body: "one", clientID: "c1")  // a replay
                _ = try await store.send(to: id, from: "bob", body: "two", clientID: nil)
                await #expect(throws: StoreError.self) {
                    _ = try await store.send(to: id, from: "mallory", body: "no", clientID: nil)
                }
                _ = try await store.edit(1, in: id, by: "alice", body: "one!")
                _ = try await store.delete(2, in: id, by: "bob")
                _ = try await store.markRead(2, in: id, by: "bob")
                #expect(try await store.notifyTyping(in: id, by: "alice"))
                #expect(try await store.notifyTyping(in: id, by: "mallory") == false)
                try await store.removeMember("bob", from: id, by: "alice")
                let expected: [FeedEvent] = [
                    .changed(conversation: id, seq: 1, version: 1),
                    .changed(conversation: id, seq: 2, version: 2),
                    .changed(conversation: id, seq: 1, version: 3),
                    .changed(conversation: id, seq: 2, version: 4),
                    .read(conversation: id, user: "bob", seq: 2),
                    .typing(conversation: id, user: "alice"),
                    .memberRemoved(conversation: id, user: "bob"),
                ]
                #expect(try await events(expected.count) == expected)
                try await Task.sleep(for: .milliseconds(200))
                #expect(try await events(expected.count) == expected, "more notifications than writes")
            }
        }
    }

    @Test func aFeedReadGivesNewMessagesInSeqOrderAndChangesInVersionOrder() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            for n in 1...5 { _ = try await store.send(to: id, from: "alice", body: "m\(n)", clientID: nil) }
            let start = try #require(
                try await store.feed(of: id, afterSeq: nil, afterVersion: .max, checking: ["bob", "carol"], limit: 10))
            #expect(start.lastSeq == 5 && start.version == 5 && start.added.isEmpty && start.changed.isEmpty)
            #expect(start.members == ["bob"])

            _ = try await store.edit(2, in: id, by: "alice", body: "m2 edited")
            for n in 6...7 { _ = try await store.send(to: id, from: "alice", body: "m\(n)", clientID: nil) }
            _ = try await store.edit(6, in: id, by: "alice", body: "m6 edited")
            _ = try await store.delete(1, in: id, by: "alice")
            let read = try #require(
                try await store.feed(of: id, afterSeq: 5, afterVersion: 5, checking: ["bob"], limit: 10))
            #expect(read.added.map(\.seq) == [6, 7])
            #expect(read.added[0].body == "m6 edited")
            #expect(read.changed.map(\.seq) == [2, 1])
            #expect(read.lastSeq == 7 && read.version == 10 && !read.truncated)

            let short = try #require(
                try await store.feed(of: id, afterSeq: 0, afterVersion: .max, checking: [], limit: 3))
            #expect(short.truncated && short.added.map(\.seq) == [1, 2, 3])
            #expect(try await store.feed(of: UUID(), afterSeq: 0, afterVersion: 0, checking: [], limit: 3) == nil)
        }
    }

    /// Each schema has its own channel (sql/027): a listener hears its
    /// schema's writes and none of another schema's in the same database,
    /// also when the schema's name is too long to make the channel's.
    @Test func aSchemaHearsItsOwnFeedOnly() async throws {
        try await TestDatabase.withStore { store in
            let url = try await TestDatabase.url()
            // 63 bytes, PostgreSQL's longest name: its channel takes its md5.
            let long = "feed_" + String(repeating: "x", count: 26) + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            #expect(long.utf8.count == 63)
            _ = try await TestDatabase.admin(url) { try await $0.query("CREATE SCHEMA \(unescaped: long)", logger: .init(label: "test")) }
            let other = ScrollbackStore(url: url, options: StoreOptions(searchPath: long), logger: .init(label: "test"))
            let outcome: Result<Void, any Error>
            do {
                try await TestDatabase.running(other) { try await Self.heardApart(store, other, otherSchema: long) }
                outcome = .success(())
            } catch {
                outcome = .failure(error)
            }
            _ = try? await TestDatabase.admin(url) {
                try await $0.query("DROP SCHEMA \(unescaped: long) CASCADE", logger: .init(label: "test"))
            }
            try outcome.get()
        }
    }

    /// In `public`, where the server keeps its tables, the channel is the
    /// one every earlier version listens to: instances of different versions
    /// keep hearing each other during a rolling upgrade.
    @Test func thePublicSchemasChannelIsTheEarlierOne() async throws {
        let server = try await TestDatabase.url()
        let name = "feed_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        _ = try await TestDatabase.admin(server) { try await $0.query("CREATE DATABASE \(unescaped: name)", logger: .init(label: "test")) }
        var url = server
        url.database = name
        let store = ScrollbackStore(url: url, options: StoreOptions(), logger: .init(label: "test"))
        let outcome: Result<[String], any Error>
        do {
            outcome = .success(try await TestDatabase.running(store) {
                try await store.migrate()
                return try await store.values(String.self, "SELECT feed_channel()")
            })
        } catch {
            outcome = .failure(error)
        }
        _ = try? await TestDatabase.admin(server) {
            try await $0.query("DROP DATABASE \(unescaped: name) WITH (FORCE)", logger: .init(label: "test"))
        }
        #expect(try outcome.get() == [FeedEvent.channel])
        #expect(FeedEvent.channel == "scrollback_feed")
    }

    /// `store` and `other` (in the schema `otherSchema`) each hear their own writes only.
    static func heardApart(_ store: ScrollbackStore, _ other: ScrollbackStore, otherSchema long: String) async throws {
        try await other.migrate()
        let schema = try #require(store.schema)
        #expect(try await store.values(String.self, "SELECT feed_channel()") == ["scrollback_feed:" + schema])
        #expect(try await other.values(Bool.self, "SELECT feed_channel() = 'scrollback_feed:' || md5(\(long))") == [true])
        let mine = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
        let theirs = try await other.createConversation(creator: "alice", title: nil, members: ["bob"]).id
        try await Self.listening(to: store) { heard in
            try await Self.listening(to: other) { heardThere in
                for n in 1...3 { _ = try await other.send(to: theirs, from: "alice", body: "there \(n)", clientID: nil) }
                _ = try await store.send(to: mine, from: "alice", body: "here", clientID: nil)
                // Commit order: once the later write is heard here, the earlier ones would have been.
                #expect(try await heard(1) == [.changed(conversation: mine, seq: 1, version: 1)])
                #expect(try await heardThere(3).map(\.conversation) == [theirs, theirs, theirs])
                try await Task.sleep(for: .milliseconds(200))
                #expect(try await heard(1).count == 1, "another schema's notifications")
                #expect(try await heardThere(3).count == 3, "another schema's notifications")
            }
        }
    }

    /// Runs the store's listener while `body` writes; `events(n)` waits for
    /// the first `n` notifications about `conversation` (nil: about anything).
    static func listening(
        to store: ScrollbackStore, conversation: UUID? = nil,
        _ body: (_ events: @Sendable (Int) async throws -> [FeedEvent]) async throws -> Void
    ) async throws {
        let received = NIOLockedValueBox<[FeedEvent]>([])
        let listening = NIOLockedValueBox(false)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await store.listenToFeed { signal in
                    switch signal {
                    case .listening: listening.withLockedValue { $0 = true }
                    case .lost: listening.withLockedValue { $0 = false }
                    case .event(let event) where conversation == nil || event.conversation == conversation:
                        received.withLockedValue { $0.append(event) }
                    case .event: break
                    }
                }
            }
            while !listening.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
            try await body { count in
                let deadline = ContinuousClock.now + .seconds(60)
                while received.withLockedValue({ $0.count }) < count, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                return received.withLockedValue { $0 }
            }
            group.cancelAll()
        }
    }
}
