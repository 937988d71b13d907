import Foundation
import ScrollbackModels

/// The one rule of typing notices: at most one per user per conversation
/// every `interval` (``APILimits/typingIntervalSeconds``).
///
/// The command layer applies it where a notice comes in (HTTP or the live
/// stream), so a client that reports every keystroke costs the database one
/// notification per interval; live routing applies it where notices fan out,
/// so a user typing through two instances at once is shown once per
/// interval.
struct TypingPace: Sendable {
    private struct Key: Hashable, Sendable {
        var conversation: UUID
        var user: UserID
    }

    let interval: Duration
    private var last: [Key: ContinuousClock.Instant] = [:]

    /// Notices remembered before the ones whose interval is over are swept out.
    static let sweepAbove = 10_000

    init(interval: Duration = .seconds(APILimits.typingIntervalSeconds)) {
        self.interval = interval
    }

    /// Whether a notice of `user` in `conversation` at `now` goes out; one
    /// that does starts a new interval.
    mutating func admits(_ user: UserID, in conversation: UUID, at now: ContinuousClock.Instant) -> Bool {
        let key = Key(conversation: conversation, user: user)
        if let previous = last[key], now - previous < interval { return false }
        last[key] = now
        if last.count > Self.sweepAbove { last = last.filter { now - $0.value < interval } }
        return true
    }

    /// Takes back the notice `admits` let through last: it was refused
    /// further on (not a member, over the rate limit), so it did not go out.
    mutating func forget(_ user: UserID, in conversation: UUID) {
        last[Key(conversation: conversation, user: user)] = nil
    }
}
