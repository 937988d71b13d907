import NIOConcurrencyHelpers
import ScrollbackModels

/// The buckets of this instance: one per user and action, kept while they
/// matter (a full bucket is the same as none, and is forgotten). Each
/// instance limits on its own, so with N instances behind a balancer a
/// user may reach N times a limit; docs/operations.md says so.
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
