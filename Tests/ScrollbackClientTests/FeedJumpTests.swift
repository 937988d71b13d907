import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// A feed opened away from the newest message, against a real server: deep
/// in a conversation of 10,000 messages, or at the first unread; newer
/// pages load as the reader scrolls down while messages keep arriving
/// live, and the window joins the live edge with every seq once.
@Suite struct FeedJumpTests {
    typealias Row = ConversationFeedTests.Row

    static func settings() -> TimelineLayoutSettings {
        TimelineLayoutSettings(viewportHeight: 600, prefetchThreshold: 300)
    }

    @Test func aJumpDeepIntoTenThousandMessagesPagesNewerToTheLiveEdge() async throws {
        try await LiveCluster.run { cluster in
            let alice = ConversationFeedTests.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let bob = ConversationFeedTests.client(cluster, "bob", baseURL: cluster.instances[0].baseURL)
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.insertMessages(10_000, into: id, from: "alice")
            let feed = ConversationFeed(client: bob, conversation: id, userId: "bob", pageSize: 200, settings: Self.settings())
            defer { feed.stop() }
            feed.start(at: .message(2_000))
            try await until("the window around 2,000") {
                feed.state.connection == .live && feed.state.timeline.messages.contains { $0.seq == 2_000 }
            }
            let opened = feed.state.timeline
            #expect(!opened.isAttached)
            #expect((opened.seqRange?.upperBound ?? 0) < 2_200, "the window is around 2,000, not at the newest")
            let layout = try #require(opened.layout)
            let row = try #require(opened.items.firstIndex { $0.seq == 2_000 })
            #expect(abs(layout.items[row].offsetFromBottom + layout.items[row].height / 2 - opened.scrollOffset - 300) < 1)

            // The reader scrolls down, again and again, while alice writes.
            var sent = 0
            var scrolls = 0
            while !feed.state.timeline.isAttached {
                scrolls += 1
                try #require(scrolls < 500, "the window never reached the live edge")
                let loaded = feed.state.timeline.messages.count
                feed.apply(.scrolled(offsetFromBottom: 0))
                if sent < 20 {
                    _ = try await alice.send("live \(sent)", to: id)
                    sent += 1
                }
                try await until("a newer page after scroll \(scrolls)") {
                    feed.state.timeline.isAttached || feed.state.timeline.messages.count > loaded
                }
            }
            let fresh = NIOLockedValueBox<[Row]>([])
            try await until("the window equal to a fresh fetch up to the newest") {
                let timeline = feed.state.timeline
                let last = try await alice.conversation(id).lastSeq
                guard let window = timeline.seqRange, window.upperBound == last, timeline.gaps.isEmpty else { return false }
                let rows = try await ConversationFeedTests.freshWindow(alice, id, from: window.lowerBound)
                fresh.withLockedValue { $0 = rows }
                return timeline.messages.map(Row.init) == rows
            } describe: {
                "window \(String(describing: feed.state.timeline.seqRange)), gaps \(feed.state.timeline.gaps.prefix(3))"
            }
            let seqs = feed.state.timeline.messages.map(\.seq)
            #expect(Set(seqs).count == seqs.count, "every seq once")
            #expect(seqs.last ?? 0 <= 2_000 && seqs.first == 10_000 + Int64(sent))
            print("FeedJumpTests: \(scrolls) scrolls from 2,000 to the live edge, \(seqs.count) rows, \(sent) sent meanwhile")

            // Live from now on, and a send at the bottom.
            _ = try await feed.send("from bob")
            #expect(feed.state.timeline.items.first?.message?.body == "from bob")
        }
    }

    /// Bob has read 5,000 of 6,000 messages: the feed opens with the first
    /// unread in the middle of the screen and says where the divider goes;
    /// a jump to latest puts the reader at the newest, and a send from a
    /// window jumped away goes back there too.
    @Test func theFeedOpensAtTheFirstUnreadAndJumpsBack() async throws {
        try await LiveCluster.run { cluster in
            let bob = ConversationFeedTests.client(cluster, "bob", baseURL: cluster.instances[0].baseURL)
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.insertMessages(6_000, into: id, from: "alice")
            _ = try await bob.markRead(5_000, in: id)
            let feed = ConversationFeed(client: bob, conversation: id, userId: "bob", pageSize: 50, settings: Self.settings())
            defer { feed.stop() }
            feed.start(at: .firstUnread)
            try await until("the window at the first unread") {
                feed.state.connection == .live && feed.state.timeline.messages.contains { $0.seq == 5_001 }
            }
            #expect(feed.state.firstUnreadSeq == 5_001)
            #expect(!feed.state.timeline.isAttached)

            feed.jumpToLatest()
            try await until("the newest page") {
                feed.state.timeline.isAttached && feed.state.timeline.seqRange?.upperBound == 6_000
            }
            #expect(feed.state.timeline.scrollOffset == 0)
            #expect(!feed.state.timeline.messages.contains { $0.seq == 5_001 }, "the window moved whole")

            feed.jump(to: 10)
            try await until("the window around 10") { feed.state.timeline.seqRange?.contains(10) == true }
            #expect(!feed.state.timeline.isAttached)
            let sent = try await feed.send("from far above")
            try await until("back at the newest, with the message") {
                feed.state.timeline.isAttached && feed.state.timeline.items.first?.message?.seq == sent.message.seq
            }
            #expect(feed.state.timeline.items.filter { $0.clientId == sent.message.clientId }.count == 1)
        }
    }
}
