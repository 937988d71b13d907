import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTimeline
import Testing

/// `FeedReducer` on its own: events in, the state and the effects out, with
/// no server, socket, storage or task.
struct FeedReducerTests {
    static func state(storage: Bool = false) -> FeedState {
        FeedState(
            conversationId: ServerHistory.id, userId: "alice", storedMessageLimit: 1_000,
            hasStorage: storage, settings: TimelineLayoutSettings(), retry: RetryPolicy(),
            subscribeTimeout: .seconds(10), seed: 7)
    }

    /// The effects that are not publishes or answers (the I/O asked for).
    static func work(_ effects: [FeedEffect]) -> [FeedEffect] {
        effects.filter {
            switch $0 {
            case .publish, .answer: false
            default: true
            }
        }
    }

    static func entry(_ clientId: String) -> OutboxEntry {
        OutboxEntry(conversationId: ServerHistory.id, clientId: clientId, sender: "alice", body: "hi \(clientId)")
    }

    /// A feed started at the newest message of `history`, its first page in.
    static func opened(_ history: ServerHistory, storage: Bool = false) -> FeedState {
        var state = state(storage: storage)
        _ = FeedReducer.reduce(&state, .start(.newest))
        if storage { _ = FeedReducer.reduce(&state, .restored(.newest, window: nil, outbox: [], failure: nil)) }
        let page = history.page(after: 0, limit: 50)
        _ = FeedReducer.reduce(&state, .opened(.newest, jump: 1, initial: true, .success(FirstPage(page: page))))
        return state
    }

    @Test func startingAsksForTheFirstPageAndTheReadMarkerAndNothingElse() {
        var state = Self.state()
        let effects = FeedReducer.reduce(&state, .start(.newest))
        #expect(Self.work(effects) == [.open(.newest, jump: 1, initial: true), .readMarker(.newest)])
        #expect(state.visible.connection == .connecting)
        // A second start is nothing.
        #expect(FeedReducer.reduce(&state, .start(.newest)).isEmpty)
    }

    @Test func aFeedWithStorageReadsItFirst() {
        var state = Self.state(storage: true)
        #expect(FeedReducer.reduce(&state, .start(.firstUnread)) == [.restore(.firstUnread)])
        // Nothing held: the server's page at the first unread, which reads the marker itself.
        let effects = FeedReducer.reduce(&state, .restored(.firstUnread, window: nil, outbox: [], failure: nil))
        #expect(Self.work(effects) == [.open(.firstUnread, jump: 1, initial: true)])
    }

    @Test func theFirstPageShowsAndSubscribes() {
        let history = ServerHistory(count: 5)
        let state = Self.opened(history)
        #expect(state.visible.timeline.messages.map(\.seq) == [5, 4, 3, 2, 1])
        var again = Self.state()
        _ = FeedReducer.reduce(&again, .start(.newest))
        let effects = FeedReducer.reduce(
            &again, .opened(.newest, jump: 1, initial: true, .success(FirstPage(page: history.page(after: 0, limit: 50)))))
        #expect(Self.work(effects) == [.subscribe])
        #expect(effects.contains { if case .publish(let s, let u) = $0 { s.timeline.items.count == 5 && u.diff.inserted.count == 5 } else { false } })
    }

    @Test func aRefusedFirstPageEndsTheFeed() {
        var state = Self.state()
        _ = FeedReducer.reduce(&state, .start(.newest))
        let refusal = ScrollbackError.notFound(code: .conversationNotFound, message: "gone")
        let effects = FeedReducer.reduce(&state, .opened(.newest, jump: 1, initial: true, .failure(refusal)))
        #expect(Self.work(effects) == [.end])
        #expect(state.phase == .stopped && state.visible.failure == refusal && state.visible.connection == .ended)
        // Answers that come later change nothing.
        #expect(FeedReducer.reduce(&state, .presenceRead(read: 0, .success([]))).isEmpty)
        #expect(FeedReducer.reduce(&state, .live(.opened)) == [.answer(.steps([.finish(nil)]))])
    }

    @Test func theAnswerOfASupersededJumpIsDropped() {
        let history = ServerHistory(count: 200)
        var state = Self.opened(history)
        #expect(Self.work(FeedReducer.reduce(&state, .jump(.message(20)))) == [.open(.message(20), jump: 2, initial: false)])
        _ = FeedReducer.reduce(&state, .jump(.message(40)))
        let before = state.visible.timeline
        let stale = FirstPage(page: history.page(after: 0, limit: 50), focus: 20)
        #expect(FeedReducer.reduce(&state, .opened(.message(20), jump: 2, initial: false, .success(stale))).isEmpty)
        #expect(state.visible.timeline == before)
        let last = FirstPage(page: history.page(after: 14, limit: 50), focus: 40)
        _ = FeedReducer.reduce(&state, .opened(.message(40), jump: 3, initial: false, .success(last)))
        #expect(state.windows == 1 && state.visible.timeline.seqRange == 15...64)
    }

    @Test func aGapIsFilledOnceAndPageByPage() {
        var history = ServerHistory(count: 5)
        var state = Self.opened(history)
        _ = FeedReducer.reduce(&state, .live(.start))
        _ = FeedReducer.reduce(&state, .live(.opened))
        let subscribed = ServerFrame.subscribed(conversationId: ServerHistory.id, lastSeq: 5, version: history.version)
        _ = FeedReducer.reduce(&state, .live(.received(subscribed)))
        #expect(state.live.phase == .live)
        for _ in 0..<120 { history.append() }
        // Message 125 arrives live: 6...124 are missing, fetched after 5.
        let frame = ServerFrame.message(history.message(125))
        let effects = FeedReducer.reduce(&state, .live(.received(frame)))
        let fills = Self.work(effects).filter { if case .fillPage = $0 { true } else { false } }
        #expect(fills == [.fillPage(fill: 0, after: 5, window: 0)])
        // The first page brings 6...55: the fill goes on after 55, and nothing else asks for it.
        let next = FeedReducer.reduce(&state, .filled(fill: 0, after: 5, window: 0, .success(history.page(after: 5, limit: 50))))
        #expect(Self.work(next) == [.fillPage(fill: 0, after: 55, window: 0)])
        _ = FeedReducer.reduce(&state, .filled(fill: 0, after: 55, window: 0, .success(history.page(after: 55, limit: 50))))
        let last = FeedReducer.reduce(&state, .filled(fill: 0, after: 105, window: 0, .success(history.page(after: 105, limit: 50))))
        #expect(Self.work(last).isEmpty && state.fills.isEmpty)
        #expect(state.visible.timeline.messages.map(\.seq) == Array((1...125).reversed()))
    }

    @Test func aRefusedOldestEntryWaitsWhileTheOnesBehindItGoOut() {
        let history = ServerHistory(count: 3)
        var state = Self.opened(history)
        let sends = ["a", "b", "c"].map { PendingSend(clientId: $0, body: "hi \($0)", sender: "alice") }
        var delivered: [String] = []
        func deliveries(_ effects: [FeedEffect]) {
            for case .deliver(let entry) in effects { delivered.append(entry.clientId) }
        }
        for send in sends { deliveries(FeedReducer.reduce(&state, .send(send))) }
        #expect(delivered == ["a"])
        let refusal = ScrollbackError.invalidInput(code: .invalidMessageBody, message: "too long")
        let refused = FeedReducer.reduce(&state, .sent(OutboxEntry(sends[0], in: ServerHistory.id), .failure(refusal)))
        deliveries(refused)
        #expect(refused.contains(.settle(clientId: "a", .failure(refusal))))
        #expect(delivered == ["a", "b"] && state.visible.outbox.first?.failure != nil)
        // Retried while b is in flight: it waits for b, at its place before c.
        deliveries(FeedReducer.reduce(&state, .retry(clientId: "a")))
        #expect(delivered == ["a", "b"])
        var stored = history
        let b = stored.append()
        deliveries(FeedReducer.reduce(&state, .sent(OutboxEntry(sends[1], in: ServerHistory.id), .success(.init(message: b, replayed: false)))))
        #expect(delivered == ["a", "b", "a"])
        #expect(state.visible.outbox.map(\.clientId) == ["a", "c"])
    }

    @Test func aFeedThatStopsEndsItsEffectsAndAnswersNothingMore() {
        var state = Self.opened(ServerHistory(count: 3))
        let send = PendingSend(clientId: "x", body: "hi", sender: "alice")
        _ = FeedReducer.reduce(&state, .send(send))
        #expect(Self.work(FeedReducer.reduce(&state, .stop)) == [.end])
        #expect(FeedReducer.reduce(&state, .send(PendingSend(clientId: "y", body: "", sender: "alice")))
            == [.settle(clientId: "y", .failure(.cancelled))])
        #expect(FeedReducer.reduce(&state, .live(.opened)) == [.answer(.steps([.finish(nil)]))])
    }

    @Test func aWriteThatFailsIsWrittenWholeWithTheNextChange() throws {
        let history = ServerHistory(count: 3)
        var state = Self.state(storage: true)
        _ = FeedReducer.reduce(&state, .start(.newest))
        _ = FeedReducer.reduce(&state, .restored(.newest, window: nil, outbox: [], failure: nil))
        let effects = FeedReducer.reduce(
            &state, .opened(.newest, jump: 1, initial: true, .success(FirstPage(page: history.page(after: 0, limit: 50)))))
        let save = try #require(effects.compactMap { if case .store(let write) = $0 { write } else { nil } }.first)
        guard case .save(let changes, _) = save else { Issue.record("not a save: \(save)"); return }
        #expect(changes.messages.count == 3)
        // It threw: the storage holds nothing known, and the state says why.
        let failed = FeedReducer.reduce(&state, .stored(save, failure: "disk full"))
        #expect(state.onDisk == nil && state.visible.storageFailure == "disk full")
        #expect(failed.contains { if case .publish(let s, _) = $0 { s.storageFailure == "disk full" } else { false } })
        // The next change (a read marker) writes the whole window again.
        let marker = ReadMarker(conversationId: ServerHistory.id, readSeq: 2, unreadCount: 1)
        let next = FeedReducer.reduce(&state, .markedRead(marker))
        let writes = next.compactMap { if case .store(.save(let changes, _)) = $0 { changes } else { nil } }
        #expect(writes.map(\.messages.count) == [3] && writes.first?.readSeqs == ["alice": 2])
        _ = FeedReducer.reduce(&state, .stored(.save(writes[0], state.onDisk!), failure: nil))
        #expect(state.visible.storageFailure == nil)
    }
}
