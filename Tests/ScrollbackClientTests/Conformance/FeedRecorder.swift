import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTimeline

/// Drives a `FeedReducer` through a scenario and writes down every step as
/// a trace: the event in, the effects and the visible state out. Storage
/// calls are answered as the runner answers them, at once and in order,
/// as having worked.
struct FeedRecorder {
    typealias JSON = TraceJSON

    /// A feed's settings as a trace names them; every trace uses these but
    /// for `storage`.
    struct Settings {
        var userId = "alice"
        var pageSize = 5
        var storedMessageLimit = 1_000
        var storage = false
        var seed: UInt64 = 7
        var retry = RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(100), maxDelay: .seconds(2))
        var subscribeTimeout: Duration = .seconds(10)

        var json: JSON {
            [
                "conversation_id": JSON(ServerHistory.id.uuidString.lowercased()), "user_id": JSON(userId),
                "page_size": JSON(pageSize), "stored_message_limit": JSON(storedMessageLimit), "storage": .bool(storage),
                "seed": JSON(Int64(seed)),
                "retry": [
                    "max_attempts": JSON(retry.maxAttempts),
                    "initial_delay_ms": FeedTrace.milliseconds(retry.initialDelay),
                    "max_delay_ms": FeedTrace.milliseconds(retry.maxDelay),
                ],
                "subscribe_timeout_ms": FeedTrace.milliseconds(subscribeTimeout),
            ]
        }

        init(storage: Bool = false) { self.storage = storage }

        init(json: JSON) {
            userId = json["user_id"].string ?? userId
            pageSize = json["page_size"].int ?? pageSize
            storedMessageLimit = json["stored_message_limit"].int ?? storedMessageLimit
            storage = json["storage"].bool ?? false
            seed = UInt64(json["seed"].int64 ?? 7)
            let retry = json["retry"]
            self.retry = RetryPolicy(
                maxAttempts: retry["max_attempts"].int ?? 3,
                initialDelay: .milliseconds(retry["initial_delay_ms"].int64 ?? 100),
                maxDelay: .milliseconds(retry["max_delay_ms"].int64 ?? 2_000))
            subscribeTimeout = .milliseconds(json["subscribe_timeout_ms"].int64 ?? 10_000)
        }

        func state() -> FeedState {
            FeedState(
                conversationId: ServerHistory.id, userId: userId, storedMessageLimit: storedMessageLimit, hasStorage: storage, settings: TimelineLayoutSettings(),
                retry: retry, subscribeTimeout: subscribeTimeout, seed: seed)
        }
    }

    let name: String
    let summary: String
    let settings: Settings
    private(set) var state: FeedState
    private(set) var steps: [JSON] = []
    /// Every entry delivered, in order.
    private(set) var delivered: [String] = []

    init(_ name: String, _ summary: String, settings: Settings = Settings()) {
        self.name = name
        self.summary = summary
        self.settings = settings
        self.state = settings.state()
    }

    var visible: ConversationFeed.State { state.visible }
    var rows: [Int64] { state.visible.timeline.messages.map(\.seq) }

    /// Hands the feed `event`; its effects (and those of the storage calls
    /// it made, answered next).
    @discardableResult
    mutating func send(_ event: FeedEvent) -> [FeedEffect] {
        let effects = record(event)
        // The runner answers each call in the order it was asked for.
        for case .store(let write) in effects { _ = record(.stored(write, failure: nil)) }
        return effects
    }

    private mutating func record(_ event: FeedEvent) -> [FeedEffect] {
        let effects = FeedReducer.reduce(&state, event)
        for case .deliver(let entry) in effects { delivered.append(entry.clientId) }
        steps.append([
            "event": FeedTrace.event(event), "effects": JSON(effects.map(FeedTrace.effect)),
            "state": FeedTrace.visible(state.visible),
        ])
        return effects
    }

    /// The socket's steps an event answered with.
    static func steps(_ effects: [FeedEffect]) -> [LiveProtocol.Step] {
        for case .answer(.steps(let steps)) in effects { return steps }
        return []
    }

    /// Feeds a socket input; the steps the subscription takes.
    @discardableResult
    mutating func socket(_ input: LiveProtocol.Input) -> [LiveProtocol.Step] {
        Self.steps(send(.live(input)))
    }

    mutating func frame(_ frame: ServerFrame) { socket(.received(frame)) }

    /// Opens at the newest page of `history` and goes live on a socket.
    mutating func openLive(_ history: ServerHistory) {
        send(.start(.newest))
        send(.opened(.newest, jump: 1, initial: true, .success(FirstPage(page: history.newest(limit: settings.pageSize)))))
        goLive(history)
    }

    /// The socket opens and subscribes; the members' presence is read.
    mutating func goLive(_ history: ServerHistory, backlog: [Message] = []) {
        socket(.start)
        socket(.opened)
        for message in backlog { frame(.message(message)) }
        frame(.subscribed(conversationId: ServerHistory.id, lastSeq: history.lastSeq, version: history.version))
        send(.presenceRead(read: state.presenceReads, .success([])))
    }

    var trace: JSON {
        ["name": JSON(name), "summary": JSON(summary), "feed": settings.json, "steps": JSON(steps)]
    }
}

extension ServerHistory {
    /// `GET .../messages` (the newest page).
    func newest(limit: Int) -> MessagePage {
        let page = messages.suffix(limit)
        return MessagePage(
            messages: page.reversed(), hasOlder: Int64(page.count) < lastSeq, hasNewer: false, lastSeq: lastSeq,
            version: version)
    }

    /// `GET .../messages?before=`.
    func page(before: Int64, limit: Int) -> MessagePage {
        let older = messages.filter { $0.seq < before }.suffix(limit)
        return MessagePage(
            messages: older.reversed(), hasOlder: (older.first?.seq ?? 1) > 1, hasNewer: true, lastSeq: lastSeq,
            version: version)
    }

    /// `GET .../messages?around=`: `limit` messages with `seq` in the middle.
    func page(around seq: Int64, limit: Int) -> MessagePage {
        let low = max(1, seq - Int64(limit / 2))
        let high = min(lastSeq, low + Int64(limit) - 1)
        return MessagePage(
            messages: (low...high).reversed().map(message), hasOlder: low > 1, hasNewer: high < lastSeq, lastSeq: lastSeq,
            version: version)
    }
}
