import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// A conversation feed's `presence`: read when it goes live, then kept
/// current by the stream, against real instances.
@Suite struct FeedPresenceTests {
    @Test func theFeedShowsWhoIsOnlineAndFollowsThemComeAndGo() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            // Names of their own: the feed's channel is shared by the tests running at once.
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let (aliceName, bobName, carolName) = ("alice-\(suffix)", "bob-\(suffix)", "carol-\(suffix)")
            let id = try await cluster.conversation(aliceName, members: [bobName, carolName])
            // Bob is online (on the other instance) before the feed opens.
            let bob = ConversationFeedTests.client(cluster, bobName, baseURL: cluster.instances[1].baseURL)
            let bobsStream = Task { for try await _ in bob.live(conversation: id) {} }
            defer { bobsStream.cancel() }
            try await until("bob online") {
                try await bob.presence(of: id).first { $0.userId == bobName }?.online == true
            }

            let alice = ConversationFeedTests.client(cluster, aliceName, baseURL: cluster.instances[0].baseURL)
            let feed = ConversationFeed(client: alice, conversation: id, userId: aliceName, pageSize: 10)
            defer { feed.stop() }
            feed.start()
            try await until("the read of presence") { feed.state.presence[bobName]?.online == true }
            #expect(feed.state.presence[carolName] == MemberPresence(userId: carolName, online: false, lastSeenAt: nil))

            // Carol comes; bob goes.
            let carol = ConversationFeedTests.client(cluster, carolName, baseURL: cluster.instances[1].baseURL)
            let carolsStream = Task { for try await _ in carol.live(conversation: id) {} }
            defer { carolsStream.cancel() }
            try await until("carol online") { feed.state.presence[carolName]?.online == true }
            bobsStream.cancel()
            try await until("bob offline") { feed.state.presence[bobName]?.online == false }
            let seen = try #require(feed.state.presence[bobName]?.lastSeenAt)
            #expect(abs(seen.timeIntervalSinceNow) < 60)
        }
    }
}
