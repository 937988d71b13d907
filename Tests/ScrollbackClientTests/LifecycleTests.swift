import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// What the device and the app tell the kit: the network coming back
/// reconnects and retries at once, whatever the backoff; the background
/// holds no socket, and the foreground catches up.
@Suite struct LifecycleTests {
    static let id = UUID(uuidString: "6C1B2A3D-4E5F-4071-8293-A4B5C6D7E8F9")!

    /// A subscription that has failed twice waits out a backoff of minutes;
    /// the network coming back connects it at once, the backoff starts over,
    /// and the timer of the wait it cut short does nothing when it fires.
    @Test func theNetworkComingBackReconnectsAtOnceWithTheBackoffReset() {
        var live = LiveProtocol(
            conversationId: Self.id, after: 0,
            retry: RetryPolicy(maxAttempts: 6, initialDelay: .seconds(600), maxDelay: .seconds(600)), seed: 7,
            completeness: .window)
        #expect(live.handle(.start).contains(.connect))
        _ = live.handle(.failed(reason: "no route to host"))
        #expect(live.handle(.timerFired(.reconnect(attempt: 1))).contains(.connect))
        let waiting = live.handle(.failed(reason: "no route to host"))
        #expect(waiting.contains { if case .startTimer(.reconnect, let after) = $0 { after >= .seconds(300) } else { false } })
        #expect(live.phase == .waiting && live.failures == 2)

        #expect(live.handle(.networkAvailable).contains(.connect))
        #expect(live.phase == .connecting && live.failures == 0)
        #expect(live.handle(.timerFired(.reconnect(attempt: 2))).isEmpty, "the wait cut short is over")
        // On a connection under way, it only resets the backoff.
        #expect(live.handle(.networkAvailable).isEmpty)
    }

    /// A live subscription goes to the background: it gives up the socket,
    /// reports the loss once, and nothing (a timer, a closed socket, the
    /// network) makes it connect until the foreground does.
    @Test func inTheBackgroundNothingReconnectsUntilTheForeground() {
        var live = LiveProtocol(conversationId: Self.id, after: 0, seed: 7, completeness: .window)
        _ = live.handle(.start)
        _ = live.handle(.opened)
        _ = live.handle(.received(.subscribed(conversationId: Self.id, lastSeq: 0, version: 0)))
        #expect(live.phase == .live)

        let steps = live.handle(.backgrounded)
        #expect(steps == [.disconnect, .emit(.disconnected(reason: "The app is in the background."))])
        #expect(live.phase == .suspended)
        #expect(live.handle(.closed(code: nil, reason: "The app is in the background.")).isEmpty)
        #expect(live.handle(.timerFired(.reconnect(attempt: 1))).isEmpty)
        #expect(live.handle(.timerFired(.subscribeDeadline(attempt: 1))).isEmpty)
        #expect(live.handle(.networkAvailable).isEmpty)
        #expect(live.phase == .suspended)
        #expect(live.handle(.backgrounded).isEmpty, "told twice, nothing more happens")

        #expect(live.handle(.foregrounded).contains(.connect))
        #expect(live.phase == .connecting)
    }

    /// A feed and an inbox on one client, against a real server: in the
    /// background the client holds no socket and hears nothing; back in the
    /// foreground both are live again and the feed has what was sent meanwhile.
    @Test func theBackgroundHoldsNoSocketAndTheForegroundCatchesUp() async throws {
        try await LiveCluster.run { cluster in
            let alice = ConversationFeedTests.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let bob = ConversationFeedTests.client(cluster, "bob", baseURL: cluster.instances[0].baseURL)
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.insertMessages(3, into: id, from: "alice")
            let feed = ConversationFeed(client: bob, conversation: id, userId: "bob")
            defer { feed.stop() }
            let inbox = bob.inboxFeed()
            defer { inbox.stop() }
            feed.start()
            inbox.start()
            try await until("the feed and the inbox live") {
                feed.state.connection == .live && inbox.inbox.isLive
            }
            #expect(await bob.connection.openSockets == 1)

            bob.backgrounded()
            try await until("the socket closed") { await bob.connection.openSockets == 0 }
            try await until("the feed told") {
                if case .reconnecting(let reason) = feed.state.connection { reason.contains("background") } else { false }
            }
            try await until("the inbox not live") { !inbox.inbox.isLive }
            for n in 1...3 { _ = try await alice.send("while in the background \(n)", to: id) }
            try await Task.sleep(for: .seconds(2))
            #expect(await bob.connection.openSockets == 0, "nothing reconnected in the background")
            #expect(feed.state.timeline.messages.count == 3)

            bob.foregrounded()
            try await until("both live again, with the three messages") {
                feed.state.connection == .live && inbox.inbox.isLive
                    && feed.state.timeline.messages.map(\.seq) == Array((1...6).reversed())
            }
            #expect(await bob.connection.openSockets == 1)
        }
    }

    /// The server goes away under a client whose backoff is ten minutes: a
    /// send waits in the outbox and the socket waits to reconnect. When the
    /// network comes back, both go at once (without it, this test would
    /// wait out the ten minutes and time out).
    @Test func theNetworkComingBackSendsAndReconnectsAtOnce() async throws {
        try await LiveCluster.run { cluster in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let id = try await cluster.conversation("alice", members: ["bob"])
            let bob = ConversationFeedTests.client(
                cluster, "bob", baseURL: "http://127.0.0.1:\(proxy.port)",
                retry: RetryPolicy(maxAttempts: 2, initialDelay: .seconds(600), maxDelay: .seconds(600)))
            let feed = ConversationFeed(client: bob, conversation: id, userId: "bob")
            defer { feed.stop() }
            feed.start()
            try await until("the feed live") { feed.state.connection == .live }

            proxy.route(to: OfflineFeedTests.nowhere)
            proxy.cutAll()
            try await until("the feed lost its socket") { feed.state.connection != .live }
            let sent = Task { try await feed.send("sent when the network came back", clientId: "back") }
            try await Task.sleep(for: .seconds(1))
            #expect(feed.state.outbox.map(\.clientId) == ["back"])

            proxy.route(to: cluster.instances[0].port)
            bob.networkAvailable()
            #expect(try await sent.value.message.body == "sent when the network came back")
            try await until("the feed live again") { feed.state.connection == .live }
            #expect(feed.state.outbox.isEmpty)
        }
    }
}
