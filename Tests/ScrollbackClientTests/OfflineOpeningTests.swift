import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// Feeds on the offline store opened away from the newest message (at a
/// message, at the first unread) with the server taken away: the stored
/// window shows at once, placed where the opening asks, and is corrected
/// from the server once it is back.
@Suite struct OfflineOpeningTests {
    typealias Row = ConversationFeedTests.Row

    /// Bob's feed keeps the 30 messages on disk; with the server away, a
    /// feed opened at message 10 shows them at once, message 10 in view
    /// (the reader scrolled up from the bottom); alice sends meanwhile, and
    /// once the server is back the feed is live and equal to a fresh fetch.
    @Test func aFeedOpenedAtAMessageOfflineShowsTheStoredWindowThereAndCatchesUp() async throws {
        try await OfflineFeedTests.run(messages: 30) { setup in
            let (alice, id) = (setup.alice, setup.id)
            let first = try setup.bobsFeed()
            first.start()
            try await until("the first feed live") { first.state.connection == .live && first.state.timeline.isLoaded }
            let seen = first.state.timeline.messages.map(Row.init)
            #expect(seen.count == 30)
            first.stop()

            setup.serverAway(true)
            let second = try setup.bobsFeed()
            defer { second.stop() }
            second.start(at: .message(10))
            #expect(second.state.timeline.messages.map(Row.init) == seen, "the window from disk, before any answer")
            #expect(second.state.timeline.scrollOffset > 0, "placed at message 10, not at the bottom")
            #expect(second.state.timeline.isAttached)

            _ = try await alice.send("while away", to: id)
            try await Task.sleep(for: .milliseconds(500))
            #expect(second.state.timeline.messages.map(Row.init) == seen, "nothing changes while the server is away")
            #expect(second.state.connection != .live)

            setup.serverAway(false)
            try await until("the window equal to a fresh fetch") {
                let state = second.state
                guard state.connection == .live, state.timeline.seqRange == 1...31 else { return false }
                return state.timeline.messages.map(Row.init) == (try await ConversationFeedTests.freshWindow(alice, id, from: 1))
            } describe: {
                "\(second.state.connection) \(String(describing: second.state.timeline.seqRange))"
            }
        }
    }

    /// Bob has read through 20 when his feed keeps the window; with the
    /// server away, a feed opened at the first unread shows the window at
    /// once with the divider at 21 (the marker on disk). While he is away he
    /// reads through 25 on another device and alice sends: once the server
    /// is back the divider is at 26 and the window is whole.
    @Test func aFeedOpenedAtTheFirstUnreadOfflineUsesTheStoredMarkerThenTheServers() async throws {
        try await OfflineFeedTests.run(messages: 30) { setup in
            let (alice, id) = (setup.alice, setup.id)
            let bobElsewhere = ConversationFeedTests.client(setup.cluster, "bob", baseURL: setup.cluster.instances[0].baseURL)
            _ = try await bobElsewhere.markRead(20, in: id)
            let first = try setup.bobsFeed()
            first.start()
            try await until("the first feed live, its marker read") {
                first.state.connection == .live && first.state.timeline.isLoaded && first.state.readSeqAtOpen == 20
            }
            let seen = first.state.timeline.messages.map(Row.init)
            first.stop()
            #expect(try OfflineStore(path: setup.path).openWindow(of: id)?.readSeqs["bob"] == 20, "the marker is on disk")

            setup.serverAway(true)
            let second = try setup.bobsFeed()
            defer { second.stop() }
            second.start(at: .firstUnread)
            #expect(second.state.timeline.messages.map(Row.init) == seen, "the window from disk, before any answer")
            #expect(second.state.firstUnreadSeq == 21)
            #expect(second.state.readSeqAtOpen == 20)

            _ = try await bobElsewhere.markRead(25, in: id)
            _ = try await alice.send("while away", to: id)
            try await Task.sleep(for: .milliseconds(500))
            #expect(second.state.firstUnreadSeq == 21, "the stored marker while the server is away")

            setup.serverAway(false)
            try await until("the divider from the server's marker, the window whole") {
                let state = second.state
                guard state.connection == .live, state.timeline.seqRange == 1...31, state.firstUnreadSeq == 26
                else { return false }
                return state.timeline.messages.map(Row.init) == (try await ConversationFeedTests.freshWindow(alice, id, from: 1))
            } describe: {
                "\(second.state.connection) \(String(describing: second.state.timeline.seqRange)) \(String(describing: second.state.firstUnreadSeq))"
            }
            #expect(second.state.readSeqAtOpen == 25)
        }
    }
}
