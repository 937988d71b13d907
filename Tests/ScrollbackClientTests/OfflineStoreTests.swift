import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import Testing

/// The offline store on its own (SQLite in a temporary file): what a feed
/// writes comes back as written, across a reopening of the file; rows
/// outside the held ranges go; the outbox keeps its order; the bound
/// evicts the conversations opened least recently.
@Suite struct OfflineStoreTests {
    static func message(_ seq: Int64, in id: UUID, version: Int64? = nil, body: String? = nil, clientId: String? = nil)
        -> Message
    {
        Message(
            conversationId: id, seq: seq, sender: "alice", body: body ?? "message \(seq)", clientId: clientId,
            createdAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(seq)), version: version ?? seq)
    }

    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("offline-\(UUID().uuidString).sqlite").path
    }

    @Test func aSavedWindowComesBackAfterTheFileIsOpenedAgain() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let id = UUID()
        do {
            let store = try OfflineStore(path: path)
            #expect(try store.openWindow(of: id) == nil)
            let messages = (1...20).map { Self.message($0, in: id) }
            try store.save(
                WindowChanges(
                    conversationId: id, messages: messages, segments: [1...20], version: 20, lastSeq: 20,
                    hasOlder: false, readSeqs: ["alice": 20, "bob": 7]))
            // An edit of seq 5 at version 21: only it is written again.
            try store.save(
                WindowChanges(
                    conversationId: id, messages: [Self.message(5, in: id, version: 21, body: "edited")],
                    segments: [1...20], version: 21, lastSeq: 20, hasOlder: false, readSeqs: ["bob": 9]))
        }
        let store = try OfflineStore(path: path)
        let window = try #require(try store.openWindow(of: id))
        #expect(window.messages.map(\.seq) == Array((1...20).reversed()), "newest first")
        #expect(window.messages.first { $0.seq == 5 }?.body == "edited")
        #expect(window.version == 21)
        #expect(window.lastSeq == 20)
        #expect(!window.hasOlder)
        #expect(window.readSeqs == ["alice": 20, "bob": 9])
        #expect(window.page.version == 21 && !window.page.hasNewer)
    }

    @Test func rowsOutsideTheHeldRangesAreDropped() throws {
        let store = try OfflineStore.inMemory()
        let id = UUID()
        try store.save(
            WindowChanges(
                conversationId: id, messages: (1...30).map { Self.message($0, in: id) }, segments: [1...30],
                version: 30, lastSeq: 30, hasOlder: false))
        // The window now holds 11...20 and 26...30 (a limit trimmed it, a gap opened).
        try store.save(
            WindowChanges(
                conversationId: id, messages: [], segments: [11...20, 26...30], version: 30, lastSeq: 30,
                hasOlder: true))
        let window = try #require(try store.openWindow(of: id))
        #expect(window.messages.map(\.seq) == Array((26...30).reversed()) + Array((11...20).reversed()))
        #expect(try store.segments(of: id) == [11...20, 26...30])
        #expect(window.hasOlder)
    }

    @Test func theOutboxKeepsItsOrderAndChangesInPlace() throws {
        let store = try OfflineStore.inMemory()
        let (id, other) = (UUID(), UUID())
        for n in 1...5 {
            try store.put(OutboxEntry(conversationId: id, clientId: "c\(n)", sender: "alice", body: "\(n)"))
        }
        try store.put(OutboxEntry(conversationId: other, clientId: "c1", sender: "alice", body: "elsewhere"))
        // Refused, then put again: it keeps its place.
        try store.put(OutboxEntry(conversationId: id, clientId: "c2", sender: "alice", body: "2", failure: "refused"))
        try store.removeOutboxEntry(clientId: "c4", in: id)
        let entries = try store.outbox(of: id)
        #expect(entries.map(\.clientId) == ["c1", "c2", "c3", "c5"])
        #expect(entries[1].failure == "refused")
        #expect(try store.outbox(of: other).map(\.body) == ["elsewhere"])

        // An acknowledgement in a window's write removes its entry in that write.
        try store.save(
            WindowChanges(
                conversationId: id, messages: [Self.message(1, in: id, clientId: "c1")], segments: [1...1], version: 1,
                lastSeq: 1, hasOlder: false, acknowledged: ["c1"]))
        #expect(try store.outbox(of: id).map(\.clientId) == ["c2", "c3", "c5"])
        try store.forget(id)
        #expect(try store.outbox(of: id).isEmpty)
        #expect(try store.openWindow(of: id) == nil)
        #expect(try store.outbox(of: other).count == 1, "another conversation's outbox stays")
    }

    /// Windows of about 10 KB each under a bound of 25 KB: writing a third
    /// drops the one opened least recently, never the one being written,
    /// and never an outbox.
    @Test func theBoundEvictsTheConversationsOpenedLeastRecently() throws {
        let body = String(repeating: "x", count: 900)
        let store = try OfflineStore.inMemory(maxBytes: 25_000)
        let (first, second, third) = (UUID(), UUID(), UUID())
        func fill(_ id: UUID) throws {
            try store.save(
                WindowChanges(
                    conversationId: id, messages: (1...10).map { Self.message($0, in: id, body: body) },
                    segments: [1...10], version: 10, lastSeq: 10, hasOlder: false))
        }
        try fill(first)
        try fill(second)
        try store.put(OutboxEntry(conversationId: first, clientId: "waiting", sender: "alice", body: "kept"))
        // The first is opened again: the second is now the least recent.
        _ = try store.openWindow(of: first)
        try fill(third)
        #expect(Set(try store.conversations()) == [first, third])
        #expect(try store.openWindow(of: second) == nil)
        #expect(try store.bytesHeld() <= 25_000)
        #expect(try store.outbox(of: first).map(\.body) == ["kept"])

        // A window alone above the bound is kept while it is written.
        let tight = try OfflineStore.inMemory(maxBytes: 1_000)
        try tight.save(
            WindowChanges(
                conversationId: first, messages: (1...10).map { Self.message($0, in: first, body: body) },
                segments: [1...10], version: 10, lastSeq: 10, hasOlder: false))
        #expect(try tight.openWindow(of: first)?.messages.count == 10)
    }
}
