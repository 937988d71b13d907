import Foundation
import NIOConcurrencyHelpers

/// What the device and the app tell the kit: the network came back, the app
/// went to the background or came back. An app calls these from its own
/// observers, or lets `ScrollbackClient.observeSystem()` (Apple platforms:
/// a network path monitor and the app's notifications) call them.
extension ScrollbackClient {
    /// The device's network is back: the socket, if it waits out its
    /// backoff, reconnects at once with the backoff reset, and every call
    /// and send waiting to be tried again (a feed's outbox included) is
    /// tried now.
    public func networkAvailable() {
        wakeUps.wake()
        Task { await connection.tell(.networkAvailable) }
    }

    /// The app went to the background: the socket closes and nothing
    /// reconnects until `foregrounded()` (iOS would end it soon anyway;
    /// push notifications take over). Feeds keep their state and their
    /// outboxes; a send under way finishes.
    public func backgrounded() {
        Task { await connection.tell(.backgrounded) }
    }

    /// The app is in the foreground again: the socket reconnects at once
    /// (every feed resumes and catches up), and waiting calls are tried now.
    public func foregrounded() {
        wakeUps.wake()
        Task { await connection.tell(.foregrounded) }
    }

    /// Waits `delay` before trying a call again, or less when the network
    /// comes back (`networkAvailable()`, `foregrounded()`) meanwhile.
    /// Throws when the task is cancelled.
    func waitToRetry(_ delay: Duration) async throws {
        try await wakeUps.sleep(for: delay)
    }
}

/// The waits between retries of a client (and its copies), ended early all
/// at once when the network comes back.
final class WakeUps: Sendable {
    private let waiting = NIOLockedValueBox<[Int: CheckedContinuation<Void, Never>]>([:])
    private let next = NIOLockedValueBox(0)

    /// Sleeps `delay`, or until `wake()`; throws `CancellationError` when
    /// the task is cancelled.
    func sleep(for delay: Duration) async throws {
        let id = next.withLockedValue { value -> Int in
            value += 1
            return value
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await Task.sleep(for: delay) }
            group.addTask { [self] in
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let cancelled = waiting.withLockedValue { waiting -> Bool in
                            if Task.isCancelled { return true }
                            waiting[id] = continuation
                            return false
                        }
                        if cancelled { continuation.resume() }
                    }
                } onCancel: {
                    waiting.withLockedValue { $0.removeValue(forKey: id) }?.resume()
                }
            }
            // Whichever ends first: the delay, or a wake-up.
            defer { group.cancelAll() }
            try await group.next()
        }
        try Task.checkCancellation()
    }

    /// Ends every wait under way.
    func wake() {
        let continuations = waiting.withLockedValue { waiting in
            defer { waiting = [:] }
            return Array(waiting.values)
        }
        for continuation in continuations { continuation.resume() }
    }
}
