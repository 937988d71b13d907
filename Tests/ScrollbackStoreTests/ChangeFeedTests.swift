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
        for unknown in ["", "m", "m:\(text)", "m:nope:1:2", "m:\(text):x:2", "q:\(text):bob", "x:\(text):", "k:", "w:"] {
            #expect(FeedEvent(payload: unknown) == nil, "\(unknown)")
        }
    }

    static let colonIDs: [UserID] = ["auth0|5f7c8ec7c33c6c004bbafe82", "a user: with spaces", "名前🙂", "::", "a:1:2"]

    /// A user id may hold `:`: the kinds with one take it last, whole.
    @Test func payloadsKeepTheColonsOfTheirUserID() {
        let id = UUID()
        let text = id.uuidString.lowercased()
        for user in Self.colonIDs {
            let u = user.rawValue
            #expect(FeedEvent(payload: "r:\(text):7:\(u)") == .read(conversation: id, user: user, seq: 7), "\(u)")
            #expect(FeedEvent(payload: "x:\(text):\(u)") == .memberRemoved(conversation: id, user: user), "\(u)")
            #expect(FeedEvent(payload: "a:\(text):\(u)") == .memberAdded(conversation: id, user: user), "\(u)")
            #expect(FeedEvent(payload: "p:\(text):admin:\(u)") == .memberUpdated(conversation: id, user: user, role: .admin))
            #expect(FeedEvent(payload: "t:\(text):\(u)") == .typing(conversation: id, user: user), "\(u)")
            #expect(FeedEvent(payload: "k:\(u)") == .blocks(user: user), "\(u)")
            #expect(FeedEvent(payload: "e:\(u)") == .erased(user: user), "\(u)")
            #expect(FeedEvent(payload: "v:1700000000000000:\(u)") == .revoked(user: user, before: Date(timeIntervalSince1970: 1_700_000_000)))
        }
        let joined = Self.colonIDs.map(\.rawValue).joined(separator: String(UserID.separator))
        #expect(FeedEvent(payload: "w:\(joined)") == .presence(users: Self.colonIDs))
        // An earlier version's presence, ids without `:`, during a rolling upgrade.
        #expect(FeedEvent(payload: "o:bob:carol@example.com") == .presence(users: ["bob", "carol@example.com"]))
    }

    /// Every kind with a user id, written by the store's own statements for
    /// users whose ids hold `:`, `|`, spaces and other scripts, reads back
    /// with the exact id.
    @Test func writesOfUsersWithAnyIDNotifyTheirExactID() async throws {
        try await TestDatabase.withStore { store in
            let users = Self.colonIDs
            let id = try await store.createConversation(creator: users[0], title: nil, members: [users[1], users[2], users[3]]).id
            try await Self.listening(to: store) { events in
                _ = try await store.addMember(users[4], to: id, by: users[0])
                _ = try await store.send(to: id, from: users[1], body: "hi", clientID: nil)
                _ = try await store.markRead(1, in: id, by: users[2])
                #expect(try await store.notifyTyping(in: id, by: users[3]))
                _ = try await store.setRole(.admin, of: users[4], in: id, by: users[0])
                try await store.removeMember(users[4], from: id, by: users[0])
                _ = try await store.block(users[0], by: users[2])
                try await store.setPresenceHidden(true, for: users[1])
                let expected: [FeedEvent] = [
                    .memberAdded(conversation: id, user: users[4]),
                    .changed(conversation: id, seq: 1, version: 1),
                    .read(conversation: id, user: users[2], seq: 1),
                    .typing(conversation: id, user: users[3]),
                    .memberUpdated(conversation: id, user: users[4], role: .admin),
                    .memberRemoved(conversation: id, user: users[4]),
                    .blocks(user: users[2]),
                    .presence(users: [users[1]]),
                ]
                #expect(try await events(expected.count) == expected)
            }
        }
    }

    /// Presence notifications name every user once, in payloads under
    /// PostgreSQL's 8,000 bytes whatever the ids: here 100 ids of 255
    /// four-byte code points (102 KB in all).
    @Test func presencePayloadsStayUnder8000BytesWithTheLongestIDs() async throws {
        try await TestDatabase.withStore { store in
            let users = (0..<100).map { n in
                String(repeating: "🙂", count: APILimits.maxUserIDLength - 3) + String(format: "%03d", n)
            }
            let longest = String(repeating: "😀", count: APILimits.maxUserIDLength)
            #expect(longest.utf8.count == APILimits.maxUserIDBytes)
            let everyone = users + [longest, "a:b", "c d"]
            let payloads = try await TestDatabase.feedPayloads(on: store) {
                _ = try await store.presenceWrite(UUID(), ttl: .seconds(30), sockets: everyone.map { ($0, 1) }, replacingAll: true)
            }.filter { $0.hasPrefix("w:") }
            #expect(payloads.count >= 13 && payloads.allSatisfy { $0.utf8.count < 8_000 }, "\(payloads.map(\.utf8.count))")
            let named = payloads.flatMap { payload -> [UserID] in
                guard case .presence(let users) = FeedEvent(payload: payload) else { return [] }
                return users
            }
            #expect(named.sorted() == everyone.map(UserID.init(rawValue:)).sorted())
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
