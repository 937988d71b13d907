import NIOConcurrencyHelpers
import ScrollbackModels

/// What a user may do how often: `burst` at once, refilled at `burst` per
/// `period` (a token bucket). `SCROLLBACK_LIMIT_*` variables read
/// `BURST/SECONDS`; a burst of 0 turns the limit off.
public struct RateLimit: Sendable, Equatable, CustomStringConvertible {
    public var burst: Int
    public var period: Duration

    public init(burst: Int, per period: Duration) {
        self.burst = burst
        self.period = period
    }

    public static let off = RateLimit(burst: 0, per: .seconds(1))

    public var isOff: Bool { burst == 0 }

    public var description: String { isOff ? "off" : "\(burst)/\(period.seconds)" }
}

/// The actions that are limited, each with its own bucket per user.
public enum RateLimitedAction: String, Sendable, CaseIterable {
    /// A message sent, over HTTP or the live stream.
    case send
    /// A conversation created.
    case conversation
    /// A member added.
    case member
    /// A typing notice, over HTTP or the live stream.
    case typing
    /// A `subscribe` frame on the live stream.
    case subscribe

    var refusal: String {
        switch self {
        case .send: "You are sending messages too fast"
        case .conversation: "You are creating conversations too fast"
        case .member: "You are adding members too fast"
        case .typing: "You are sending typing notices too fast"
        case .subscribe: "You are subscribing too fast"
        }
    }
}

/// The rates of every limited action (the README's configuration table
/// lists the variables and defaults).
public struct RateLimits: Sendable, Equatable {
    public var send = RateLimit(burst: 30, per: .seconds(10))
    public var conversation = RateLimit(burst: 10, per: .seconds(60))
    public var member = RateLimit(burst: 100, per: .seconds(60))
    public var typing = RateLimit(burst: 10, per: .seconds(10))
    public var subscribe = RateLimit(burst: 50, per: .seconds(10))

    public init() {}

    /// Every limit off (tests and benchmarks that measure something else).
    public static let off: RateLimits = {
        var limits = RateLimits()
        for action in RateLimitedAction.allCases { limits[action] = .off }
        return limits
    }()

    public subscript(action: RateLimitedAction) -> RateLimit {
        get {
            switch action {
            case .send: send
            case .conversation: conversation
            case .member: member
            case .typing: typing
            case .subscribe: subscribe
            }
        }
        set {
            switch action {
            case .send: send = newValue
            case .conversation: conversation = newValue
            case .member: member = newValue
            case .typing: typing = newValue
            case .subscribe: subscribe = newValue
            }
        }
    }
}

/// A token bucket, as a value: `take` at a time says whether a token was
/// there and, when not, how long until one is.
struct TokenBucket: Sendable, Equatable {
    let limit: RateLimit
    private(set) var tokens: Double
    private(set) var updated: Duration

    init(limit: RateLimit, now: Duration) {
        self.limit = limit
        tokens = Double(limit.burst)
        updated = now
    }

    /// Tokens per second.
    private var rate: Double { Double(limit.burst) / (limit.period / .seconds(1)) }

    private mutating func refill(now: Duration) {
        guard now > updated else { return }
        tokens = min(Double(limit.burst), tokens + rate * ((now - updated) / .seconds(1)))
        updated = now
    }

    /// Takes a token: nil when there was one, else the wait until there is.
    mutating func take(now: Duration) -> Duration? {
        refill(now: now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return .milliseconds(Int(((1 - tokens) / rate * 1000).rounded(.up)))
    }

    /// Whether the bucket is full at `now`: forgetting it changes nothing.
    func isFull(now: Duration) -> Bool {
        var copy = self
        copy.refill(now: now)
        return copy.tokens >= Double(limit.burst)
    }
}

/// The buckets of this instance: one per user and action, kept while they
/// matter (a full bucket is the same as none, and is forgotten). Each
/// instance limits on its own, so with N instances behind a balancer a
/// user may reach N times a limit; the README says so.
public final class RateLimiter: Sendable {
    let limits: RateLimits
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant
    private let state = NIOLockedValueBox(State())
    /// Called with each refused action (the metrics count them).
    let onRefusal: @Sendable (RateLimitedAction) -> Void

    private struct Key: Hashable {
        var user: UserID
        var action: RateLimitedAction
    }

    private struct State {
        var buckets: [Key: TokenBucket] = [:]
        var takesSincePrune = 0
    }

    /// Buckets kept before the full ones are swept out.
    static let sweepEvery = 10_000

    public init(limits: RateLimits, onRefusal: @escaping @Sendable (RateLimitedAction) -> Void = { _ in }) {
        self.limits = limits
        self.onRefusal = onRefusal
        origin = clock.now
    }

    /// Takes one `action` for `user`; throws 429 `rate_limited` with the
    /// whole seconds to wait when the user is over the limit.
    func check(_ action: RateLimitedAction, for user: UserID) throws {
        let limit = limits[action]
        guard !limit.isOff else { return }
        let now = clock.now - origin
        let wait = state.withLockedValue { state -> Duration? in
            state.takesSincePrune += 1
            if state.takesSincePrune >= Self.sweepEvery {
                state.takesSincePrune = 0
                state.buckets = state.buckets.filter { !$0.value.isFull(now: now) }
            }
            let key = Key(user: user, action: action)
            var bucket = state.buckets[key] ?? TokenBucket(limit: limit, now: now)
            let wait = bucket.take(now: now)
            state.buckets[key] = bucket
            return wait
        }
        guard let wait else { return }
        onRefusal(action)
        throw APIError.rateLimited(action, retryAfter: Self.wholeSeconds(wait))
    }

    /// At least one second: `Retry-After` counts whole seconds.
    static func wholeSeconds(_ wait: Duration) -> Int {
        max(1, Int((wait / .seconds(1)).rounded(.up)))
    }

    var bucketCount: Int { state.withLockedValue { $0.buckets.count } }
}

extension APIError {
    static func rateLimited(_ action: RateLimitedAction, retryAfter seconds: Int) -> APIError {
        APIError(
            .tooManyRequests, .rateLimited, "\(action.refusal): retry in \(seconds) s.",
            headers: [.retryAfter: "\(seconds)"])
    }

    /// The seconds of `Retry-After`, for the live stream's error frame.
    var retryAfterSeconds: Int? { headers[.retryAfter].flatMap { Int($0) } }
}
