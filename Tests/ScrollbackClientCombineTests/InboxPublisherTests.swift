import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import OpenCombineShim
import ScrollbackClient
import ScrollbackClientCombine
import ScrollbackModels
import ScrollbackTestSupport
import Testing

@Suite struct InboxPublisherTests {
    /// Nothing connects before a subscriber arrives; the subscriber gets the
    /// inbox as it changes; after cancelling, the feed is stopped.
    @Test func theInboxPublisherIsLazyAndStopsOnCancel() async throws {
        try await LiveCluster.run { cluster in
            // An HTTP client of the test's own, shut down before the server
            // restarts: a pooled connection that never sent a request would
            // hold up the server's graceful shutdown.
            let http = HTTPClient()
            let asked = NIOLockedValueBox(0)
            let alice = ScrollbackClient(baseURL: cluster.instances[0].baseURL, http: http) {
                asked.withLockedValue { $0 += 1 }
                return try await cluster.token("alice")
            }
            let bob = ScrollbackClient(baseURL: cluster.instances[0].baseURL, http: http) { try await cluster.token("bob") }
            let states = NIOLockedValueBox<[Inbox]>([])
            let cancellable: AnyCancellable
            do {
                let id = try await bob.createConversation(title: "Plans", members: ["alice"]).id

                let publisher = alice.publishers.inbox(pageSize: 10)
                try await Task.sleep(for: .milliseconds(300))
                #expect(asked.withLockedValue { $0 } == 0, "the publisher connected before it was subscribed")

                cancellable = publisher.sink(
                    receiveCompletion: { _ in }, receiveValue: { inbox in states.withLockedValue { $0.append(inbox) } })
                #expect(states.withLockedValue { $0.first } == Inbox(), "the empty inbox first")
                try await Self.poll { states.withLockedValue { $0.last?[id]?.title == "Plans" } }
                _ = try await bob.send("hi", to: id)
                try await Self.poll { states.withLockedValue { $0.last?[id]?.lastMessage?.body == "hi" } }
            } catch {
                try? await http.shutdown()
                throw error
            }
            cancellable.cancel()
            try await http.shutdown()
            // A stopped feed does not reconnect when its server goes away
            // and comes back (a running one asks for a token at once).
            let asking = asked.withLockedValue { $0 }
            try await cluster.restart(0)
            try await Task.sleep(for: .milliseconds(500))
            #expect(asked.withLockedValue { $0 } == asking, "the feed ran on after its subscriber cancelled")
        }
    }

    static func poll(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
