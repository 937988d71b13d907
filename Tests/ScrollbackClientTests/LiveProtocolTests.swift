import Foundation
import PropertyBased
import ScrollbackClient
import ScrollbackModels
import Testing

/// A conversation's messages as the server holds them, seq 1...n, each with
/// the version of its latest change; it answers the fetches the live
/// protocol asks for.
struct ServerHistory {
    static let id = UUID(uuidString: "0B5E7A1C-5C7E-4F3A-9D1E-2A4B6C8D0E1F")!
    private(set) var messages: [Message] = []
    /// The version of the latest change.
    private(set) var version: Int64 = 0

    init(count: Int = 0) {
        for _ in 0..<count { append() }
    }

    var lastSeq: Int64 { Int64(messages.count) }

    func message(_ seq: Int64) -> Message { messages[Int(seq) - 1] }

    @discardableResult
    mutating func append() -> Message {
        let seq = lastSeq + 1
        version += 1
        let message = Message(
            conversationId: Self.id, seq: seq, sender: "bob", body: "message \(seq)", clientId: nil,
            createdAt: Date(timeIntervalSince1970: 1_795_325_799 + Double(seq)), version: version)
        messages.append(message)
        return message
    }

    /// A message of `sender`'s, stored with its client id.
    @discardableResult
    mutating func append(from sender: String, clientId: String) -> Message {
        append()
        messages[messages.count - 1].sender = sender
        messages[messages.count - 1].clientId = clientId
        messages[messages.count - 1].body = "sent by \(sender) as \(clientId)"
        return messages[messages.count - 1]
    }

    @discardableResult
    mutating func edit(_ seq: Int64) -> Message {
        version += 1
        messages[Int(seq) - 1].body = "message \(seq), edited at version \(version)"
        messages[Int(seq) - 1].version = version
        return message(seq)
    }

    /// `GET .../messages?after=`: the oldest `limit` after the anchor, newest first.
    func page(after: Int64, limit: Int) -> MessagePage {
        let newer = messages.filter { $0.seq > after }.prefix(limit)
        return MessagePage(
            messages: newer.reversed(), hasOlder: after > 0, hasNewer: Int64(newer.count) < lastSeq - after,
            lastSeq: lastSeq, version: version)
    }

    /// `GET .../changes?since_version=`.
    func changes(since: Int64, limit: Int) -> ChangeSet {
        let changed = messages.filter { $0.version > since }.sorted { $0.version < $1.version }
        let batch = changed.prefix(limit)
        return ChangeSet(messages: Array(batch), hasMore: batch.count < changed.count, version: batch.last?.version ?? version)
    }
}

/// The server's side of one socket at a time, over a `ServerHistory`:
/// frames arrive in order unless lost with the socket; the history grows
/// while frames are lost, replayed and resyncs sent.
struct SimulatedServer {
    var history: ServerHistory
    /// Messages the server replays after `after_seq` before it asks for a resync instead.
    let backlogLimit: Int64 = 30
    /// Whether a replayed message may come anywhere after `subscribed`,
    /// ahead of frames sent before it (the protocol drops what it has
    /// delivered), or only after them, as the server sends one (a shared
    /// subscription resumed from before it: the message as it is now, after
    /// every frame sent earlier).
    var replaysAnywhere = true

    enum Socket: Equatable { case none, connecting, open, subscribed }
    var socket = Socket.none
    var inFlight: [ServerFrame] = []

    mutating func connect() {
        socket = .connecting
        inFlight = []
    }

    mutating func disconnect() {
        socket = .none
        inFlight = []
    }

    /// `subscribed` and the backlog after `after` (or a resync); the
    /// problem, when the socket is not open.
    mutating func subscribe(after: Int64?) -> String? {
        guard socket == .open else { return "subscribe on a socket that is \(socket)" }
        socket = .subscribed
        inFlight.append(.subscribed(conversationId: ServerHistory.id, lastSeq: history.lastSeq, version: history.version))
        if let after {
            if history.lastSeq - after > backlogLimit {
                inFlight.append(.resyncRequired(conversationId: ServerHistory.id, lastSeq: history.lastSeq))
            } else {
                inFlight += history.messages.filter { $0.seq > after }.map { .message($0) }
            }
        }
        return nil
    }

    /// A change of the server for `roll` (0 to 27; false for another roll):
    /// a message, sent live, lost (the next one shows the gap) or announced
    /// by a resync; an edit; a replay of any message anywhere after `subscribed`.
    mutating func change(_ roll: Int, using rng: inout Xoshiro) -> Bool {
        switch roll {
        case 0..<20:
            let message = history.append()
            guard socket == .subscribed else { return true }
            switch Int.random(in: 0..<20, using: &rng) {
            case 0: break
            case 1: inFlight.append(.resyncRequired(conversationId: ServerHistory.id, lastSeq: history.lastSeq))
            default: inFlight.append(.message(message))
            }
        case 20..<23 where !history.messages.isEmpty:
            let edited = history.edit(Int64.random(in: 1...history.lastSeq, using: &rng))
            if socket == .subscribed { inFlight.append(.messageUpdated(edited)) }
        case 23..<27 where socket == .subscribed && !history.messages.isEmpty:
            let seq = Int64.random(in: 1...history.lastSeq, using: &rng)
            let first = inFlight.firstIndex { if case .subscribed = $0 { true } else { false } }.map { $0 + 1 } ?? 0
            let at = Int.random(in: first...inFlight.count, using: &rng)
            inFlight.insert(.message(history.message(seq)), at: replaysAnywhere ? at : inFlight.count)
        default:
            return false
        }
        return true
    }
}

/// A client of `SimulatedServer`, fed the inputs of its live protocol.
protocol SimulatedClient {
    var server: SimulatedServer { get set }
    var rng: Xoshiro { get set }
    var problems: [String] { get set }
    mutating func feed(_ input: LiveProtocol.Input)
}

extension SimulatedClient {
    /// What a step of the protocol does to the server's socket; false for
    /// a step that is not about the socket.
    mutating func performOnSocket(_ step: LiveProtocol.Step) -> Bool {
        switch step {
        case .connect:
            server.connect()
        case .send(.subscribe(_, let after, _)):
            if let problem = server.subscribe(after: after) { problems.append(problem) }
        case .send(let frame):
            problems.append("sent \(frame)")
        case .disconnect:
            server.disconnect()
        case .finish(let error):
            problems.append("finished: \(String(describing: error))")
        default:
            return false
        }
        return true
    }

    /// The socket lost: refused while connecting, closed or reset once open.
    mutating func drop() {
        switch server.socket {
        case .none: return
        case .connecting: feed(.failed(reason: "connection refused"))
        case .open, .subscribed:
            feed(Bool.random(using: &rng) ? .closed(code: 4408, reason: "too slow") : .failed(reason: "connection reset"))
        }
        server.disconnect()
    }

    /// For `roll` (0 to 74): a change of the server's history, a frame
    /// delivered, the socket lost or opened; false when it does nothing.
    mutating func serverMove(_ roll: Int) -> Bool {
        if roll < 27 {
            var random = rng
            defer { rng = random }
            return server.change(roll, using: &random)
        }
        switch roll {
        case 27..<60 where !server.inFlight.isEmpty:
            feed(.received(server.inFlight.removeFirst()))
        case 60..<63:
            drop()
        case 63..<75 where server.socket == .connecting:
            server.socket = .open
            feed(.opened)
        default:
            return false
        }
        return true
    }

    /// Without faults: the next frame in flight, or the socket asked for
    /// opens; false when there is neither.
    mutating func deliverNext() -> Bool {
        if !server.inFlight.isEmpty {
            feed(.received(server.inFlight.removeFirst()))
        } else if server.socket == .connecting {
            server.socket = .open
            feed(.opened)
        } else {
            return false
        }
        return true
    }
}

@Suite struct LiveProtocolTests {
    typealias Step = LiveProtocol.Step
    static let id = ServerHistory.id
    static let retry = RetryPolicy(initialDelay: .milliseconds(100), maxDelay: .milliseconds(800))

    static func live(after seq: Int64?) -> LiveProtocol {
        LiveProtocol(conversationId: id, after: seq, retry: retry, subscribeTimeout: .seconds(10), seed: 42)
    }

    static func subscribed(_ seq: Int64, version: Int64) -> LiveProtocol.Input {
        .received(.subscribed(conversationId: id, lastSeq: seq, version: version))
    }

    /// Starts `live` and makes its socket live at `history`'s last seq and version.
    static func connect(_ live: inout LiveProtocol, to history: ServerHistory) {
        _ = live.handle(.start)
        _ = live.handle(.opened)
        _ = live.handle(subscribed(history.lastSeq, version: history.version))
    }

    static func messages(_ steps: [Step]) -> [Int64] {
        steps.compactMap { if case .emit(.message(let message)) = $0 { message.seq } else { nil } }
    }

    /// The wait of a reconnect timer among `steps`.
    static func backoff(_ steps: [Step]) -> Duration? {
        steps.lazy.compactMap { if case .startTimer(.reconnect, let wait) = $0 { wait } else { nil } }.first
    }

    // MARK: Rules

    @Test func theFirstSocketSubscribesFromTheSeqAskedForAndConnectedCarriesTheVersion() {
        var live = Self.live(after: 7)
        #expect(live.handle(.start) == [.connect, .startTimer(.subscribeDeadline(attempt: 1), after: .seconds(10))])
        #expect(live.handle(.opened) == [.send(.subscribe(conversationId: Self.id, afterSeq: 7, presence: true))])
        #expect(live.handle(Self.subscribed(9, version: 12)) == [.emit(.connected(lastSeq: 9, version: 12))])
        #expect(live.phase == .live && live.lastSeq == 7)

        var fromNow = Self.live(after: nil)
        _ = fromNow.handle(.start)
        #expect(fromNow.handle(.opened) == [.send(.subscribe(conversationId: Self.id, afterSeq: nil, presence: true))])
        #expect(fromNow.handle(Self.subscribed(9, version: 12)) == [.emit(.connected(lastSeq: 9, version: 12))])
        #expect(fromNow.lastSeq == 9, "from now on: what the conversation had when subscribed counts as delivered")
    }

    @Test func aResumeAfterADropAsksForTheLastDeliveredSeq() throws {
        var history = ServerHistory()
        var live = Self.live(after: 0)
        Self.connect(&live, to: history)
        for _ in 1...3 { _ = live.handle(.received(.message(history.append()))) }
        let dropped = live.handle(.closed(code: 1006, reason: "connection reset"))
        #expect(dropped.prefix(2) == [.disconnect, .emit(.disconnected(reason: "connection reset"))])
        #expect(Self.backoff(dropped) != nil)
        #expect(live.phase == .waiting)

        #expect(live.handle(.timerFired(.reconnect(attempt: 1))).first == .connect)
        // A failed attempt to reconnect is not reported again.
        let refused = live.handle(.failed(reason: "connection refused"))
        #expect(!refused.contains { if case .emit = $0 { true } else { false } })
        _ = live.handle(.timerFired(.reconnect(attempt: 2)))
        #expect(live.handle(.opened) == [.send(.subscribe(conversationId: Self.id, afterSeq: 3, presence: true))])
        history.append()
        // The changes since the last subscription hold nothing not seen live.
        #expect(live.handle(Self.subscribed(4, version: 4)) == [.fetchChanges(since: 0, limit: APILimits.changesLimit.upperBound)])
        #expect(live.handle(.changesReceived(history.changes(since: 0, limit: 1_000))) == [.emit(.connected(lastSeq: 4, version: 4))])
        #expect(Self.messages(live.handle(.received(.message(history.message(4))))) == [4])
    }

    @Test func aDuplicateIsDroppedAndAGapIsPagedBeforeTheMessageThatShowedIt() {
        var history = ServerHistory(count: 2)
        var live = Self.live(after: 2)
        Self.connect(&live, to: history)
        for _ in 3...7 { history.append() }
        #expect(live.handle(.received(.message(history.message(2)))).isEmpty)
        #expect(live.handle(.received(.message(history.message(1)))).isEmpty)
        #expect(live.handle(.received(.message(history.message(6)))) == [.fetchPage(after: 2, limit: APILimits.pageLimit.upperBound)])
        // What arrives while the page is on its way waits for it.
        #expect(live.handle(.received(.message(history.message(7)))).isEmpty)
        #expect(live.handle(.received(.message(history.message(6)))).isEmpty)
        let filled = live.handle(.pageReceived(history.page(after: 2, limit: 200)))
        #expect(filled == (3...7).map { Step.emit(.message(history.message($0))) })
        #expect(live.lastSeq == 7)
    }

    @Test func resyncRequiredPagesThroughItsLastSeqOverHTTP() {
        var history = ServerHistory(count: 10)
        var live = Self.live(after: 10)
        Self.connect(&live, to: history)
        for _ in 11...450 { history.append() }
        let limit = APILimits.pageLimit.upperBound
        #expect(live.handle(.received(.resyncRequired(conversationId: Self.id, lastSeq: 450))) == [.fetchPage(after: 10, limit: limit)])
        var delivered: [Int64] = []
        var after: Int64 = 10
        while true {
            let steps = live.handle(.pageReceived(history.page(after: after, limit: limit)))
            delivered += Self.messages(steps)
            guard case .fetchPage(let next, _) = steps.last else { break }
            after = next
        }
        #expect(delivered == Array(11...450))
        // Still live after it.
        #expect(Self.messages(live.handle(.received(.message(history.append())))) == [451])

        // A page with nothing newer ends the fill.
        #expect(live.handle(.received(.resyncRequired(conversationId: Self.id, lastSeq: 460))).count == 1)
        #expect(live.handle(.pageReceived(history.page(after: 451, limit: limit))).isEmpty)
        #expect(live.handle(.received(.typing(conversationId: Self.id, userId: "bob"))) == [.emit(.typing(userId: "bob"))])
    }

    @Test func afterAReconnectTheEditsMissedWhileAwayArriveBeforeConnected() {
        var history = ServerHistory(count: 3)
        var live = Self.live(after: 3)
        Self.connect(&live, to: history)
        _ = live.handle(.closed(code: nil, reason: nil))
        let edited = history.edit(2)
        let added = history.append()
        _ = live.handle(.timerFired(.reconnect(attempt: 1)))
        _ = live.handle(.opened)
        #expect(live.handle(Self.subscribed(4, version: 5)) == [.fetchChanges(since: 3, limit: APILimits.changesLimit.upperBound)])
        #expect(live.handle(.received(.message(added))).isEmpty, "the backlog waits for the catch-up")
        let caughtUp = live.handle(.changesReceived(history.changes(since: 3, limit: 1_000)))
        // The new message is not an edit of one held: it comes as a message.
        #expect(caughtUp == [.emit(.updated(edited)), .emit(.connected(lastSeq: 4, version: 5)), .emit(.message(added))])
    }

    @Test func memberRemovedEndsTheStreamWithoutAnError() {
        var live = Self.live(after: 0)
        Self.connect(&live, to: ServerHistory())
        #expect(live.handle(.received(.memberRemoved(conversationId: Self.id))) == [.emit(.memberRemoved), .finish(nil)])
        #expect(live.phase == .finished)
        #expect(live.handle(.closed(code: 1000, reason: nil)).isEmpty)
        #expect(live.handle(.timerFired(.subscribeDeadline(attempt: 1))).isEmpty)
    }

    @Test func aConversationThatIsNotVisibleEndsTheStreamWithNotFound() {
        var live = Self.live(after: 0)
        _ = live.handle(.start)
        _ = live.handle(.opened)
        let message = "No conversation with this id is visible to you."
        #expect(
            live.handle(.received(.error(code: .conversationNotFound, message: message, ref: Self.id.uuidString.lowercased())))
                == [.finish(.notFound(code: .conversationNotFound, message: message))])
        var paging = Self.live(after: 0)
        Self.connect(&paging, to: ServerHistory())
        _ = paging.handle(.received(.resyncRequired(conversationId: Self.id, lastSeq: 5)))
        let gone = ScrollbackError.notFound(code: .conversationNotFound, message: message)
        #expect(paging.handle(.fetchFailed(gone)) == [.finish(gone)])
    }

    @Test func aTokenRefusedTwiceInARowEndsTheStream() {
        var live = Self.live(after: 0)
        _ = live.handle(.start)
        _ = live.handle(.opened)
        let first = live.handle(.received(.error(code: .unauthorized, message: "The token is not valid.", ref: nil)))
        #expect(first.first == .disconnect && Self.backoff(first) != nil)
        #expect(live.handle(.closed(code: 4401, reason: "not authenticated")).isEmpty, "the socket was given up already")
        _ = live.handle(.timerFired(.reconnect(attempt: 1)))
        _ = live.handle(.opened)
        #expect(live.handle(.closed(code: 4401, reason: "not authenticated")) == [.finish(.unauthorized(message: "not authenticated"))])
    }

    @Test func aTokenThatExpiresOnALiveSocketIsReplacedWithoutGivingUp() throws {
        var live = Self.live(after: 0)
        Self.connect(&live, to: ServerHistory())
        let expired = live.handle(.received(.error(code: .unauthorized, message: "The token expired: authenticate again.", ref: nil)))
        #expect(expired.prefix(2) == [.disconnect, .emit(.disconnected(reason: "The token expired: authenticate again."))])
        #expect(try #require(Self.backoff(expired)) <= Self.retry.initialDelay)
        _ = live.handle(.timerFired(.reconnect(attempt: 1)))
        _ = live.handle(.opened)
        // One refusal of the next token is not yet a reason to stop.
        #expect(live.handle(.closed(code: 4401, reason: "token expired")).first == .disconnect)
        _ = live.handle(.timerFired(.reconnect(attempt: 2)))
        _ = live.handle(.opened)
        #expect(live.handle(Self.subscribed(0, version: 0)) == [.emit(.connected(lastSeq: 0, version: 0))])
    }

    @Test func aFailingTokenProviderEndsTheStream() {
        var live = Self.live(after: 0)
        _ = live.handle(.start)
        #expect(
            live.handle(.tokenUnavailable(reason: "keychain locked"))
                == [.finish(.unauthorized(message: "The token provider failed: keychain locked"))])
    }

    @Test func theBackoffGrowsWithEachFailureAndStartsOverWhenSubscribed() throws {
        var live = Self.live(after: 0)
        _ = live.handle(.start)
        for failure in 1...6 {
            let wait = try #require(Self.backoff(live.handle(.failed(reason: "connection refused"))))
            let ceiling = min(Self.retry.initialDelay * (1 << (failure - 1)), Self.retry.maxDelay)
            #expect(wait >= ceiling / 2 && wait <= ceiling, "failure \(failure): \(wait)")
            #expect(live.failures == failure)
            _ = live.handle(.timerFired(.reconnect(attempt: failure)))
        }
        _ = live.handle(.opened)
        _ = live.handle(Self.subscribed(0, version: 0))
        #expect(live.failures == 0)
        let wait = try #require(Self.backoff(live.handle(.closed(code: 1001, reason: "going away"))))
        #expect(wait <= Self.retry.initialDelay)
    }

    @Test func aSocketNotSubscribedInTimeIsGivenUpAndTimersOfEarlierSocketsAreIgnored() {
        var live = Self.live(after: 0)
        _ = live.handle(.start)
        _ = live.handle(.opened)
        let late = live.handle(.timerFired(.subscribeDeadline(attempt: 1)))
        #expect(late.first == .disconnect && Self.backoff(late) != nil)
        #expect(!late.contains { if case .emit = $0 { true } else { false } }, "never subscribed: no loss to report")
        #expect(live.handle(.timerFired(.reconnect(attempt: 1))).first == .connect)
        #expect(live.handle(.timerFired(.subscribeDeadline(attempt: 1))).isEmpty)
        #expect(live.handle(.timerFired(.reconnect(attempt: 1))).isEmpty)
        _ = live.handle(.opened)
        _ = live.handle(Self.subscribed(0, version: 0))
        #expect(live.handle(.timerFired(.subscribeDeadline(attempt: 2))).isEmpty, "subscribed in time")
    }

    @Test func aSubscriptionThatFailsOnTheServerIsTriedAgain() {
        var live = Self.live(after: 0)
        _ = live.handle(.start)
        _ = live.handle(.opened)
        let ref = Self.id.uuidString.lowercased()
        let failed = live.handle(.received(.error(code: .serviceUnavailable, message: "Try again.", ref: ref)))
        #expect(failed.first == .disconnect && Self.backoff(failed) != nil)
        // On a live socket an error about something else (a send, say) changes nothing.
        _ = live.handle(.timerFired(.reconnect(attempt: 1)))
        _ = live.handle(.opened)
        _ = live.handle(Self.subscribed(0, version: 0))
        #expect(live.handle(.received(.error(code: .rateLimited, message: "Slow down.", ref: "c1"))).isEmpty)
    }

    @Test func aPageThatCannotBeFetchedGivesUpTheSocketAndTheNextResumesBeforeTheGap() {
        var history = ServerHistory(count: 2)
        var live = Self.live(after: 2)
        Self.connect(&live, to: history)
        for _ in 3...5 { history.append() }
        _ = live.handle(.received(.message(history.message(5))))
        let failed = live.handle(.fetchFailed(.transport(message: "GET: connection reset")))
        #expect(failed.prefix(2) == [.disconnect, .emit(.disconnected(reason: "GET: connection reset"))])
        _ = live.handle(.timerFired(.reconnect(attempt: 1)))
        #expect(live.handle(.opened) == [.send(.subscribe(conversationId: Self.id, afterSeq: 2, presence: true))])
    }

    @Test func cancellingEndsTheStream() {
        var live = Self.live(after: 0)
        _ = live.handle(.start)
        #expect(live.handle(.cancel) == [.finish(nil)])
        #expect(live.handle(.opened).isEmpty)
    }

    // MARK: Any sequence of drops, replays and resyncs

    /// A server history of random length delivered with random disconnects,
    /// lost and replayed frames, resyncs, edits and failed fetches, fed
    /// through the protocol with its fetches answered from the history: it
    /// delivers every message exactly once, in seq order, with no gap.
    @Test(arguments: 0..<200)
    func everyMessageArrivesOnceInOrderWhateverTheDropsReplaysAndResyncs(seed: UInt64) {
        var run = SimulatedStream(seed: seed)
        run.randomly()
        run.settle()
        let first = run.startSeq + 1
        #expect(run.delivered == Array(first..<(run.history.lastSeq + 1)), "seed \(seed)")
        #expect(run.live.phase == .live, "seed \(seed)")
        #expect(run.problems.isEmpty, "seed \(seed): \(run.problems.prefix(3))")
    }
}

/// The protocol with a simulated server: one socket at a time whose frames
/// arrive in order unless lost with it, HTTP answered from the history.
struct SimulatedStream: SimulatedClient {
    typealias Step = LiveProtocol.Step
    var rng: Xoshiro
    var server: SimulatedServer
    var live: LiveProtocol
    let total: Int

    var fetch: Step?
    var timers: [LiveProtocol.Timer] = []
    /// The reconnect timer started last.
    var reconnect: LiveProtocol.Timer?

    var delivered: [Int64] = []
    var startSeq: Int64
    var problems: [String] = []
    /// The `subscribed` frame last handled, which `connected` must repeat.
    var subscribedFrame: (seq: Int64, version: Int64)?

    var history: ServerHistory { server.history }

    init(seed: UInt64) {
        rng = Xoshiro(seed: (seed, 3, 5, 7))
        // The first outputs of a state this sparse are small: skip them.
        for _ in 0..<32 { _ = rng.next() }
        server = SimulatedServer(history: ServerHistory(count: Int.random(in: 0...40, using: &rng)))
        total = server.history.messages.count + Int.random(in: 10...400, using: &rng)
        let after: Int64? = Bool.random(using: &rng) ? nil : Int64.random(in: 0...server.history.lastSeq, using: &rng)
        startSeq = after ?? -1
        live = LiveProtocol(
            conversationId: ServerHistory.id, after: after, retry: RetryPolicy(), subscribeTimeout: .seconds(10),
            seed: seed)
        feed(.start)
    }

    mutating func feed(_ input: LiveProtocol.Input) {
        if case .received(.subscribed(_, let seq, let version)) = input { subscribedFrame = (seq, version) }
        for step in live.handle(input) { perform(step) }
    }

    mutating func perform(_ step: Step) {
        guard !performOnSocket(step) else { return }
        switch step {
        case .fetchPage, .fetchChanges:
            if fetch != nil { problems.append("a second fetch while one is outstanding") }
            fetch = step
        case .emit(let event):
            record(event)
        case .startTimer(let timer, _):
            timers.append(timer)
            if case .reconnect = timer { reconnect = timer }
        default:
            break
        }
    }

    mutating func record(_ event: LiveEvent) {
        switch event {
        case .message(let message):
            if startSeq < 0 { problems.append("message \(message.seq) before the first subscription") }
            let expected = (delivered.last ?? startSeq) + 1
            if message.seq != expected { problems.append("message \(message.seq) where \(expected) was due") }
            delivered.append(message.seq)
        case .updated(let message):
            if message.seq > delivered.last ?? startSeq { problems.append("an update of \(message.seq), not delivered yet") }
        case .connected(let seq, let version):
            if startSeq < 0 { startSeq = seq }
            if subscribedFrame?.seq != seq || subscribedFrame?.version != version {
                problems.append("connected(\(seq), \(version)) after subscribed \(String(describing: subscribedFrame))")
            }
        case .disconnected, .read, .typing, .presence, .memberUpdated, .memberRemoved, .conversationUpdated:
            break
        }
    }

    mutating func answerFetch(failing: Bool = false) {
        guard let step = fetch else { return }
        fetch = nil
        if failing { return feed(.fetchFailed(.transport(message: "GET: connection reset"))) }
        switch step {
        case .fetchPage(let after, let limit): feed(.pageReceived(history.page(after: after, limit: limit)))
        case .fetchChanges(let since, let limit): feed(.changesReceived(history.changes(since: since, limit: limit)))
        default: break
        }
    }

    /// The server's history grows while the socket is cut, frames are lost,
    /// replayed and reordered, and the protocol's fetches and timers are
    /// answered in between.
    mutating func randomly() {
        while history.messages.count < total {
            let roll = Int.random(in: 0..<100, using: &rng)
            if serverMove(roll) { continue }
            switch roll {
            case 75..<88 where fetch != nil:
                answerFetch(failing: Int.random(in: 0..<10, using: &rng) == 0)
            case 88..<94 where live.phase == .waiting && reconnect != nil:
                feed(.timerFired(reconnect!))
                reconnect = nil
            case 94..<100 where !timers.isEmpty:
                // Any timer: a deadline that cuts a slow subscription, or one long superseded.
                feed(.timerFired(timers.remove(at: Int.random(in: 0..<timers.count, using: &rng))))
            default:
                break
            }
        }
    }

    /// No more faults: everything in flight arrives, and what the protocol
    /// asks for is done, until it is live with nothing outstanding.
    mutating func settle() {
        for _ in 0..<20_000 {
            if fetch != nil {
                answerFetch()
            } else if deliverNext() {
                continue
            } else if live.phase == .waiting, let timer = reconnect {
                reconnect = nil
                feed(.timerFired(timer))
            } else if live.phase == .live, (delivered.last ?? startSeq) < history.lastSeq {
                // Frames were lost for good: the server closes a socket that
                // fell behind, and the client resumes.
                drop()
            } else {
                return
            }
        }
        problems.append("did not settle")
    }
}
