import NIOConcurrencyHelpers
import ScrollbackModels

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
