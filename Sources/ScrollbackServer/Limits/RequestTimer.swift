/// The rule that cuts off a client too slow to be anything but a stuck or
/// hostile one, as a value: events in (bytes read, request boundaries, the
/// clock), a verdict out. The slow-client guard feeds it from the
/// connection; tests feed it by hand.
///
/// - A connection waiting for a request, new or kept alive, is closed
///   without an answer after `idleTimeout` (a client's pooled or
///   preconnected connection is just reopened).
/// - A request's head has `headerTimeout` from its first byte.
/// - A body must keep arriving: once `bodyTimeout` has passed since its
///   head, it must have come at `minReceiveRate` bytes a second on average.
/// - While the server works on a request, nothing is asked of the client;
///   a live-stream socket is exempt (it has pings and its own deadlines).
struct RequestTimer: Sendable, Equatable {
    /// The settings of ``ConnectionLimits``, where their defaults are.
    struct Limits: Sendable, Equatable {
        var headerTimeout: Duration
        var bodyTimeout: Duration
        /// Bytes per second.
        var minReceiveRate: Int
        var idleTimeout: Duration
    }

    enum Verdict: Sendable, Equatable {
        case keep
        /// Close without a word: an idle connection, or one whose answer
        /// has already begun.
        case close
        /// Answer 408 and close: the request did not arrive in time.
        case timeOut
    }

    private enum Phase: Equatable {
        /// No byte of the next request yet.
        case waiting(since: Duration)
        /// The head is arriving; it must be whole by `deadline`.
        case head(deadline: Duration)
        /// The body is arriving; `answered` once the server's answer ended
        /// early (a refusal), the rest still to be read.
        case body(since: Duration, bytes: Int, answered: Bool)
        /// The request is whole; the server is answering.
        case answering
        case exempt
    }

    let limits: Limits
    private var phase: Phase

    /// A timer for a connection opened at `now`.
    init(limits: Limits, now: Duration) {
        self.limits = limits
        phase = .waiting(since: now)
    }

    mutating func read(bytes: Int, now: Duration) {
        switch phase {
        case .waiting:
            phase = .head(deadline: now + limits.headerTimeout)
        case .body(let since, let received, let answered):
            phase = .body(since: since, bytes: received + bytes, answered: answered)
        case .head, .answering, .exempt:
            break
        }
    }

    mutating func headReceived(now: Duration) {
        guard phase != .exempt else { return }
        phase = .body(since: now, bytes: 0, answered: false)
    }

    mutating func requestEnded(now: Duration) {
        switch phase {
        case .body(_, _, answered: true): phase = .waiting(since: now)
        case .exempt: break
        default: phase = .answering
        }
    }

    mutating func responseEnded(now: Duration) {
        switch phase {
        case .answering: phase = .waiting(since: now)
        case .body(let since, let bytes, _): phase = .body(since: since, bytes: bytes, answered: true)
        default: break
        }
    }

    /// No request is with the server: none has begun, or the last one has
    /// been answered (the head of the next may be arriving). A graceful
    /// shutdown closes such a connection at once.
    var isIdle: Bool {
        switch phase {
        case .waiting, .head: true
        case .body, .answering, .exempt: false
        }
    }

    /// A live-stream socket: never cut by this rule.
    mutating func exempt() {
        phase = .exempt
    }

    func verdict(now: Duration) -> Verdict {
        switch phase {
        case .waiting(let since):
            return now - since > limits.idleTimeout ? .close : .keep
        case .head(let deadline):
            return now > deadline ? .timeOut : .keep
        case .body(let since, let bytes, let answered):
            let elapsed = now - since
            guard elapsed > limits.bodyTimeout else { return .keep }
            let expected = Double(limits.minReceiveRate) * (elapsed / .seconds(1))
            guard Double(bytes) < expected else { return .keep }
            return answered ? .close : .timeOut
        case .answering, .exempt:
            return .keep
        }
    }
}
