import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels

/// Profiles in memory, answered only while they are provably current, by
/// the rule of `PageCache`: every profile change notifies the change feed
/// (`n:`, in the statement that makes it) and an erasure does too (`e:`);
/// a notification drops the user's entry; a lost listener drops them all
/// and nothing is kept until LISTEN is in place again; a write through this
/// instance drops the entry before it answers; a read from the database
/// that started before an invalidation it cannot see is not kept (a fill
/// takes the clock when it starts, and any invalidation while it runs
/// voids it: profile changes are rare, so a coarse ticket costs little).
///
/// A page names its senders' profiles (`users`): with this cache, a page
/// answered from the page cache reads nothing from the database for them
/// either. Bounded in entries: when full it forgets everything and refills.
final class ProfileCache: Sendable {
    struct Ticket: Sendable {
        var epoch: UInt64
        var clock: UInt64
    }

    private struct State {
        var listening = false
        var epoch: UInt64 = 0
        /// Moves on every invalidation.
        var clock: UInt64 = 0
        var entries: [UserID: UserProfile] = [:]
    }

    let capacity: Int
    private let state = NIOLockedValueBox(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    var isEnabled: Bool { capacity > 0 }

    func handle(_ signal: FeedSignal) {
        state.withLockedValue { state in
            switch signal {
            case .listening, .lost:
                state.listening = signal == .listening
                state.epoch &+= 1
                state.entries.removeAll()
            case .event(.profile(let user)), .event(.erased(let user)):
                state.clock &+= 1
                state.entries[user] = nil
            case .event:
                break
            }
        }
    }

    /// A write through this instance changed `user`'s profile (its
    /// notification may arrive later).
    func invalidate(_ user: UserID) {
        handle(.event(.profile(user: user)))
    }

    /// The profiles held of `users`, and a ticket to keep those read for the others.
    func lookup(_ users: some Sequence<UserID>) -> (found: [UserProfile], missing: [UserID], ticket: Ticket?) {
        state.withLockedValue { state in
            var found: [UserProfile] = []
            var missing: [UserID] = []
            for user in users {
                if let profile = state.entries[user] { found.append(profile) } else { missing.append(user) }
            }
            let ticket = state.listening && isEnabled ? Ticket(epoch: state.epoch, clock: state.clock) : nil
            return (found, missing, ticket)
        }
    }

    /// Keeps `profiles`, read after `ticket` was taken, unless something changed since.
    func keep(_ profiles: [UserProfile], ticket: Ticket?) {
        guard let ticket else { return }
        state.withLockedValue { state in
            guard state.listening, state.epoch == ticket.epoch, state.clock == ticket.clock else { return }
            if state.entries.count + profiles.count > capacity { state.entries.removeAll(keepingCapacity: true) }
            for profile in profiles { state.entries[UserID(rawValue: profile.id)] = profile }
        }
    }

    var count: Int { state.withLockedValue { $0.entries.count } }
}
