import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackStore

/// Whom each user blocked, read once and kept for the `blocked_sender` flag
/// of their pages and frames. A change on any instance notifies `k:` and
/// the user on the change feed (`FeedEvent.blocks`): this instance then
/// forgets that user's list; a lost feed connection forgets every list. A
/// read that a change overtook is not kept.
final class BlockLists: Sendable {
    private let store: ScrollbackStore
    /// At most this many users' lists are kept; past it, all are dropped.
    static let capacity = 100_000

    private struct State {
        var lists: [UserID: Set<String>] = [:]
        /// Bumped by every change: a read that started before one is not kept.
        var generation: UInt64 = 0
    }

    private let state = NIOLockedValueBox(State())

    init(store: ScrollbackStore) {
        self.store = store
    }

    /// The senders `user` blocked.
    func blocked(by user: UserID) async throws -> Set<String> {
        let (cached, generation) = state.withLockedValue { ($0.lists[user], $0.generation) }
        if let cached { return cached }
        let read = Set(try await store.blocks(of: user).map(\.userId))
        state.withLockedValue { state in
            guard state.generation == generation else { return }
            if state.lists.count >= Self.capacity { state.lists.removeAll() }
            state.lists[user] = read
        }
        return read
    }

    /// `messages` as `user` reads them: those of senders they blocked flagged.
    func flag(_ messages: [Message], for user: UserID) async throws -> [Message] {
        let blocked = try await blocked(by: user)
        guard !blocked.isEmpty else { return messages }
        return messages.map { message in
            var flagged = message
            flagged.blockedSender = blocked.contains(message.sender)
            return flagged
        }
    }

    /// `user`'s list changed (on any instance).
    func changed(_ user: UserID) {
        state.withLockedValue { state in
            state.generation &+= 1
            state.lists[user] = nil
        }
    }

    /// The feed's connection was lost: changes may have gone unheard.
    func forgetAll() {
        state.withLockedValue { state in
            state.generation &+= 1
            state.lists.removeAll()
        }
    }
}
