import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import Testing

/// `persistChanges(from:to:)`: what a feed writes to its storage is the
/// difference between the window the storage holds and the window its
/// state keeps, and nothing else.
struct PersistChangesTests {
    static let id = ServerHistory.id

    static func window(_ history: ServerHistory, _ seqs: ClosedRange<Int64>, readSeqs: [String: Int64] = [:])
        -> StoredWindow
    {
        StoredWindow(
            messages: seqs.reversed().map(history.message), version: history.version, lastSeq: history.lastSeq,
            hasOlder: seqs.lowerBound > 1, readSeqs: readSeqs)
    }

    @Test func nothingHeldWritesTheWholeWindow() throws {
        let history = ServerHistory(count: 5)
        let changes = try #require(persistChanges(from: nil, to: Self.window(history, 1...5), of: Self.id))
        #expect(changes.messages.map(\.seq) == [5, 4, 3, 2, 1])
        #expect(changes.segments == [1...5])
        #expect(changes.version == history.version && changes.lastSeq == 5 && !changes.hasOlder)
        #expect(changes.readSeqs == nil && changes.acknowledged.isEmpty)
    }

    @Test func theSameWindowWritesNothing() {
        let history = ServerHistory(count: 5)
        #expect(persistChanges(from: Self.window(history, 1...5), to: Self.window(history, 1...5), of: Self.id) == nil)
    }

    @Test func anEditWritesTheEditedMessageAndTheVersionOnly() throws {
        var history = ServerHistory(count: 5)
        let before = Self.window(history, 1...5)
        history.edit(3)
        let changes = try #require(persistChanges(from: before, to: Self.window(history, 1...5), of: Self.id))
        #expect(changes.messages.map(\.seq) == [3])
        #expect(changes.messages.first?.body.contains("edited") == true)
        #expect(changes.version == history.version && changes.segments == [1...5])
    }

    @Test func newMessagesAndDroppedRowsChangeTheSegments() throws {
        var history = ServerHistory(count: 5)
        let before = Self.window(history, 1...5)
        history.append()
        history.append()
        let changes = try #require(persistChanges(from: before, to: Self.window(history, 3...7), of: Self.id))
        #expect(changes.messages.map(\.seq) == [7, 6])
        #expect(changes.segments == [3...7] && changes.hasOlder && changes.lastSeq == 7)
    }

    @Test func readMarkersAreWrittenOnlyWhenTheyMove() throws {
        let history = ServerHistory(count: 3)
        let before = Self.window(history, 1...3, readSeqs: ["alice": 2])
        let moved = try #require(
            persistChanges(from: before, to: Self.window(history, 1...3, readSeqs: ["alice": 3]), of: Self.id))
        #expect(moved.readSeqs == ["alice": 3] && moved.messages.isEmpty)
        #expect(persistChanges(from: before, to: Self.window(history, 1...3, readSeqs: ["alice": 2]), of: Self.id) == nil)
    }

    @Test func acknowledgedEntriesAloneAreAWrite() throws {
        let history = ServerHistory(count: 3)
        let window = Self.window(history, 1...3)
        let changes = try #require(persistChanges(from: window, to: window, of: Self.id, acknowledged: ["c1"]))
        #expect(changes.acknowledged == ["c1"] && changes.messages.isEmpty && changes.segments == [1...3])
    }

    @Test func aReplyWhoseParentChangedIsWrittenAgain() throws {
        let history = ServerHistory(count: 3)
        let before = Self.window(history, 1...3)
        var after = before
        after.messages[0].replyTo = ReplyPreview(seq: 1, sender: "bob", excerpt: "message 1, edited", deleted: false)
        let changes = try #require(persistChanges(from: before, to: after, of: Self.id))
        #expect(changes.messages.map(\.seq) == [3])
    }
}
