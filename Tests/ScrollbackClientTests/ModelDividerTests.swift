import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// The conversation model's unread divider comes from the feed's read
/// marker as it opened: the stored one while the server is away, the
/// server's once it answers; a failed call never loses it.
@Suite struct ModelDividerTests {
    /// Bob has read through 20 of 30 when his feed keeps the window. With
    /// the server away a model opened at the newest message shows the
    /// divider above 21 at once; he reads through 25 on another device
    /// meanwhile, and once the server is back the divider is above 26.
    @Test @MainActor func theDividerShowsOfflineFromTheStoredMarkerThenFromTheServers() async throws {
        try await OfflineFeedTests.run(messages: 30) { setup in
            let id = setup.id
            let bobElsewhere = ConversationFeedTests.client(setup.cluster, "bob", baseURL: setup.cluster.instances[0].baseURL)
            _ = try await bobElsewhere.markRead(20, in: id)
            let first = try setup.bobsFeed()
            first.start()
            try await until("the first feed live, its marker read") {
                first.state.connection == .live && first.state.timeline.isLoaded && first.state.readSeqAtOpen == 20
            }
            first.stop()
            #expect(try OfflineStore(path: setup.path).openWindow(of: id)?.readSeqs["bob"] == 20, "the marker is on disk")

            setup.serverAway(true)
            let model = await ConversationModel(feed: try setup.bobsFeed())
            await model.start()
            try await until("the divider from the stored marker") {
                await MainActor.run { model.items.count == 30 && model.firstUnreadSeq == 21 }
            }
            #expect(await model.connection != .live)

            _ = try await bobElsewhere.markRead(25, in: id)
            try await Task.sleep(for: .milliseconds(500))
            #expect(await model.firstUnreadSeq == 21, "the stored marker while the server is away")

            setup.serverAway(false)
            try await until("the divider from the server's marker") {
                await MainActor.run { model.connection == .live && model.firstUnreadSeq == 26 }
            }
            // It stays where the screen opened as the reader reads.
            await model.markRead()
            try await until("the read marker") { await model.readSeqs["bob"] == 30 }
            #expect(await model.firstUnreadSeq == 26)
            await model.stop()
        }
    }

    /// Without a store, with the server away when the model starts: the
    /// divider is not lost to the calls that fail, it shows once the server
    /// answers.
    @Test @MainActor func theDividerIsNotLostWhenTheServerIsAwayAtFirst() async throws {
        try await OfflineFeedTests.run(messages: 10) { setup in
            let id = setup.id
            let bobElsewhere = ConversationFeedTests.client(setup.cluster, "bob", baseURL: setup.cluster.instances[0].baseURL)
            _ = try await bobElsewhere.markRead(6, in: id)
            setup.serverAway(true)
            let feed = ConversationFeed(
                client: OfflineFeedTests.client(setup.cluster, "bob", port: setup.proxy.port), conversation: id,
                userId: "bob", settings: OfflineFeedTests.settings())
            let model = await ConversationModel(feed: feed)
            await model.start()
            // Longer than the client's retries take to give up.
            try await Task.sleep(for: .seconds(4))
            #expect(await model.firstUnreadSeq == nil)
            setup.serverAway(false)
            try await until("the divider") {
                await MainActor.run { model.connection == .live && model.items.count == 10 && model.firstUnreadSeq == 7 }
            }
            await model.stop()
        }
    }
}
