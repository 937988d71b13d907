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
        guard wouldAdmit(user, in: conversation, at: now) else { return false }
        record(user, in: conversation, at: now)
        return true
    }

    /// Whether a notice at `now` would go out, without starting an interval
    /// (the caller records it once it did go out).
    func wouldAdmit(_ user: UserID, in conversation: UUID, at now: ContinuousClock.Instant) -> Bool {
        guard let previous = last[Key(conversation: conversation, user: user)] else { return true }
        return now - previous >= interval
    }

    /// Starts an interval at `now`: a notice went out.
    mutating func record(_ user: UserID, in conversation: UUID, at now: ContinuousClock.Instant) {
        last[Key(conversation: conversation, user: user)] = now
        if last.count > Self.sweepAbove { last = last.filter { now - $0.value < interval } }
    }
}
