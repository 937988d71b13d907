import Foundation
import ScrollbackModels

/// The lifecycle of one subscription on the live socket, as a value: the
/// rules every subscriber of the socket follows, written once. A
/// conversation's `LiveProtocol` and the inbox's `InboxReducer` each hold
/// one as a child and add only what their topic needs (for a conversation:
/// resuming, gaps and catch-up; for the inbox: the list).
///
/// It asks for the socket, subscribes once it opens and gives it up when it
/// is not subscribed in time; after a loss it waits out a backoff with
/// jitter that grows with each failure and starts over once subscribed (or
/// when the network or the app comes back), gives the socket up while the
/// app is in the background, and ends when the token provider fails or a
/// fresh token is refused twice in a row. An error frame about its own
/// subscription before it is live is a failure like a lost socket, waited
/// out no less than the `retry_after` it carries.
///
/// It speaks `LiveProtocol`'s language (its inputs, steps and timers), so
/// one runner performs the steps of either topic over the shared socket.
/// Inputs that are not about the subscription (the answers of fetches)
/// are ignored; its parent handles them.
struct Subscription: Sendable, Equatable {
    typealias Input = LiveProtocol.Input
    typealias Step = LiveProtocol.Step
    typealias Phase = LiveProtocol.Phase

    /// What is subscribed, and where the next subscription resumes.
    enum Topic: Sendable, Equatable {
        /// A conversation's messages after `afterSeq` (nil: from now on),
        /// with its members' presence.
        case conversation(UUID, afterSeq: Int64?)
        /// The user's inbox after the cursor of its last frame (nil: from now on).
        case inbox(after: String?)

        /// The frame that subscribes it.
        var subscribe: ClientFrame {
            switch self {
            case .conversation(let id, let seq): .subscribe(conversationId: id, afterSeq: seq, presence: true)
            case .inbox(let cursor): .subscribeInbox(after: cursor)
            }
        }

        /// Whether `frame` says the subscription is in place.
        func isConfirmed(by frame: ServerFrame) -> Bool {
            switch (self, frame) {
            case (.conversation(let id, _), .subscribed(let subscribed, _, _)): id == subscribed
            case (.inbox, .inboxSubscribed): true
            default: false
            }
        }

        /// The `ref` of an error about this subscription: a conversation's
        /// id, none for the inbox.
        var errorRef: String? {
            switch self {
            case .conversation(let id, _): id.wire
            case .inbox: nil
            }
        }
    }

    /// What is subscribed; its parent moves where it resumes before the socket opens.
    var topic: Topic
    /// The backoff between failed connections.
    var retry: RetryPolicy
    /// How long a new connection may take to be subscribed.
    var subscribeTimeout: Duration
    private(set) var phase: Phase = .idle
    /// Connections that failed since the last subscription: the backoff grows with it.
    private(set) var failures = 0
    /// Connections whose token was refused before they were subscribed, in a row.
    private var refusals = 0
    /// Numbers the connections, to tell their timers apart.
    private(set) var attempt = 0
    private var jitter: SplitMix64

    /// `seed` makes the backoff's jitter repeatable.
    init(topic: Topic, retry: RetryPolicy, subscribeTimeout: Duration, seed: UInt64) {
        self.topic = topic
        self.retry = retry
        self.subscribeTimeout = subscribeTimeout
        self.jitter = SplitMix64(seed: seed)
    }

    /// The socket is open and the subscription sent, or it is live: the
    /// frames that arrive are the topic's.
    var isSubscribing: Bool { phase == .subscribing || phase == .live }

    /// Takes in what happened to the socket, the timers, the device or the
    /// consumer, and says what to do next.
    mutating func handle(_ input: Input) -> [Step] {
        switch (input, phase) {
        case (_, .finished):
            return []
        case (.start, .idle):
            return connect()
        case (.opened, .connecting):
            phase = .subscribing
            return [.send(topic.subscribe)]
        case (.received(let frame), .subscribing), (.received(let frame), .live):
            return receive(frame)
        case (.closed(let code, let reason), .connecting), (.closed(let code, let reason), .subscribing),
            (.closed(let code, let reason), .live):
            let reason = reason ?? "connection closed"
            if code == StreamCloseCode.unauthorized { return refused(reason) }
            return drop(reason)
        case (.failed(let reason), .connecting), (.failed(let reason), .subscribing), (.failed(let reason), .live):
            return drop(reason)
        case (.tokenUnavailable(let reason), _):
            return finish(.unauthorized(message: "The token provider failed: \(reason)"))
        case (.timerFired(.subscribeDeadline(let number)), .connecting),
            (.timerFired(.subscribeDeadline(let number)), .subscribing):
            guard number == attempt else { return [] }
            return drop("Not subscribed within \(subscribeTimeout).")
        case (.timerFired(.reconnect(let number)), .waiting):
            guard number == attempt else { return [] }
            return connect()
        case (.networkAvailable, .waiting), (.foregrounded, .waiting), (.foregrounded, .suspended):
            failures = 0
            return connect()
        case (.networkAvailable, _), (.foregrounded, _):
            failures = 0
            return []
        case (.backgrounded, .connecting), (.backgrounded, .subscribing), (.backgrounded, .live),
            (.backgrounded, .waiting):
            return suspend()
        case (.cancel, _):
            return finish(nil)
        default:
            // Late news of a socket or timer already given up, or the
            // answer of a fetch (the parent's).
            return []
        }
    }

    /// What a frame on the subscribed socket means for the subscription:
    /// its confirmation starts the backoff over, a refused token is
    /// refused, an error about it before it is live is a failure.
    mutating func receive(_ frame: ServerFrame) -> [Step] {
        if topic.isConfirmed(by: frame) {
            failures = 0
            refusals = 0
            return []
        }
        guard case .error(let code, let message, let ref, let retryAfter) = frame else { return [] }
        if code == .unauthorized { return refused(message) }
        // The subscription itself failed (the database was unavailable, too
        // many subscriptions): subscribe again, with backoff.
        guard phase != .live, ref == topic.errorRef else { return [] }
        return drop(message, atLeast: retryAfter.map { .seconds($0) })
    }

    /// The subscription is live (confirmed, and caught up when its parent
    /// catches up first).
    mutating func goLive() {
        guard phase == .subscribing else { return }
        phase = .live
    }

    // MARK: Connections

    private mutating func connect() -> [Step] {
        attempt += 1
        phase = .connecting
        return [.connect, .startTimer(.subscribeDeadline(attempt: attempt), after: subscribeTimeout)]
    }

    /// Gives up the current connection and waits to open the next, no less
    /// than `atLeast`. Its loss is reported once, when it had been live;
    /// failed attempts to reconnect are not.
    mutating func drop(_ reason: String, atLeast floor: Duration? = nil) -> [Step] {
        var steps: [Step] = [.disconnect]
        if phase == .live { steps.append(.emit(.disconnected(reason: reason))) }
        phase = .waiting
        failures += 1
        let backoff = retry.delay(afterFailure: failures, using: &jitter)
        steps.append(.startTimer(.reconnect(attempt: attempt), after: max(backoff, floor ?? .zero)))
        return steps
    }

    /// Gives up the connection for as long as the app is in the background:
    /// its loss is reported (when it was live) as any other, and no timer
    /// reconnects.
    private mutating func suspend() -> [Step] {
        var steps: [Step] = [.disconnect]
        if phase == .live { steps.append(.emit(.disconnected(reason: "The app is in the background."))) }
        phase = .suspended
        return steps
    }

    /// The server refused the token. On a live socket it expired: a fresh
    /// one from the provider on the next connection, without growing the
    /// backoff. A fresh token refused twice in a row will not do better a
    /// third time: the subscription ends.
    private mutating func refused(_ message: String) -> [Step] {
        if phase != .live {
            refusals += 1
            if refusals >= 2 { return finish(.unauthorized(message: message)) }
        }
        failures = 0
        return drop(message)
    }

    /// Ends the subscription: every input is ignored from now on.
    mutating func finish(_ error: ScrollbackError?) -> [Step] {
        phase = .finished
        return [.finish(error)]
    }
}

/// A small seeded generator (SplitMix64) for the backoff's jitter, so the
/// subscription stays a value that answers the same inputs with the same steps.
struct SplitMix64: RandomNumberGenerator, Sendable, Equatable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
