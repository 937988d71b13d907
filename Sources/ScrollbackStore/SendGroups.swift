import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackModels

/// Sends committed in groups: the sends that arrive while a commit is in
/// flight are stored together, by one call of `store_sends` in one
/// transaction with one notification (`sql/010_one_send_function.sql`, the
/// function that stores every send), instead of one statement, one commit
/// and one notification each.
///
/// A send goes at once when no group is in flight. Otherwise it waits for
/// the commit in flight, and goes with every send that arrived meanwhile, up
/// to `size` sends, when that commit ends, when `size` sends wait, or when
/// the oldest has waited `wait`: a commit that takes long (a stalled
/// database, a lock held elsewhere) does not hold the next sends for longer
/// than that, they start a group of their own beside it.
///
/// Every guarantee of a send alone holds for each send of a group: dense
/// seqs per conversation, idempotency by `client_id` (the original message
/// returned, a different body refused), membership checked under the
/// conversation's lock, an answer only after the commit. What concerns one
/// send (not a member, a body conflict) fails that send only; should the
/// database refuse the group as a whole for something in one send, every
/// send of it is stored again on its own. Only what fails the commit itself
/// (the database unavailable, a connection lost) fails every send of the
/// group, as it would have failed each of them alone.
///
/// Two sends with the same `client_id` never share a group: the second
/// goes in a later one, and finds the first. A group of one is the plain
/// send statement.
final class SendGroups: Sendable {
    /// At most this many sends in one group.
    let size: Int
    /// How long the oldest waiting send waits for the commit in flight
    /// before it starts a group beside it.
    let wait: Duration
    private let state = NIOLockedValueBox(State())

    init(size: Int, wait: Duration) {
        self.size = min(size, StoreOptions.maximumSendGroupSize)
        self.wait = wait
    }

    private struct Waiting {
        var send: Send
        var arrived: ContinuousClock.Instant
        var continuation: CheckedContinuation<SendOutcome, any Error>
    }

    private struct State {
        var waiting: [Waiting] = []
        var inFlight = 0
        var timerArmed = false
    }

    /// What to start after a change of state: groups to store, and a timer
    /// that fires when the oldest waiting send has waited long enough.
    private struct Start {
        var groups: [[Waiting]] = []
        var timer: Duration?
    }

    /// Sends waiting for a group to start.
    var waitingCount: Int { state.withLockedValue { $0.waiting.count } }

    /// Stores `send` with the group it joins; answers once that group's
    /// commit is known.
    func send(_ send: Send, store: ScrollbackStore) async throws -> SendOutcome {
        try await withCheckedThrowingContinuation { continuation in
            let now = ContinuousClock.now
            let start = state.withLockedValue { state in
                state.waiting.append(Waiting(send: send, arrived: now, continuation: continuation))
                return due(&state, now: now)
            }
            launch(start, store: store)
        }
    }

    /// Takes the groups that may start now, and arms the timer for the rest.
    private func due(_ state: inout State, now: ContinuousClock.Instant) -> Start {
        var start = Start()
        while let first = state.waiting.first,
            state.inFlight == 0 || state.waiting.count >= size || now - first.arrived >= wait
        {
            start.groups.append(take(&state))
            state.inFlight += 1
        }
        if let first = state.waiting.first, !state.timerArmed {
            state.timerArmed = true
            start.timer = max(wait - (now - first.arrived), .zero)
        }
        return start
    }

    /// The oldest waiting sends, at most `size`, never two with the same
    /// `client_id` of one sender in one conversation (the second waits for
    /// the next group, where it finds the first).
    private func take(_ state: inout State) -> [Waiting] {
        var group: [Waiting] = []
        var rest: [Waiting] = []
        var keys = Set<Key>()
        for waiting in state.waiting {
            guard group.count < size else {
                rest.append(waiting)
                continue
            }
            if let key = Key(waiting.send) {
                guard keys.insert(key).inserted else {
                    rest.append(waiting)
                    continue
                }
            }
            group.append(waiting)
        }
        state.waiting = rest
        return group
    }

    private struct Key: Hashable {
        var conversation: UUID
        var sender: UserID
        var clientID: String

        init?(_ send: Send) {
            guard let clientID = send.clientID else { return nil }
            self.conversation = send.conversation
            self.sender = send.sender
            self.clientID = clientID
        }
    }

    private func launch(_ start: Start, store: ScrollbackStore) {
        for group in start.groups {
            Task { await self.run(group, store: store) }
        }
        if let delay = start.timer {
            Task {
                try? await Task.sleep(for: delay)
                let start = self.state.withLockedValue { state in
                    state.timerArmed = false
                    return self.due(&state, now: .now)
                }
                self.launch(start, store: store)
            }
        }
    }

    private func run(_ group: [Waiting], store: ScrollbackStore) async {
        let outcomes = await store.storeGroup(group.map(\.send))
        for (waiting, outcome) in zip(group, outcomes) { waiting.continuation.resume(with: outcome) }
        let start = state.withLockedValue { state in
            state.inFlight -= 1
            return due(&state, now: .now)
        }
        launch(start, store: store)
    }
}

extension ScrollbackStore {
    /// How many sends wait for a group to start (always 0 with grouping off).
    public var sendsWaitingForAGroup: Int { sendGroups?.waitingCount ?? 0 }

    /// Stores the sends of one group: one result per send, in order.
    func storeGroup(_ sends: [Send]) async -> [Result<SendOutcome, any Error>] {
        if sends.count == 1 {
            let outcomes = await Self.outcomes(count: 1) { try await storeSends(sends, as: .send) }
            if outcomes.allSatisfy(Self.answeredByTheDatabase) { metrics.grouped(1) }
            return outcomes
        }
        do {
            let outcomes = try await storeSends(sends, as: .sendGroup, refusable: true)
            metrics.grouped(sends.count)
            return outcomes
        } catch let refused as SendGroupRefused {
            // Rolled back as a whole, for something in one send or in one
            // conversation (a body PostgreSQL cannot store, a row another
            // client held past `lock_timeout`): each send again on its own,
            // side by side, so that only what concerns that one fails it.
            metrics.fellBack()
            logger.warning(
                "a group of sends was refused, storing them one by one", metadata: ["error": "\(refused.error)"])
            return await withTaskGroup(of: (Int, Result<SendOutcome, any Error>).self) { group in
                for (index, send) in sends.enumerated() {
                    group.addTask { (index, await Self.outcomes(count: 1) { try await storeSends([send], as: .send) }[0]) }
                }
                var outcomes = [Result<SendOutcome, any Error>](repeating: .failure(MalformedRow()), count: sends.count)
                for await (index, outcome) in group { outcomes[index] = outcome }
                return outcomes
            }
        } catch {
            // The database was unavailable, or the commit's outcome is
            // unknown: so is every send of the group, as each alone.
            return Array(repeating: .failure(error), count: sends.count)
        }
    }

    /// Whether the database gave this send its answer (as opposed to being
    /// unavailable or losing the commit's outcome).
    private static func answeredByTheDatabase(_ outcome: Result<SendOutcome, any Error>) -> Bool {
        guard case .failure(let error) = outcome else { return true }
        return error as? StoreError != .unavailable && error as? StoreError != .outcomeUnknown
    }

    /// The results of `body`, or its error as the result of each of `count` sends.
    private static func outcomes(
        count: Int, _ body: () async throws -> [Result<SendOutcome, any Error>]
    ) async -> [Result<SendOutcome, any Error>] {
        do {
            return try await body()
        } catch {
            return Array(repeating: .failure(error), count: count)
        }
    }
}

/// PostgreSQL refused a group as a whole and rolled it back, for something
/// its sends would not all meet alone: an error about the data, or a lock
/// or statement timeout. Not when it is unreachable, shutting down, out of
/// resources, read-only, or in a conflict it asks to retry.
struct SendGroupRefused: Error {
    var error: PSQLError

    static func refuses(_ error: PSQLError) -> Bool {
        guard error.code == .server, let state = error.sqlState else { return false }
        if ["40001", "40P01", "25006"].contains(state) { return false }
        return !(state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P"))
    }
}
