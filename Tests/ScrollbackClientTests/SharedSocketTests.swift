import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// Every stream and feed of a client subscribes on one socket, against a
/// real server on loopback: the upgrades that reach the server are counted
/// by a proxy in front of it.
@Suite struct SharedSocketTests {
    static let upgrade = "GET /v1/stream"

    /// Alice's feeds of two conversations, her inbox feed and a live stream,
    /// all of one client through `proxy`; bob writes directly.
    struct Listening {
        let alice: ScrollbackClient
        let bob: ScrollbackClient
        let first: UUID
        let second: UUID
        let feeds: [ConversationFeed]
        let inbox: InboxFeed
        let events = EventLog()
        let stream: Task<Void, any Error>

        init(_ cluster: LiveCluster, through proxy: CuttingProxy, http: HTTPClient) async throws {
            let retry = RetryPolicy(maxAttempts: 6, initialDelay: .milliseconds(50), maxDelay: .milliseconds(500))
            let alice = ScrollbackClient(
                baseURL: "http://127.0.0.1:\(proxy.port)", http: http, retry: retry, token: { try await cluster.token("alice") })
            self.alice = alice
            bob = ScrollbackClient(
                baseURL: cluster.instances[0].baseURL, http: http, retry: retry, token: { try await cluster.token("bob") })
            let first = try await bob.createConversation(title: "first", members: ["alice"]).id
            let second = try await bob.createConversation(title: "second", members: ["alice"]).id
            (self.first, self.second) = (first, second)
            for n in 1...3 {
                _ = try await bob.send("first \(n)", to: first)
                _ = try await bob.send("second \(n)", to: second)
            }
            feeds = [first, second].map { ConversationFeed(client: alice, conversation: $0, userId: "alice") }
            inbox = alice.inboxFeed()
            let events = events
            stream = Task {
                for try await event in alice.live(conversation: first, after: 0) { events.append(event) }
            }
            for feed in feeds { feed.start() }
            inbox.start()
        }

        func stop() {
            stream.cancel()
            for feed in feeds { feed.stop() }
            inbox.stop()
        }

        /// Every feed, the inbox and the stream show bob's messages up to `count` in each conversation.
        func untilEverySubscriberHas(_ count: Int64) async throws {
            try await until("every feed live with message \(count)") {
                feeds.allSatisfy { $0.state.connection == .live && $0.state.timeline.seqRange?.upperBound == count }
            }
            try await until("the inbox live at \(count)") {
                inbox.inbox.isLive && inbox.inbox[first]?.lastSeq == count && inbox.inbox[second]?.lastSeq == count
            }
            try await events.waitForMessages(Int(count))
        }
    }

    /// Alice listening through a proxy that counts upgrades, every subscriber at message 3.
    static func withListening(_ body: @escaping @Sendable (Listening, CuttingProxy) async throws -> Void) async throws {
        try await LiveCluster.run { cluster in try await InboxFeedTests.withHTTP { http in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            proxy.countConnections(startingWith: Self.upgrade)
            let listening = try await Listening(cluster, through: proxy, http: http)
            defer { listening.stop() }
            try await listening.untilEverySubscriberHas(3)
            try await body(listening, proxy)
        } }
    }

    @Test func twoFeedsAnInboxFeedAndAStreamOfOneClientOpenOneSocket() async throws {
        try await Self.withListening { listening, proxy in
            _ = try await listening.bob.send("first 4", to: listening.first)
            _ = try await listening.bob.send("second 4", to: listening.second)
            try await listening.untilEverySubscriberHas(4)
            #expect(proxy.countedConnections == 1)
            #expect(await listening.alice.connection.openSockets == 1)

            // The last subscriber to leave closes it.
            listening.stop()
            try await until("the socket closed") { await listening.alice.connection.openSockets == 0 }
        }
    }

    /// The socket is cut and messages are sent to both conversations while
    /// it is away: one new socket resumes every subscription from its own
    /// position, and each shows every message once.
    @Test func aCutSocketIsReopenedOnceAndEverySubscriptionResumesWithNoLossOrDuplicate() async throws {
        try await Self.withListening { listening, proxy in
            // Alice reads the second conversation only: its position differs from the first's.
            _ = try await listening.bob.send("second 4", to: listening.second)
            try await until("the second feed at 4") { listening.feeds[1].state.timeline.seqRange?.upperBound == 4 }

            proxy.cutAll()
            for n in 4...8 { _ = try await listening.bob.send("first \(n)", to: listening.first) }
            for n in 5...8 { _ = try await listening.bob.send("second \(n)", to: listening.second) }
            try await listening.untilEverySubscriberHas(8)

            #expect(listening.events.messages.map(\.seq) == Array(1...8), "the stream: every message once, in order")
            for (feed, id) in zip(listening.feeds, [listening.first, listening.second]) {
                let fresh = try await listening.bob.page(of: id, limit: 50).messages
                #expect(feed.state.timeline.messages == fresh)
            }
            #expect(listening.events.all.contains { if case .disconnected = $0 { true } else { false } })
            #expect(proxy.countedConnections == 2, "one socket, reopened once for all")
        }
    }
}
