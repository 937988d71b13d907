import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import Testing

/// Every update of a feed's window is one write of its storage: an
/// acknowledged change leaves the outbox in the write that saves the
/// changed message, and what a detached window acknowledges leaves it in one.
@Suite struct StorageTransactionTests {
    /// An `OfflineStore` that records its writes (each call is one transaction).
    final class RecordingStorage: FeedStorage {
        let store: OfflineStore
        let writes = NIOLockedValueBox<[String]>([])

        init(_ store: OfflineStore) { self.store = store }

        func openWindow(of conversation: UUID) throws -> StoredWindow? { try store.openWindow(of: conversation) }
        func outbox(of conversation: UUID) throws -> [OutboxEntry] { try store.outbox(of: conversation) }
        func conversationsWithOutbox() throws -> [UUID] { try store.conversationsWithOutbox() }
        func save(_ changes: WindowChanges) throws {
            let seqs = changes.messages.map { "\($0.seq)" }.joined(separator: ",")
            writes.withLockedValue { $0.append("save [\(seqs)] acknowledged \(changes.acknowledged)") }
            try store.save(changes)
        }
        func put(_ entry: OutboxEntry) throws {
            writes.withLockedValue { $0.append("put \(entry.clientId)") }
            try store.put(entry)
        }
        func removeOutboxEntries(clientIds: [String], in conversation: UUID) throws {
            writes.withLockedValue { $0.append("remove \(clientIds)") }
            try store.removeOutboxEntries(clientIds: clientIds, in: conversation)
        }
        func forget(_ conversation: UUID) throws {
            writes.withLockedValue { $0.append("forget") }
            try store.forget(conversation)
        }

        /// Waits until no write has come for 300 ms.
        func quiet() async throws {
            var last = -1
            while true {
                let count = writes.withLockedValue { $0.count }
                if count == last { return }
                last = count
                try await Task.sleep(for: .milliseconds(300))
            }
        }

        func take() -> [String] {
            writes.withLockedValue { writes in
                defer { writes = [] }
                return writes
            }
        }
    }

    @Test func anAcknowledgedEditLeavesTheOutboxInTheWriteThatSavesIt() async throws {
        try await OfflineFeedTests.run(messages: 0) { setup in
            let storage = RecordingStorage(try OfflineStore(path: setup.path))
            let feed = ConversationFeed(
                client: ConversationFeedTests.client(setup.cluster, "bob", baseURL: setup.cluster.instances[0].baseURL),
                conversation: setup.id, userId: "bob", storage: storage)
            defer { feed.stop() }
            feed.start()
            try await until("live") { feed.state.connection == .live }
            for n in 1...5 { _ = try await feed.send("bob \(n)") }
            try await until("live, with the five messages") {
                feed.state.connection == .live && feed.state.timeline.messages.count == 5
            }
            try await until("the sends out of the outbox") { feed.state.outbox.isEmpty }
            try await storage.quiet()
            _ = storage.take()

            _ = try await feed.edit(3, body: "edited")
            _ = try await feed.react("👍", to: 4)
            try await until("both changes shown") {
                let shown = feed.state.timeline.messages
                return shown.first { $0.seq == 3 }?.body == "edited" && shown.first { $0.seq == 4 }?.reactions.count == 1
            }
            try await storage.quiet()
            let writes = storage.take()
            // Each change: its entry put, then taken out by a save of the
            // window (the one of its answer, or of the live frame that came
            // first), never by a write of its own.
            #expect(writes.filter { $0.hasPrefix("remove") }.isEmpty, "an entry removed by a write of its own: \(writes)")
            let puts = writes.filter { $0.hasPrefix("put ") }.map { String($0.dropFirst(4)) }
            #expect(puts.count == 2, "\(writes)")
            for entry in puts {
                let saves = writes.filter { $0.hasPrefix("save ") && $0.contains("\"\(entry)\"") }
                #expect(saves.count == 1, "entry \(entry): \(writes)")
            }
            #expect(writes.contains { $0.hasPrefix("save [3]") } && writes.contains { $0.hasPrefix("save [4]") }, "\(writes)")
            #expect(try storage.store.outbox(of: setup.id).isEmpty)
            let held = try #require(try storage.store.openWindow(of: setup.id))
            #expect(held.messages.first { $0.seq == 3 }?.body == "edited")
        }
    }
}
