import Foundation
import NIOConcurrencyHelpers
import OpenCombineShim
import ScrollbackClient
import ScrollbackClientCombine
import ScrollbackModels
import ScrollbackTestSupport
import Testing

@Suite struct MentionPublisherTests {
    /// Lazy like every publisher of the kit: the request goes out on subscription.
    @Test func mentionsArriveThroughThePublisher() async throws {
        try await LiveCluster.run { cluster in
            let alice = ScrollbackClient(baseURL: cluster.instances[0].baseURL) { try await cluster.token("alice") }
            let requests = NIOLockedValueBox(0)
            let bob = ScrollbackClient(baseURL: cluster.instances[0].baseURL) {
                requests.withLockedValue { $0 += 1 }
                return try await cluster.token("bob")
            }
            let id = try await alice.createConversation(members: ["bob"]).id
            _ = try await alice.send("@bob hello", to: id)
            let mentions = bob.publishers.mentions(limit: 5)
            #expect(requests.withLockedValue { $0 } == 0)
            let page = try await PublisherTests.value(of: mentions)
            #expect(page.mentions.map(\.message.body) == ["@bob hello"] && page.next == nil)
            #expect(requests.withLockedValue { $0 } == 1)
        }
    }
}
