import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// `ScrollbackClient.sendWaiting(from:)` against a real server taken away
/// by a proxy: the sends left in the offline store's outboxes by feeds that
/// stopped are sent at launch without opening the conversations, each
/// stored once and in the order written, also with a feed of the same
/// conversation sending at the same time.
@Suite struct SendWaitingTests {
    /// Bob's feed of a second conversation of alice's with bob, on the store's file, through the proxy.
    static func feed(_ setup: OfflineFeedTests.Setup, _ id: UUID) throws -> ConversationFeed {
        ConversationFeed(
            client: OfflineFeedTests.client(setup.cluster, "bob", port: setup.proxy.port), conversation: id,
            userId: "bob", settings: OfflineFeedTests.settings(), storage: try OfflineStore(path: setup.path))
    }

    /// Writes three sends to each of two conversations with the server
    /// away, through feeds that are then stopped.
    static func writeOffline(_ setup: OfflineFeedTests.Setup, _ other: UUID) async throws {
        let first = try setup.bobsFeed()
        let second = try feed(setup, other)
        first.start()
        second.start()
        try await until("both feeds live") { first.state.connection == .live && second.state.connection == .live }
        setup.serverAway(true)
        for n in 1...3 {
            first.send("first \(n)", clientId: "first-\(n)") { _ in }
            second.send("second \(n)", clientId: "second-\(n)") { _ in }
        }
        // Longer than the client's retries take to give up: nothing is failed.
        try await Task.sleep(for: .seconds(2))
        #expect(first.state.outbox.map(\.clientId) == ["first-1", "first-2", "first-3"])
        #expect(second.state.outbox.map(\.clientId) == ["second-1", "second-2", "second-3"])
        first.stop()
        second.stop()
        let store = try OfflineStore(path: setup.path)
        #expect(try store.outbox(of: setup.id).map(\.clientId) == ["first-1", "first-2", "first-3"])
        #expect(try store.outbox(of: other).map(\.clientId) == ["second-1", "second-2", "second-3"])
        #expect(Set(try store.conversationsWithOutbox()) == [setup.id, other])
    }

    /// What the server stores of `id`, oldest first: bodies and client ids.
    static func stored(_ client: ScrollbackClient, _ id: UUID) async throws -> [String] {
        try await client.page(of: id).messages.sorted { $0.seq < $1.seq }.map { "\($0.body) \($0.clientId ?? "-")" }
    }

    @Test func waitingSendsOfTwoConversationsAreSentAtLaunchOnceAndInOrder() async throws {
        try await OfflineFeedTests.run(messages: 2) { setup in
            let other = try await setup.cluster.conversation("alice", members: ["bob"])
            try await Self.writeOffline(setup, other)

            setup.serverAway(false)
            let bob = OfflineFeedTests.client(setup.cluster, "bob", port: setup.proxy.port)
            let store = try OfflineStore(path: setup.path)
            let result = try await bob.sendWaiting(from: store)
            #expect(result.refused.isEmpty)
            #expect(result.storageFailure == nil)
            #expect(Set(result.sent.map(\.clientId)) == Set(["first-1", "first-2", "first-3", "second-1", "second-2", "second-3"]))
            #expect(
                try await Self.stored(setup.alice, setup.id)
                    == ["bulk 1 -", "bulk 2 -", "first 1 first-1", "first 2 first-2", "first 3 first-3"])
            #expect(try await Self.stored(setup.alice, other) == ["second 1 second-1", "second 2 second-2", "second 3 second-3"])
            #expect(try store.outbox(of: setup.id).isEmpty)
            #expect(try store.outbox(of: other).isEmpty)
            #expect(try store.conversationsWithOutbox().isEmpty)

            // A feed opened afterwards shows the messages and no echo.
            let feed = try setup.bobsFeed()
            defer { feed.stop() }
            feed.start()
            try await until("the feed live with the messages") {
                feed.state.connection == .live && feed.state.timeline.seqRange == 1...5
            }
            #expect(feed.state.outbox.isEmpty)
            #expect(!feed.state.timeline.items.contains { $0.isPending })
        }
    }

    /// With the server away, `sendWaiting` keeps everything waiting (no
    /// entry is marked failed) and a feed of the first conversation is
    /// started on the same store: when the server comes back both send
    /// from the same outbox, taking turns, and each message is stored once,
    /// in order.
    @Test func sendWaitingAndAFeedOfTheSameConversationTakeTurns() async throws {
        try await OfflineFeedTests.run(messages: 2) { setup in
            let other = try await setup.cluster.conversation("alice", members: ["bob"])
            try await Self.writeOffline(setup, other)

            let bob = OfflineFeedTests.client(setup.cluster, "bob", port: setup.proxy.port)
            let store = try OfflineStore(path: setup.path)
            let sending = Task { try await bob.sendWaiting(from: store) }
            let feed = try setup.bobsFeed()
            defer { feed.stop() }
            feed.start()
            try await Task.sleep(for: .seconds(1))
            #expect(try store.outbox(of: setup.id).allSatisfy { $0.failure == nil }, "nothing failed while away")
            #expect(try store.outbox(of: other).count == 3)

            setup.serverAway(false)
            let result = try await sending.value
            #expect(result.refused.isEmpty)
            try await until("the feed's outbox empty") { feed.state.outbox.isEmpty && feed.state.connection == .live }
            #expect(
                try await Self.stored(setup.alice, setup.id)
                    == ["bulk 1 -", "bulk 2 -", "first 1 first-1", "first 2 first-2", "first 3 first-3"])
            #expect(try await Self.stored(setup.alice, other) == ["second 1 second-1", "second 2 second-2", "second 3 second-3"])
            #expect(try store.conversationsWithOutbox().isEmpty)
        }
    }

    /// Cancelled while the server is away, `sendWaiting` throws `cancelled`
    /// and leaves every entry waiting, none failed.
    @Test func cancelledWhileTheServerIsAwayItLeavesTheOutboxAsItWas() async throws {
        try await OfflineFeedTests.run(messages: 0) { setup in
            let other = try await setup.cluster.conversation("alice", members: ["bob"])
            try await Self.writeOffline(setup, other)
            let bob = OfflineFeedTests.client(setup.cluster, "bob", port: setup.proxy.port)
            let store = try OfflineStore(path: setup.path)
            let outcome = NIOLockedValueBox<Result<ScrollbackClient.WaitingSends, ScrollbackError>?>(nil)
            let task = bob.sendWaiting(from: store) { result in outcome.withLockedValue { $0 = result } }
            try await Task.sleep(for: .seconds(1))
            task.cancel()
            try await until("the completion called") { outcome.withLockedValue { $0 } != nil }
            #expect(outcome.withLockedValue { $0 } == .failure(.cancelled))
            #expect(try store.outbox(of: setup.id).map(\.clientId) == ["first-1", "first-2", "first-3"])
            #expect(try store.outbox(of: other).map(\.clientId) == ["second-1", "second-2", "second-3"])
            #expect(try store.outbox(of: setup.id).allSatisfy { $0.failure == nil })
        }
    }
}
