import Foundation
import Logging
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackStore

/// Which users have a live socket on this instance, kept in the database
/// (`presence`, `sql/014_mute_and_presence.sql`) so that every instance
/// knows who is online anywhere: the push gateway skips them. Changes are
/// written within a second, in batches; a heartbeat keeps the instance's
/// rows alive, and an instance that stops beating (killed) takes its users
/// offline once its expiry passes (`ttl`): the next beat of any instance
/// removes it and tells the members who watch. A clean stop deletes them
/// at once.
final class PresenceTracker: Sendable {
    let instance = UUID()
    let store: ScrollbackStore
    let logger: Logger
    /// How long the rows of an instance that stopped beating count.
    let ttl: Duration
    let heartbeat: Duration
    static let flushInterval = Duration.milliseconds(500)

    private struct State {
        var sockets: [UserID: Int] = [:]
        var dirty: Set<UserID> = []
        /// Everything must be written again (start, or after the database
        /// was away: an expired instance's rows may have been removed).
        var resync = true
    }

    private let state = NIOLockedValueBox(State())

    init(store: ScrollbackStore, ttl: Duration, heartbeat: Duration, logger: Logger) {
        self.store = store
        self.ttl = ttl
        self.heartbeat = heartbeat
        self.logger = logger
    }

    func connected(_ user: UserID) {
        state.withLockedValue { state in
            state.sockets[user, default: 0] += 1
            state.dirty.insert(user)
        }
    }

    func disconnected(_ user: UserID) {
        state.withLockedValue { state in
            let left = (state.sockets[user] ?? 1) - 1
            state.sockets[user] = left > 0 ? left : nil
            state.dirty.insert(user)
        }
    }

    /// Writes changes until cancelled, then deletes this instance's rows.
    func run() async {
        var beaten = ContinuousClock.now - heartbeat
        while !Task.isCancelled {
            do {
                if ContinuousClock.now - beaten >= heartbeat {
                    // A row created anew: this instance had stalled past its
                    // expiry and another removed its rows.
                    if try await store.presenceBeat(instance, ttl: ttl) {
                        state.withLockedValue { $0.resync = true }
                    }
                    beaten = .now
                }
                try await flush()
            } catch {
                state.withLockedValue { $0.resync = true }
                logger.debug("presence could not be written", metadata: ["error": "\(error)"])
            }
            try? await Task.sleep(for: Self.flushInterval)
        }
        try? await store.presenceEnd(instance)
    }

    private func flush() async throws {
        let (changes, full) = state.withLockedValue { state -> ([(String, Int)], Bool) in
            let users = state.resync ? Array(state.sockets.keys) : Array(state.dirty)
            let full = state.resync
            state.dirty = []
            state.resync = false
            return (users.map { ($0.rawValue, state.sockets[$0] ?? 0) }, full)
        }
        guard full || !changes.isEmpty else { return }
        do {
            // Created anew (and not in full): the rows of the users not in
            // this write had gone with the expired row.
            if try await store.presenceWrite(instance, ttl: ttl, sockets: changes, replacingAll: full), !full {
                state.withLockedValue { $0.resync = true }
            }
        } catch {
            // Written again in full next time.
            state.withLockedValue { $0.resync = true }
            throw error
        }
    }
}
