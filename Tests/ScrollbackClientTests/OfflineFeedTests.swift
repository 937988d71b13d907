import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// Feeds on the offline store, against real servers on loopback and a real
/// PostgreSQL, with the server taken away by a proxy that routes to a port
/// where nothing listens: history shows from disk at once, exactly what was
/// missed arrives when the server is back, sends wait on disk across a
/// restart and are stored once, in order, and nothing the network does
/// marks a send failed.
@Suite struct OfflineFeedTests {
    typealias Row = ConversationFeedTests.Row

    /// A port nothing listens on: a connection to it is refused at once.
    static let nowhere = 1

    static func client(
        _ cluster: LiveCluster, _ user: String, port: Int, exchanges: NIOLockedValueBox<[String]>? = nil,
        answers: NIOLockedValueBox<[String]>? = nil
    ) -> ScrollbackClient
    {
        var client = ConversationFeedTests.client(cluster, user, baseURL: "http://127.0.0.1:\(port)")
        if let exchanges {
                client.onExchange = { exchange in
                exchanges.withLockedValue { $0.append("\(exchange.method) \(exchange.path)") }
            }
        }
        if let answers {
            let previous = client.onExchange
            client.onExchange = { exchange in
                previous?(exchange)
                answers.withLockedValue { $0.append("\(exchange.method) \(exchange.path) \(exchange.status.map(String.init) ?? "no answer")") }
            }
        }
        return client
    }

    /// A conversation of alice's with bob, `messages` long, on a cluster
    /// whose instance 0 bob reaches through a proxy that can take it away;
    /// the store's file is removed at the end.
    struct Setup: Sendable {
        let cluster: LiveCluster
        let proxy: CuttingProxy
        let path: String
        let alice: ScrollbackClient
        let id: UUID

        /// A new feed of bob's on the store's file (opened anew, as after
        /// a restart of the app), through the proxy.
        func bobsFeed(
            pageSize: Int = 50, settings: TimelineLayoutSettings = OfflineFeedTests.settings(),
            storedMessageLimit: Int = 1_000, exchanges: NIOLockedValueBox<[String]>? = nil,
            answers: NIOLockedValueBox<[String]>? = nil
        ) throws -> ConversationFeed {
            ConversationFeed(
                client: OfflineFeedTests.client(cluster, "bob", port: proxy.port, exchanges: exchanges, answers: answers),
                conversation: id,
                userId: "bob", pageSize: pageSize, settings: settings, storage: try OfflineStore(path: path),
                storedMessageLimit: storedMessageLimit)
        }

        /// The server is away (connections refused), or back.
        func serverAway(_ away: Bool) {
            proxy.route(to: away ? OfflineFeedTests.nowhere : cluster.instances[0].port)
            proxy.cutAll()
        }
    }

    static func run(messages: Int, _ body: @escaping @Sendable (Setup) async throws -> Void) async throws {
        try await LiveCluster.run { cluster in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let path = OfflineStoreTests.temporaryPath()
            defer { try? FileManager.default.removeItem(atPath: path) }
            let alice = ConversationFeedTests.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let id = try await cluster.conversation("alice", members: ["bob"])
            if messages > 0 { try await cluster.insertMessages(messages, into: id, from: "alice") }
            try await body(Setup(cluster: cluster, proxy: proxy, path: path, alice: alice, id: id))
        }
    }

    static func settings() -> TimelineLayoutSettings {
        TimelineLayoutSettings(viewportHeight: 400, prefetchThreshold: 0)
    }

    /// Bob opens the conversation once with the server up, then again on
    /// the same file with the server down: the window is there as soon as
    /// `start()` returns. While he is away alice sends, edits and deletes;
    /// when the server is back, the feed asks for the changes since the
    /// version on disk (no newest page) and ends equal to a fresh fetch.
    @Test func aFeedOnAStoreShowsItsHistoryOfflineAndGetsExactlyWhatWasMissed() async throws {
        try await Self.run(messages: 30) { setup in
            let (alice, id) = (setup.alice, setup.id)
            let first = try setup.bobsFeed()
            first.start()
            try await until("the first feed live") { first.state.connection == .live && first.state.timeline.isLoaded }
            let seen = first.state.timeline.messages.map(Row.init)
            #expect(seen.count == 30)
            first.stop()

            setup.serverAway(true)
            let exchanges = NIOLockedValueBox<[String]>([])
            let second = try setup.bobsFeed(exchanges: exchanges)
            defer { second.stop() }
            second.start()
            #expect(second.state.timeline.messages.map(Row.init) == seen, "the window from disk, before any answer")
            #expect(second.state.timeline.version == 30)

            _ = try await alice.send("while away 1", to: id)
            _ = try await alice.edit(3, in: id, body: "edited while away")
            _ = try await alice.delete(7, in: id)
            _ = try await alice.send("while away 2", to: id)
            try await Task.sleep(for: .seconds(1))
            #expect(second.state.timeline.messages.map(Row.init) == seen, "nothing changes while the server is away")
            #expect(second.state.connection != .live)

            setup.serverAway(false)
            let fresh = NIOLockedValueBox<[Row]>([])
            try await until("the window equal to a fresh fetch") {
                let state = second.state
                guard state.connection == .live, state.timeline.seqRange == 1...32 else { return false }
                let rows = try await ConversationFeedTests.freshWindow(alice, id, from: 1)
                fresh.withLockedValue { $0 = rows }
                return state.timeline.messages.map(Row.init) == rows
            } describe: {
                "feed \(second.state.timeline.messages.map(Row.init).prefix(5)), fresh \(fresh.withLockedValue { $0 }.prefix(5))"
            }
            // The edit of seq 3 and the deletion of seq 7 are older than the
            // window's newest message: no replay of the stream brings them,
            // only the changes since the version on disk. And no page was read.
            let asked = exchanges.withLockedValue { $0 }.filter { $0.hasPrefix("GET") }
            #expect(asked.contains { $0.hasSuffix("/changes") }, "the feed caught up from the version on disk: \(asked)")
            #expect(!asked.contains { $0.hasSuffix("/messages") }, "no page was fetched: \(asked)")
            #expect(second.state.timeline.messages.first { $0.seq == 3 }?.body == "edited while away")
            #expect(second.state.timeline.messages.first { $0.seq == 7 }?.deleted == true)

            // The store now holds what the feed shows.
            second.stop()
            let window = try #require(try OfflineStore(path: setup.path).openWindow(of: id))
            #expect(window.messages.map(Row.init) == fresh.withLockedValue { $0 })
            #expect(window.version == 34)
        }
    }

    /// An edit of a message changes the preview in every reply to it, not
    /// the replies' versions: the store is written with the new preview
    /// too, so the feed opened next on the file shows it.
    @Test func aReplyOnDiskShowsItsParentAsEdited() async throws {
        try await Self.run(messages: 3) { setup in
            let (alice, id) = (setup.alice, setup.id)
            let reply = try await alice.send("a reply", to: id, replyTo: 2).message
            let first = try setup.bobsFeed()
            first.start()
            try await until("the reply shown") { first.state.timeline.messages.contains { $0.seq == reply.seq } }
            _ = try await alice.edit(2, in: id, body: "bulk 2, edited")
            try await until("the reply shows its parent edited") {
                first.state.timeline.messages.first { $0.seq == reply.seq }?.replyTo?.excerpt == "bulk 2, edited"
            }
            first.stop()
            let window = try #require(try OfflineStore(path: setup.path).openWindow(of: id))
            let stored = try #require(window.messages.first { $0.seq == reply.seq })
            #expect(stored.replyTo?.excerpt == "bulk 2, edited", "the reply on disk: \(String(describing: stored.replyTo))")
            #expect(stored.version == reply.version, "the reply itself did not change")

            setup.serverAway(true)
            let second = try setup.bobsFeed()
            defer { second.stop() }
            second.start()
            #expect(second.state.timeline.messages.first { $0.seq == reply.seq }?.replyTo?.excerpt == "bulk 2, edited")
        }
    }

    /// A send answered while the window is away from the newest (the
    /// reader jumped to an old message before the answer came) leaves the
    /// outbox, on disk too, and is sent once; its message comes with the
    /// pages that reach it, in place of its echo.
    @Test func aSendAnsweredWhileTheWindowIsAwayLeavesTheOutbox() async throws {
        try await Self.run(messages: 100) { setup in
            let (alice, id, proxy) = (setup.alice, setup.id, setup.proxy)
            let answers = NIOLockedValueBox<[String]>([])
            let feed = try setup.bobsFeed(pageSize: 10, answers: answers)
            defer { feed.stop() }
            feed.start()
            try await until("the feed live") { feed.state.connection == .live && feed.state.timeline.isLoaded }
            // The send hangs at the proxy until the window is away from the newest.
            proxy.holdRequests(startingWith: "POST ")
            proxy.cutAll()
            feed.send("from bob", clientId: "held") { _ in }
            feed.jump(to: 5)
            try await until("the window at 5") {
                !feed.state.timeline.isAttached && feed.state.timeline.seqRange?.contains(5) == true
            }
            proxy.holdRequests(startingWith: "nothing held")
            proxy.cutAll()
            try await until("the send stored and out of the outbox", timeout: .seconds(10)) { feed.state.outbox.isEmpty } describe: {
                "sends: \(answers.withLockedValue { $0 }.filter { $0.hasPrefix("POST") }.suffix(5))"
            }
            #expect(try OfflineStore(path: setup.path).outbox(of: id).isEmpty, "the outbox on disk is empty")
            try await Task.sleep(for: .milliseconds(300))
            let sends = answers.withLockedValue { $0 }.filter { $0.hasPrefix("POST") && !$0.hasSuffix("no answer") }
            #expect(sends.count == 1, "answered once: \(sends.prefix(5))")
            #expect(try await alice.page(of: id, limit: 5).messages.filter { $0.clientId == "held" }.count == 1)

            feed.jumpToLatest()
            try await until("the message in the window in place of its echo") {
                feed.state.timeline.isAttached
                    && feed.state.timeline.items.filter { $0.clientId == "held" }.map(\.isPending) == [false]
            }
        }
    }

    /// Three messages written with the server away stay `sending` (never
    /// failed); the app is stopped and started again on the same file; the
    /// new feed shows them from the outbox and, once the server is back,
    /// sends them: each is stored once, in the order written, and the
    /// outbox is empty.
    @Test func sendsWrittenOfflineSurviveARestartAndAreStoredOnceInOrder() async throws {
        try await Self.run(messages: 5) { setup in
            let (alice, id) = (setup.alice, setup.id)
            let first = try setup.bobsFeed()
            let log = UpdateLog(first)
            first.start()
            try await until("the first feed live") { first.state.connection == .live }
            setup.serverAway(true)
            let outcomes = NIOLockedValueBox<[Result<ScrollbackClient.SendResult, ScrollbackError>]>([])
            for n in 1...3 {
                first.send("offline \(n)", clientId: "offline-\(n)") { result in outcomes.withLockedValue { $0.append(result) } }
            }
            // Longer than the client's retries take to give up (6 attempts, at most 0.5 s apart).
            try await Task.sleep(for: .seconds(4))
            #expect(first.state.outbox.map(\.clientId) == ["offline-1", "offline-2", "offline-3"])
            #expect(first.state.timeline.items.prefix(3).map(\.clientId) == ["offline-3", "offline-2", "offline-1"])
            #expect(
                !log.updates.contains { update in
                    update.state.timeline.items.contains { if case .failed = $0.state { true } else { false } }
                }, "no echo was ever marked failed")
            first.stop()
            try await until("the stopped feed's sends told they were cancelled") { outcomes.withLockedValue { $0.count } == 3 }
            #expect(outcomes.withLockedValue { $0 }.allSatisfy { $0 == .failure(.cancelled) })

            // The app starts again, with the server still away: the sends show from disk.
            let second = try setup.bobsFeed()
            defer { second.stop() }
            second.start()
            #expect(second.state.outbox.map(\.clientId) == ["offline-1", "offline-2", "offline-3"])
            #expect(second.state.timeline.items.prefix(3).map(\.isPending) == [true, true, true])
            #expect(second.state.timeline.messages.count == 5)

            setup.serverAway(false)
            try await until("the three stored") {
                let state = second.state
                return state.outbox.isEmpty && state.timeline.items.prefix(3).allSatisfy { !$0.isPending }
            }
            let stored = try await alice.page(of: id).messages.sorted { $0.seq < $1.seq }
            #expect(stored.map(\.body) == (1...5).map { "bulk \($0)" } + ["offline 1", "offline 2", "offline 3"])
            #expect(stored.suffix(3).map(\.clientId) == ["offline-1", "offline-2", "offline-3"])
            #expect(try OfflineStore(path: setup.path).outbox(of: id).isEmpty, "the outbox on disk is empty")
        }
    }

    /// The server stores a send but its answer is lost, and the app is
    /// killed before it hears: started again, the feed sends it again with
    /// its client id and the server answers with the stored message.
    @Test func aSendStoredButNeverAnsweredIsNotStoredTwiceAfterARestart() async throws {
        try await Self.run(messages: 0) { setup in
            let (alice, id, proxy) = (setup.alice, setup.id, setup.proxy)
            let first = try setup.bobsFeed()
            first.start()
            try await until("the first feed live") { first.state.connection == .live }
            // The live stream is held, so its frame cannot settle the send either.
            proxy.holdRequests(startingWith: "GET /v1/stream")
            proxy.cutAll()
            proxy.loseNextAnswer(to: "POST /v1/conversations/\(id.uuidString.lowercased())/messages ")
            first.send("once only", clientId: "lost-answer") { _ in }
            try await until("the send stored by the server") { try await alice.page(of: id).messages.count == 1 }
            setup.serverAway(true)
            first.stop()

            setup.serverAway(false)
            proxy.holdRequests(startingWith: "nothing held")
            let second = try setup.bobsFeed()
            defer { second.stop() }
            second.start()
            try await until("the send settled") { second.state.outbox.isEmpty && second.state.connection == .live }
            try await until("one row") {
                second.state.timeline.items.filter { $0.clientId == "lost-answer" }.map(\.isPending) == [false]
            }
            #expect(try await alice.page(of: id).messages.map(\.body) == ["once only"])
        }
    }

    /// A refusal is the one thing that fails a send: a body over the limit
    /// is marked failed while the send after it goes on; discarding it
    /// takes its echo and its entry on disk away.
    @Test func aRefusedSendFailsAndCanBeDiscardedWhileTheNextGoesOn() async throws {
        try await Self.run(messages: 0) { setup in
            let id = setup.id
            let store = try OfflineStore(path: setup.path)
            let feed = try setup.bobsFeed()
            defer { feed.stop() }
            feed.start()
            try await until("the feed live") { feed.state.connection == .live }
            let tooLong = String(repeating: "a", count: APILimits.maxMessageBodyLength + 1)
            async let refused = Result(catching: { () async throws(ScrollbackError) in try await feed.send(tooLong, clientId: "too-long") })
            let after = try await feed.send("after it", clientId: "after")
            guard case .failure(.invalidInput) = await refused else {
                Issue.record("the body over the limit was not refused: \(await refused)")
                return
            }
            #expect(after.message.body == "after it")
            #expect(feed.state.outbox.map(\.clientId) == ["too-long"])
            #expect(try store.outbox(of: id).map(\.failure).count == 1)
            guard case .failed? = feed.state.timeline.items.first(where: { $0.clientId == "too-long" })?.state else {
                Issue.record("the refused send's echo is not failed")
                return
            }
            try feed.discard(clientId: "too-long")
            #expect(feed.state.outbox.isEmpty)
            #expect(!feed.state.timeline.items.contains { $0.clientId == "too-long" })
            #expect(try store.outbox(of: id).isEmpty)
            #expect(throws: ScrollbackError.self) { try feed.discard(clientId: "after") }
        }
    }
}

extension Result where Failure == ScrollbackError {
    init(catching body: () async throws(ScrollbackError) -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// The conversation list on the offline store: shown from disk at once
/// with the server away, then corrected by the first pass over the list
/// when it is back (a conversation bob was removed from meanwhile goes, the
/// unread counts are the server's).
@Suite struct OfflineInboxTests {
    @Test func theInboxOpensFromTheStoreAndIsCorrectedWhenTheServerIsBack() async throws {
        try await OfflineFeedTests.run(messages: 2) { setup in
            let (cluster, alice) = (setup.cluster, setup.alice)
            let second = try await cluster.conversation("alice", members: ["bob"])
            let third = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.send(1, to: second, as: "alice")
            try await cluster.send(3, to: third, as: "alice")
            let bob = OfflineFeedTests.client(cluster, "bob", port: setup.proxy.port)

            let first = InboxFeed(client: bob, storage: try OfflineStore(path: setup.path))
            first.start()
            try await until("the first inbox live with three conversations") {
                first.inbox.isLive && first.inbox.conversations.count == 3
            }
            let seen = first.inbox.conversations
            first.stop()

            setup.serverAway(true)
            let reopened = InboxFeed(client: bob, storage: try OfflineStore(path: setup.path))
            defer { reopened.stop() }
            reopened.start()
            // (Compared by what a row shows: a date read back from disk may
            // differ from the server's in its last bit.)
            func shown(_ rows: [Conversation]) -> [String] {
                rows.map { "\($0.id) \($0.lastSeq) \($0.unreadCount) \($0.lastMessage?.body ?? "")" }
            }
            #expect(shown(reopened.inbox.conversations) == shown(seen), "the rows from disk, before any answer")
            #expect(reopened.inbox.unreadCount == 6)

            // While bob is away: a message in the second, bob removed from the third.
            _ = try await alice.send("while away", to: second)
            try await alice.removeMember("bob", from: third)
            try await Task.sleep(for: .seconds(1))
            #expect(reopened.inbox.conversations.map(\.id) == seen.map(\.id), "nothing changes while away")

            setup.serverAway(false)
            let direct = ConversationFeedTests.client(cluster, "bob", baseURL: cluster.instances[0].baseURL)
            try await until("the list equal to the server's") {
                let fresh = try await direct.conversations().conversations
                let shown = reopened.inbox
                return shown.isLive && shown.conversations.map(\.id) == fresh.map(\.id)
                    && shown.conversations.map(\.unreadCount) == fresh.map(\.unreadCount)
            }
            #expect(!reopened.inbox.conversations.contains { $0.id == third })
            #expect(reopened.inbox.unreadCount == 4)
            #expect(try OfflineStore(path: setup.path).inboxRows().map(\.id) == reopened.inbox.conversations.map(\.id))
        }
    }
}

/// Edits, deletions and reactions go through the same outbox as sends:
/// written offline, kept across a restart, sent in order when the server
/// is back; a deletion whose answer was lost, sent again, is done.
@Suite struct OfflineChangeTests {
    @Test func changesWrittenOfflineSurviveARestartAndApplyInOrder() async throws {
        try await OfflineFeedTests.run(messages: 0) { setup in
            let (alice, id, proxy) = (setup.alice, setup.id, setup.proxy)
            let first = try setup.bobsFeed()
            first.start()
            try await until("the first feed live") { first.state.connection == .live }
            for n in 1...4 { _ = try await first.send("bob \(n)") }

            setup.serverAway(true)
            // Written in this order, while the server is away.
            first.send("bob 5", clientId: "bob-5") { _ in }
            // Each change is written once the one before it is in the
            // outbox: tasks started together may run in any order.
            try await until("the send waiting") { first.state.outbox.count == 1 }
            let edited = Task { await Result(catching: { () async throws(ScrollbackError) in try await first.edit(1, body: "bob 1, edited") }) }
            try await until("the edit waiting") { first.state.outbox.count == 2 }
            let deleted = Task { await Result(catching: { () async throws(ScrollbackError) in try await first.delete(2) }) }
            try await until("the deletion waiting") { first.state.outbox.count == 3 }
            let reacted = Task { await Result(catching: { () async throws(ScrollbackError) in try await first.react("👍", to: 3) }) }
            try await until("four entries waiting") { first.state.outbox.count == 4 }
            first.stop()
            for change in [edited, deleted, reacted] { #expect(await change.value.failure == .cancelled) }

            let waiting = try OfflineStore(path: setup.path).outbox(of: id)
            #expect(waiting.map(\.change) == [nil, .edit(seq: 1, body: "bob 1, edited"), .delete(seq: 2), .react(seq: 3, emoji: "👍")])

            // Back, with the answer to the deletion lost: it is sent again, and done.
            setup.serverAway(false)
            proxy.loseNextAnswer(to: "DELETE /v1/conversations/\(id.uuidString.lowercased())/messages/2 ")
            let answers = NIOLockedValueBox<[String]>([])
            let second = try setup.bobsFeed(answers: answers)
            defer { second.stop() }
            second.start()
            try await until("the outbox empty") { second.state.outbox.isEmpty && second.state.connection == .live }
            let deletions = answers.withLockedValue { $0 }.filter { $0.hasPrefix("DELETE") }
            // The first one reached the server, its answer lost; the second
            // finds the message deleted and answers it as it is.
            #expect(deletions.count == 2 && deletions[0].hasSuffix("no answer") && deletions[1].hasSuffix(" 200"), "\(deletions)")
            let stored = try await alice.page(of: id).messages.sorted { $0.seq < $1.seq }
            #expect(stored.map(\.body) == ["bob 1, edited", "", "bob 3", "bob 4", "bob 5"])
            #expect(stored[1].deleted)
            #expect(stored[2].reactions.map(\.emoji) == ["👍"])
            try await until("the window shows them") {
                let shown = second.state.timeline.messages
                return shown.first { $0.seq == 1 }?.body == "bob 1, edited" && shown.first { $0.seq == 2 }?.deleted == true
                    && shown.first { $0.seq == 3 }?.reactions.count == 1
            }
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { failure } else { nil }
    }
}
