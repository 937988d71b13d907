import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackStore

/// When each user's tokens were last revoked, read once per user and kept
/// current by the change feed (`v:`, `FeedEvent.revoked`): a user's tokens
/// issued before it are refused (`TokenAuthority`) and their sockets closed
/// (`LiveHub`). A lost feed connection forgets what was read; a read that
/// a revocation overtook is not kept.
final class Revocations: Sendable {
    private let store: ScrollbackStore
    /// At most this many users are kept; past it, all are dropped.
    static let capacity = 100_000

    private struct State {
        /// nil: read, never revoked.
        var known: [UserID: Date?] = [:]
        /// Bumped by every change: a read that started before one is not kept.
        var generation: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    init(store: ScrollbackStore) {
        self.store = store
    }

    /// When `user`'s tokens were last revoked; nil when never.
    func revokedBefore(_ user: UserID) async throws -> Date? {
        let (cached, generation) = state.withLockedValue { ($0.known[user], $0.generation) }
        if let cached { return cached }
        let read = try await store.tokensRevoked(of: user)
        return state.withLockedValue { state in
            if state.generation == generation {
                if state.known.count >= Self.capacity { state.known.removeAll() }
                state.known[user] = .some(read)
                return read
            }
            // A revocation came meanwhile: the later of the two.
            switch state.known[user] {
            case .some(let known?): return max(known, read ?? known)
            default: return read
            }
        }
    }

    /// What the feed said: `user`'s tokens issued before `before` are revoked.
    func revoked(_ user: UserID, before: Date) {
        state.withLockedValue { state in
            state.generation &+= 1
            let known = state.known[user].flatMap { $0 }
            state.known[user] = .some(max(known ?? before, before))
        }
    }

    /// The feed's connection was lost: what it would have said is unknown.
    func forgetAll() {
        state.withLockedValue { state in
            state.generation &+= 1
            state.known.removeAll()
        }
    }
}
