import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTimeline
import Testing

/// The scenarios the conversation feed's traces record. Each drives the
/// reducer as a server, a socket and a storage would, and checks what the
/// trace must show before it is written down.
enum FeedScenarios {
    static let all: [String: @Sendable () -> FeedRecorder] = [
        "resume-after-dropped-socket": resumeAfterDroppedSocket,
        "gap-and-fill": gapAndFill,
        "duplicates-and-reordering": duplicatesAndReordering,
        "resync-required": resyncRequired,
        "edit-racing-a-page": editRacingAPage,
        "edit-of-an-older-row-racing-its-page": editOfAnOlderRowRacingItsPage,
        "jump-and-back-to-live-edge": jumpAndBackToLiveEdge,
        "offline-open-then-catch-up": offlineOpenThenCatchUp,
        "outbox-across-restart": outboxAcrossRestart,
        "outbox-refused-oldest": outboxRefusedOldest,
    ]

    static var id: UUID { ServerHistory.id }

    static func resumeAfterDroppedSocket() -> FeedRecorder {
        var feed = FeedRecorder(
            "resume-after-dropped-socket",
            "The socket drops after 10; while away 5 is edited and 11 sent. The next socket resumes after 10, the backlog brings 11, and the catch-up the edit: every message once, none lost.")
        var history = ServerHistory(count: 8)
        feed.openLive(history)
        feed.frame(.message(history.append()))
        feed.frame(.message(history.append()))
        let lost = feed.socket(.closed(code: 1006, reason: "connection reset"))
        #expect(lost.contains(.disconnect))
        #expect(feed.visible.connection == .reconnecting(reason: "connection reset"))
        history.edit(5)
        let eleven = history.append()
        feed.socket(.timerFired(.reconnect(attempt: 1)))
        let subscribe = feed.socket(.opened)
        #expect(subscribe == [.send(.subscribe(conversationId: id, afterSeq: 10, presence: true))])
        feed.frame(.message(eleven))
        let subscribed = feed.send(.live(.received(.subscribed(conversationId: id, lastSeq: 11, version: history.version))))
        let catchUp = subscribed.filter { if case .fetch = $0 { true } else { false } }
        #expect(catchUp == [.fetch(.catchUp(sinceVersion: 10), window: 0)])
        feed.send(.fetched(.catchUp(sinceVersion: 10), window: 0, .success(.changesApplied(history.changes(since: 10, limit: 100)))))
        feed.send(.presenceRead(read: feed.state.presenceReads, .success([])))
        #expect(feed.rows == Array((4...11).reversed()))
        #expect(feed.state.visible.timeline.messages.first { $0.seq == 5 }?.body.contains("edited") == true)
        #expect(feed.visible.connection == .live)
        return feed
    }

    static func gapAndFill() -> FeedRecorder {
        var feed = FeedRecorder(
            "gap-and-fill",
            "Live at 8, message 15 arrives: 9...14 are missing and fetched after 8, page by page, while 16 arrives live; the window ends whole.")
        var history = ServerHistory(count: 8)
        feed.openLive(history)
        for _ in 9...15 { history.append() }
        let gap = feed.send(.live(.received(.message(history.message(15)))))
        #expect(gap.contains(.fillPage(fill: 0, after: 8, window: 0)))
        feed.frame(.message(history.append()))
        let first = feed.send(.filled(fill: 0, after: 8, window: 0, .success(history.page(after: 8, limit: 5))))
        #expect(first.contains(.fillPage(fill: 0, after: 13, window: 0)))
        feed.send(.filled(fill: 0, after: 13, window: 0, .success(history.page(after: 13, limit: 5))))
        #expect(feed.rows == Array((4...16).reversed()) && feed.state.fills.isEmpty)
        return feed
    }

    static func duplicatesAndReordering() -> FeedRecorder {
        var feed = FeedRecorder(
            "duplicates-and-reordering",
            "Message 9 comes twice and 11 before 10: 9 shows once, 11 asks for 10, and 10 arriving live and in the page shows once.")
        var history = ServerHistory(count: 8)
        feed.openLive(history)
        let nine = history.append()
        let ten = history.append()
        let eleven = history.append()
        feed.frame(.message(nine))
        feed.frame(.message(nine))
        feed.frame(.message(eleven))
        feed.frame(.message(ten))
        feed.send(.filled(fill: 0, after: 9, window: 0, .success(history.page(after: 9, limit: 5))))
        #expect(feed.rows == Array((4...11).reversed()))
        return feed
    }

    static func resyncRequired() -> FeedRecorder {
        var feed = FeedRecorder(
            "resync-required",
            "Live at 8, the server says resync_required through 20: 9...20 are paged after 8 until none is missing.")
        var history = ServerHistory(count: 8)
        feed.openLive(history)
        for _ in 9...20 { history.append() }
        let resync = feed.send(.live(.received(.resyncRequired(conversationId: id, lastSeq: 20))))
        #expect(resync.contains(.fillPage(fill: 0, after: 8, window: 0)))
        var after: Int64 = 8
        while !feed.state.fills.isEmpty {
            let page = history.page(after: after, limit: 5)
            feed.send(.filled(fill: 0, after: after, window: 0, .success(page)))
            after = page.messages.map(\.seq).max() ?? after
        }
        #expect(feed.rows == Array((4...20).reversed()))
        return feed
    }

    static func editRacingAPage() -> FeedRecorder {
        var feed = FeedRecorder(
            "edit-racing-a-page",
            "A gap fill's page is read before 11 is edited and arrives after the edit's frame: the row keeps the edit (the newer version wins).")
        var history = ServerHistory(count: 8)
        feed.openLive(history)
        for _ in 9...12 { history.append() }
        feed.frame(.message(history.message(12)))
        let page = history.page(after: 8, limit: 5)
        feed.frame(.message(history.message(12)))
        feed.frame(.messageUpdated(history.edit(12)))
        feed.send(.filled(fill: 0, after: 8, window: 0, .success(page)))
        #expect(feed.rows == Array((4...12).reversed()))
        let twelve = feed.state.visible.timeline.messages.first { $0.seq == 12 }
        #expect(twelve?.version == history.version && twelve?.body.contains("edited") == true)
        return feed
    }

    static func editOfAnOlderRowRacingItsPage() -> FeedRecorder {
        var feed = FeedRecorder(
            "edit-of-an-older-row-racing-its-page",
            "The older page 11...15 is read at version 20, then 13 is edited while it is not held (the frame is let go); the page arrives after the frame: the window is current only as of the page, and the catch-up from 20 brings the edit.")
        var history = ServerHistory(count: 20)
        feed.send(.start(.newest))
        let opened = feed.send(
            .opened(.newest, jump: 1, initial: true, .success(FirstPage(page: history.newest(limit: feed.settings.pageSize)))))
        let window = opened.compactMap { effect -> Int? in
            if case .fetch(.loadOlder(before: 16), let window) = effect { window } else { nil }
        }.first
        #expect(window != nil, "five rows do not fill the screen: the page before 16 is asked for")
        feed.goLive(history)
        let page = history.page(before: 16, limit: 5)
        let readAt = history.version
        feed.frame(.messageUpdated(history.edit(13)))
        let loaded = feed.send(.fetched(.loadOlder(before: 16), window: window ?? 0, .success(.pageLoaded(page))))
        #expect(loaded.contains(.fetch(.catchUp(sinceVersion: readAt), window: window ?? 0)))
        feed.send(
            .fetched(
                .catchUp(sinceVersion: readAt), window: window ?? 0,
                .success(.changesApplied(history.changes(since: readAt, limit: 100)))))
        #expect(feed.rows == Array((11...20).reversed()))
        let thirteen = feed.state.visible.timeline.messages.first { $0.seq == 13 }
        #expect(thirteen?.body.contains("edited") == true && feed.state.visible.timeline.version == history.version)
        return feed
    }

    static func jumpAndBackToLiveEdge() -> FeedRecorder {
        var feed = FeedRecorder(
            "jump-and-back-to-live-edge",
            "From the newest of 20, a jump to 6 shows 4...8 detached from the live edge; 21 arrives meanwhile; newer pages bring the window back to the newest, 21 included, and it follows the live edge again.")
        var history = ServerHistory(count: 20)
        feed.openLive(history)
        feed.send(.jump(.message(6)))
        feed.send(.opened(.message(6), jump: 2, initial: false, .success(FirstPage(page: history.page(around: 6, limit: 5), focus: 6))))
        #expect(!feed.state.visible.timeline.isAttached && feed.rows == Array((4...8).reversed()))
        feed.frame(.message(history.append()))
        var guardrail = 0
        while !feed.state.visible.timeline.isAttached, guardrail < 10 {
            guardrail += 1
            let newest = feed.state.visible.timeline.seqRange?.upperBound ?? 0
            feed.send(.loadNewer)
            feed.send(.fetched(.loadNewer(after: newest), window: 1, .success(.pageLoaded(history.page(after: newest, limit: 5)))))
        }
        #expect(feed.state.visible.timeline.isAttached && feed.rows.first == 21)
        #expect(feed.rows == Array((4...21).reversed()))
        return feed
    }

    static func offlineOpenThenCatchUp() -> FeedRecorder {
        var feed = FeedRecorder(
            "offline-open-then-catch-up",
            "The storage holds 1...5 at version 5: they show at once; the socket resumes after 5, the backlog brings 6 and 7, and the catch-up from version 5 brings the edit of 3 made while away; each change is written.",
            settings: .init(storage: true))
        var history = ServerHistory(count: 5)
        let held = StoredWindow(
            messages: history.messages.reversed(), version: history.version, lastSeq: 5, hasOlder: false,
            readSeqs: ["alice": 4])
        feed.send(.start(.newest))
        let opened = feed.send(.restored(.newest, window: held, outbox: [], failure: nil))
        #expect(feed.rows == [5, 4, 3, 2, 1] && opened.contains(.subscribe))
        #expect(!opened.contains { if case .open = $0 { true } else { false } })
        let six = history.append()
        let seven = history.append()
        history.edit(3)
        feed.socket(.start)
        let subscribe = feed.socket(.opened)
        #expect(subscribe == [.send(.subscribe(conversationId: id, afterSeq: 5, presence: true))])
        feed.frame(.message(six))
        feed.frame(.message(seven))
        let subscribed = feed.send(.live(.received(.subscribed(conversationId: id, lastSeq: 7, version: history.version))))
        #expect(subscribed.contains(.fetch(.catchUp(sinceVersion: 5), window: 0)))
        feed.send(.fetched(.catchUp(sinceVersion: 5), window: 0, .success(.changesApplied(history.changes(since: 5, limit: 100)))))
        #expect(feed.rows == Array((1...7).reversed()) && feed.state.onDisk?.version == history.version)
        #expect(feed.state.onDisk?.messages.first { $0.seq == 3 }?.body.contains("edited") == true)
        return feed
    }

    static func outboxAcrossRestart() -> FeedRecorder {
        var feed = FeedRecorder(
            "outbox-across-restart",
            "After a restart the storage's outbox holds a (waiting), b (refused) and c, whose message 4 the window holds already: c leaves the outbox unsent, a is sent again with its client id, b waits for the user.",
            settings: .init(storage: true))
        var history = ServerHistory(count: 3)
        let c = history.append(from: "alice", clientId: "c")
        let held = StoredWindow(messages: history.messages.reversed(), version: history.version, lastSeq: 4, hasOlder: false)
        func entry(_ clientId: String, failure: String? = nil) -> OutboxEntry {
            OutboxEntry(conversationId: id, clientId: clientId, sender: "alice", body: "sent by alice as \(clientId)", failure: failure)
        }
        feed.send(.start(.newest))
        let restored = feed.send(.restored(.newest, window: held, outbox: [entry("c"), entry("a"), entry("b", failure: "too long")], failure: nil))
        #expect(restored.contains(.store(.remove(["c"]))))
        #expect(feed.delivered == ["a"])
        #expect(feed.visible.outbox.map(\.clientId) == ["a", "b"] && c.clientId == "c")
        let a = history.append(from: "alice", clientId: "a")
        feed.send(.sent(entry("a"), .success(.init(message: a, replayed: true))))
        feed.goLive(history)
        #expect(feed.delivered == ["a"] && feed.visible.outbox.map(\.clientId) == ["b"])
        #expect(feed.rows == [5, 4, 3, 2, 1])
        return feed
    }

    static func outboxRefusedOldest() -> FeedRecorder {
        var feed = FeedRecorder(
            "outbox-refused-oldest",
            "a, b and c are sent in order; a is refused: b and c go out behind it, and a retried while c is in flight goes out after c, at its place among the entries still waiting; nothing is held back.")
        var history = ServerHistory(count: 3)
        feed.openLive(history)
        for clientId in ["a", "b", "c"] {
            feed.send(.send(PendingSend(clientId: clientId, body: "sent by alice as \(clientId)", sender: "alice")))
        }
        func entry(_ clientId: String) -> OutboxEntry {
            OutboxEntry(conversationId: id, clientId: clientId, sender: "alice", body: "sent by alice as \(clientId)")
        }
        let refusal = ScrollbackError.invalidInput(code: .invalidMessageBody, message: "The body is refused.")
        feed.send(.sent(entry("a"), .failure(refusal)))
        feed.send(.sent(entry("b"), .success(.init(message: history.append(from: "alice", clientId: "b"), replayed: false))))
        #expect(feed.delivered == ["a", "b", "c"])
        feed.send(.retry(clientId: "a"))
        feed.send(.sent(entry("c"), .success(.init(message: history.append(from: "alice", clientId: "c"), replayed: false))))
        feed.send(.sent(entry("a"), .success(.init(message: history.append(from: "alice", clientId: "a"), replayed: false))))
        #expect(feed.delivered == ["a", "b", "c", "a"] && feed.visible.outbox.isEmpty)
        #expect(feed.rows == [6, 5, 4, 3, 2, 1])
        return feed
    }
}
