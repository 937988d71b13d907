import Foundation

/// Bounds how long a caller waits for the database, even when the database
/// stops answering altogether.
///
/// PostgreSQL's `statement_timeout` ends every statement that runs too long
/// (and rolls it back), but only a server that still answers can apply it; a
/// query already sent cannot be cancelled by cancelling its task either (the
/// driver waits for its end). So the work runs in a task of its own, and the
/// caller is answered by whichever comes first: the work's result or the
/// deadline. The work goes on until the driver is done with it and then
/// returns its connection to the pool.
///
/// Two limits apply: `connection`, for getting a connection from the pool,
/// and `total`. The pool keeps a request waiting while it retries to connect
/// to a database that is down (until its circuit breaker trips, a minute
/// later), so the store shortens the first limit while the database is
/// unreachable and callers hear so at once.
enum Deadline {
    /// Why the caller was answered before the work ended.
    enum Expiry: Error {
        /// No connection came from the pool in time: nothing was sent.
        case waitingForConnection
        /// The statement was sent and has not finished: a write may or may
        /// not commit.
        case running
    }

    static func run<T: Sendable>(
        connection connectionLimit: Duration, total limit: Duration,
        _ work: @escaping @Sendable (Gate<T>) async throws -> T
    ) async throws -> T {
        let gate = Gate<T>()
        return try await withCheckedThrowingContinuation { continuation in
            gate.open(continuation)
            // Unstructured on purpose, as explained above: a structured child
            // would make the caller wait for the statement.
            let timer = Task {
                let first = min(connectionLimit, limit)
                try await Task.sleep(for: first)
                if !gate.hasSent {
                    gate.resume(.failure(Expiry.waitingForConnection))
                    return
                }
                try await Task.sleep(for: limit - first)
                gate.resume(.failure(gate.hasSent ? Expiry.running : Expiry.waitingForConnection))
            }
            Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await work(gate))
                } catch {
                    result = .failure(error)
                }
                timer.cancel()
                gate.resume(result)
            }
        }
    }

    /// Resumes a continuation once; later results are dropped.
    ///
    /// `@unchecked Sendable`: its mutable fields are read and written only
    /// while `lock` is held.
    final class Gate<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var continuation: CheckedContinuation<T, any Error>?
        private var sent = false

        func open(_ continuation: CheckedContinuation<T, any Error>) {
            lock.withLock { self.continuation = continuation }
        }

        /// The work has its connection and is about to send its statement.
        func sending() {
            lock.withLock { sent = true }
        }

        var hasSent: Bool { lock.withLock { sent } }

        func resume(_ result: Result<T, any Error>) {
            let waiting = lock.withLock {
                defer { continuation = nil }
                return continuation
            }
            waiting?.resume(with: result)
        }
    }
}

/// Whether the database answered lately: set when a connection is handed
/// out, cleared when a request gave up waiting for one.
///
/// `@unchecked Sendable`: its one mutable field is only touched under `lock`.
final class Reachability: @unchecked Sendable {
    private let lock = NSLock()
    private var reachable = true

    var isReachable: Bool { lock.withLock { reachable } }

    func update(_ value: Bool) {
        lock.withLock { reachable = value }
    }
}
