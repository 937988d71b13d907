import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

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
            // A timer on an event loop: cheaper than a sleeping task per query.
            let loop = MultiThreadedEventLoopGroup.singleton.next()
            let first = min(connectionLimit, limit)
            let timer = loop.scheduleTask(in: .nanoseconds(first.nanoseconds)) {
                guard gate.hasSent else {
                    gate.resume(.failure(Expiry.waitingForConnection))
                    return
                }
                gate.afterward(
                    loop.scheduleTask(in: .nanoseconds((limit - first).nanoseconds)) {
                        gate.resume(.failure(Expiry.running))
                    })
            }
            // Unstructured on purpose, as explained above: a structured child
            // would make the caller wait for the statement.
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
    struct Gate<T: Sendable>: Sendable {
        private struct State {
            var continuation: CheckedContinuation<T, any Error>?
            var sent = false
            /// The timer's second phase, cancelled when the work ends first.
            var secondTimer: Scheduled<Void>?
        }

        private let state = NIOLockedValueBox(State())

        func open(_ continuation: CheckedContinuation<T, any Error>) {
            state.withLockedValue { $0.continuation = continuation }
        }

        /// The work has its connection and is about to send its statement.
        func sending() {
            state.withLockedValue { $0.sent = true }
        }

        var hasSent: Bool { state.withLockedValue { $0.sent } }

        func afterward(_ timer: Scheduled<Void>) {
            let resumed = state.withLockedValue { state in
                state.secondTimer = timer
                return state.continuation == nil
            }
            if resumed { timer.cancel() }
        }

        func resume(_ result: Result<T, any Error>) {
            let (waiting, timer) = state.withLockedValue { state in
                defer {
                    state.continuation = nil
                    state.secondTimer = nil
                }
                return (state.continuation, state.secondTimer)
            }
            timer?.cancel()
            waiting?.resume(with: result)
        }
    }
}

/// Whether the database answered lately: set when a connection is handed
/// out, cleared when a request gave up waiting for one.
struct Reachability: Sendable {
    private let reachable = NIOLockedValueBox(true)

    var isReachable: Bool { reachable.withLockedValue { $0 } }

    func update(_ value: Bool) {
        reachable.withLockedValue { $0 = value }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
