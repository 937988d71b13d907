import Foundation
import NIOConcurrencyHelpers
import Observation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// The SwiftUI models against a real server: every change of an observed
/// property happens on the main actor (as `withObservationTracking` sees
/// it), and the models show what their feeds hold, with the divider above
/// the first unread message and the inbox's total unread count.
@Suite struct ModelTests {
    /// Whether the caller runs on the main queue, which is where the main
    /// actor runs: on Linux the main queue may be served by a thread other
    /// than the process's first (`Thread.isMainThread` is false there), so
    /// the queue is marked and asked instead.
    static func onMainQueue() -> Bool {
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
        return DispatchQueue.getSpecific(key: mainQueueKey) == true
    }

    private static let mainQueueKey = DispatchSpecificKey<Bool>()

    /// Counts each change of what `read` reads, and whether it happened on
    /// the main thread, re-registering after each (as SwiftUI does).
    @MainActor final class ChangeLog {
        private(set) var changes = 0
        private(set) var offMain = 0
        private let read: @MainActor () -> Void

        init(_ read: @escaping @MainActor () -> Void) {
            self.read = read
            track()
        }

        private func track() {
            withObservationTracking(read) { [weak self] in
                let onMain = ModelTests.onMainQueue()
                Task { @MainActor in self?.changed(onMain: onMain) }
            }
        }

        private func changed(onMain: Bool) {
            changes += 1
            if !onMain { offMain += 1 }
            track()
        }
    }

    @Test @MainActor func theConversationModelChangesOnTheMainActorOnlyAndShowsTheFeed() async throws {
        try await LiveCluster.run { cluster in
            let alice = ConversationFeedTests.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let bob = ConversationFeedTests.client(cluster, "bob", baseURL: cluster.instances[0].baseURL)
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.send(5, to: id, as: "alice")
            _ = try await bob.markRead(3, in: id)

            let model = await ConversationModel(feed: ConversationFeed(client: bob, conversation: id, userId: "bob"))
            let log = await ChangeLog {
                _ = (model.items, model.connection, model.bottomPadding, model.outbox, model.firstUnreadSeq, model.anchor)
            }
            await model.start()
            try await until("the model live with five messages and the divider") {
                await MainActor.run { model.connection == .live && model.items.count == 5 && model.firstUnreadSeq == 4 }
            }
            await model.send("from the model")
            try await until("the send stored") {
                await MainActor.run { model.items.first?.message?.body == "from the model" && model.outbox.isEmpty }
            }
            await model.edit(6, body: "edited from the model")
            try await until("the edit shown") {
                await MainActor.run { model.items.first?.message?.body == "edited from the model" }
            }
            _ = try await alice.send("from alice", to: id)
            try await until("alice's message") { await MainActor.run { model.items.first?.message?.body == "from alice" } }
            #expect(await model.firstUnreadSeq == 4, "the divider stays where the screen opened")
            #expect(await MainActor.run { model.bottomPadding == model.feed.state.timeline.layout?.bottomPadding })

            await model.markRead()
            try await until("the read marker") { await model.readSeqs["bob"] == 7 }
            await model.stop()
            #expect(await log.changes > 3)
            #expect(await log.offMain == 0, "a property changed off the main thread")
        }
    }

    @Test @MainActor func theInboxModelCountsUnreadAcrossConversations() async throws {
        try await LiveCluster.run { cluster in
            let alice = ConversationFeedTests.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let carol = ConversationFeedTests.client(cluster, "carol-models", baseURL: cluster.instances[0].baseURL)
            let first = try await cluster.conversation("alice", members: ["carol-models"])
            let second = try await cluster.conversation("alice", members: ["carol-models"])
            try await cluster.send(2, to: first, as: "alice")
            try await cluster.send(3, to: second, as: "alice")

            let model = await InboxModel(feed: carol.inboxFeed())
            let log = await ChangeLog { _ = (model.conversations, model.unreadCount, model.isLive) }
            await model.start()
            try await until("both conversations, five unread") {
                await MainActor.run { model.isLive && model.conversations.count == 2 && model.unreadCount == 5 }
            }
            _ = try await alice.send("one more", to: first)
            try await until("six unread") { await model.unreadCount == 6 }
            _ = try await carol.markRead(3, in: first)
            try await until("three unread") { await model.unreadCount == 3 }
            await model.stop()
            #expect(await log.changes > 2)
            #expect(await log.offMain == 0, "a property changed off the main thread")
        }
    }
}
