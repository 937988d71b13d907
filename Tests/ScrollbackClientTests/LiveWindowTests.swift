import Foundation
import PropertyBased
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTimeline
import Testing

/// A timeline with its live subscription inside it: the timeline alone
/// decides what is missing and fetches it, once; the subscription resumes
/// where the timeline says and fetches nothing.
@Suite struct LiveWindowTests {
    typealias Step = LiveProtocol.Step
    static let id = ServerHistory.id

    /// A timeline and its subscription, fed as `ConversationFeed` feeds them.
    struct Window {
        var timeline = Timeline(conversationId: ServerHistory.id)
        var live = LiveProtocol(
            conversationId: ServerHistory.id, after: nil, retry: RetryPolicy(), subscribeTimeout: .seconds(10), seed: 7,
            completeness: .window)
        var effects: [TimelineEffect] = []

        mutating func handle(_ input: LiveProtocol.Input) -> [Step] {
            let (actions, steps) = LiveWindow.handle(input, timeline: timeline, live: &live)
            for action in actions { effects += timeline.apply(action).effects }
            return steps
        }

        mutating func apply(_ action: TimelineAction) {
            effects += timeline.apply(action).effects
        }

        /// The effects asked for since the last call.
        mutating func takeEffects() -> [TimelineEffect] {
            defer { effects = [] }
            return effects
        }
    }

    static func subscribed(_ history: ServerHistory) -> LiveProtocol.Input {
        .received(.subscribed(conversationId: id, lastSeq: history.lastSeq, version: history.version))
    }

    static func newest(_ history: ServerHistory, limit: Int = 20) -> MessagePage {
        let rows = history.messages.suffix(limit)
        return MessagePage(
            messages: rows.reversed(), hasOlder: history.messages.count > limit, hasNewer: false, lastSeq: history.lastSeq,
            version: history.version)
    }

    /// A window that loaded the newest page of `history` and went live after it.
    static func live(on history: ServerHistory) -> Window {
        var window = Window()
        window.apply(.pageLoaded(Self.newest(history)))
        _ = window.handle(.start)
        #expect(window.handle(.opened) == [.send(.subscribe(conversationId: Self.id, afterSeq: history.lastSeq, presence: true))])
        _ = window.handle(Self.subscribed(history))
        #expect(window.takeEffects().isEmpty)
        return window
    }

    @Test func aGapSeenLiveIsFilledOnceByTheTimelineAndNeverByTheSubscription() {
        var history = ServerHistory(count: 5)
        var window = Self.live(on: history)
        for _ in 6...10 { history.append() }
        // 6 to 8 are lost with a socket: 9 shows the gap.
        let steps = window.handle(.received(.message(history.message(9))))
        #expect(steps.isEmpty, "the subscription fetches nothing")
        #expect(window.takeEffects() == [.fillGap(after: 5, through: 8)])
        _ = window.handle(.received(.message(history.message(10))))
        _ = window.handle(.received(.message(history.message(9))))
        // A reconnect resumes after the newest held; the gap is not asked for again.
        _ = window.handle(.closed(code: 1006, reason: "reset"))
        _ = window.handle(.timerFired(.reconnect(attempt: 1)))
        #expect(window.handle(.opened) == [.send(.subscribe(conversationId: Self.id, afterSeq: 10, presence: true))])
        _ = window.handle(Self.subscribed(history))
        #expect(window.takeEffects().isEmpty, "the fill under way covers it")
        window.apply(.pageLoaded(history.page(after: 5, limit: 20)))
        #expect(window.takeEffects().isEmpty)
        #expect(window.timeline.gaps.isEmpty && window.timeline.messages.map(\.seq) == Array((1...10).reversed()))
    }

    @Test func whatTheResumedSubscriptionReplaysIsNotFetchedAndMissedEditsAre() {
        var history = ServerHistory(count: 5)
        var window = Self.live(on: history)
        _ = window.handle(.failed(reason: "reset"))
        for _ in 6...9 { history.append() }
        let edited = history.edit(2)
        _ = window.handle(.timerFired(.reconnect(attempt: 1)))
        #expect(window.handle(.opened) == [.send(.subscribe(conversationId: Self.id, afterSeq: 5, presence: true))])
        let live = window.handle(Self.subscribed(history))
        #expect(live == [.emit(.connected(lastSeq: 9, version: history.version))])
        // The backlog 6...9 follows on the socket: only the edit is fetched.
        #expect(window.takeEffects() == [.catchUp(sinceVersion: 5)])
        for seq in 6...9 { _ = window.handle(.received(.message(history.message(Int64(seq))))) }
        #expect(window.takeEffects().isEmpty)
        window.apply(.changesApplied(history.changes(since: 5, limit: 1_000)))
        #expect(window.timeline.messages.first { $0.seq == 2 } == edited)
        #expect(window.timeline.messages.map(\.seq) == Array((1...9).reversed()))
    }

    @Test func resyncRequiredIsTheTimelinesToFill() {
        var history = ServerHistory(count: 3)
        var window = Self.live(on: history)
        for _ in 4...60 { history.append() }
        let steps = window.handle(.received(.resyncRequired(conversationId: Self.id, lastSeq: 60)))
        #expect(steps.isEmpty)
        #expect(window.takeEffects().contains(.fillGap(after: 3, through: 60)))
    }

    /// A history delivered with random disconnects, lost and replayed
    /// frames, resyncs, edits and late answers, fed to a timeline through
    /// its subscription with the timeline's fetches answered from the
    /// history: the timeline ends as a fresh fetch of its window, with no
    /// gap, and the subscription never fetches anything itself.
    @Test(arguments: 0..<120)
    func anyInterleavingThroughTheSubscriptionEndsAsAFreshFetch(seed: UInt64) throws {
        var run = SimulatedWindow(seed: seed)
        run.randomly()
        run.settle()
        let range = try #require(run.window.timeline.seqRange, "seed \(seed): nothing loaded")
        let fresh = run.history.messages.filter { range.contains($0.seq) }.sorted { $0.seq > $1.seq }
        #expect(run.window.timeline.messages == fresh, "seed \(seed)")
        #expect(run.window.timeline.gaps.isEmpty, "seed \(seed)")
        #expect(range.upperBound == run.history.lastSeq, "seed \(seed)")
        #expect(run.window.live.phase == .live, "seed \(seed)")
        #expect(run.problems.isEmpty, "seed \(seed): \(run.problems.prefix(3))")
    }
}

/// `SimulatedStream`'s server, feeding a timeline through its subscription.
struct SimulatedWindow: SimulatedClient {
    typealias Step = LiveProtocol.Step
    var rng: Xoshiro
    var server: SimulatedServer
    var window = LiveWindowTests.Window()
    let total: Int
    var fetches: [TimelineEffect] = []
    var reconnect: LiveProtocol.Timer?
    var problems: [String] = []

    var history: ServerHistory { server.history }

    init(seed: UInt64) {
        rng = Xoshiro(seed: (seed, 5, 9, 17))
        for _ in 0..<32 { _ = rng.next() }
        server = SimulatedServer(history: ServerHistory(count: Int.random(in: 0...40, using: &rng)))
        // The window keeps the newer of two versions it holds, and trusts
        // the socket's order for one it does not hold yet.
        server.replaysAnywhere = false
        total = server.history.messages.count + Int.random(in: 10...300, using: &rng)
        // The screen opens: the newest page, then the subscription.
        window.apply(.pageLoaded(LiveWindowTests.newest(server.history)))
        fetches += window.takeEffects()
        feed(.start)
    }

    mutating func feed(_ input: LiveProtocol.Input) {
        for step in window.handle(input) { perform(step) }
        fetches += window.takeEffects()
    }

    mutating func perform(_ step: Step) {
        guard !performOnSocket(step) else { return }
        switch step {
        case .fetchPage, .fetchChanges:
            problems.append("the subscription fetched: \(step)")
        case .startTimer(.reconnect(let attempt), _):
            reconnect = .reconnect(attempt: attempt)
        default:
            break
        }
    }

    /// Answers the oldest fetch the timeline asked for, from the history as it is now.
    mutating func answer() {
        guard !fetches.isEmpty else { return }
        let action: TimelineAction =
            switch fetches.removeFirst() {
            case .loadOlder(let before):
                .pageLoaded(
                    MessagePage(
                        messages: Array(history.messages.filter { $0.seq < before }.suffix(20).reversed()),
                        hasOlder: before > 21, hasNewer: true, lastSeq: history.lastSeq, version: history.version))
            case .loadNewer(let after), .fillGap(let after, _): .pageLoaded(history.page(after: after, limit: 20))
            case .catchUp(let since): .changesApplied(history.changes(since: since, limit: 50))
            }
        window.apply(action)
        fetches += window.takeEffects()
    }

    mutating func randomly() {
        while history.messages.count < total {
            let roll = Int.random(in: 0..<100, using: &rng)
            if serverMove(roll) { continue }
            switch roll {
            case 75..<90 where !fetches.isEmpty:
                answer()
            case 90..<100 where window.live.phase == .waiting && reconnect != nil:
                feed(.timerFired(reconnect!))
                reconnect = nil
            default:
                break
            }
        }
    }

    mutating func settle() {
        for _ in 0..<20_000 {
            if !fetches.isEmpty {
                answer()
            } else if deliverNext() {
                continue
            } else if window.live.phase == .waiting, let timer = reconnect {
                reconnect = nil
                feed(.timerFired(timer))
            } else if window.live.phase == .live, (window.timeline.seqRange?.upperBound ?? 0) < history.lastSeq {
                // Frames were lost for good: the server closes a socket that fell behind.
                drop()
            } else {
                return
            }
        }
        problems.append("did not settle")
    }
}
