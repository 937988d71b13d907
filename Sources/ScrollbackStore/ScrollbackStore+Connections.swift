import Foundation
import PostgresNIO
import Logging
import NIOConcurrencyHelpers
import NIOCore

extension ScrollbackStore {
    /// Runs one statement and returns every row of its result, read to its
    /// end. A writing one answers only once its commit is known to be done
    /// (`proveCommitted`).
    func rows(_ query: PostgresQuery, writes: Bool, as name: StatementName) async throws -> [PostgresRow] {
        try await withConnection(writes: writes, as: name) { [logger, limit = options.deadline] connection in
            let rows = try await connection.query(query, logger: logger).collect()
            if writes { try await Self.proveCommitted(on: connection, logger: logger, within: limit) }
            return rows
        }
    }

    /// Runs one prepared statement (prepared once per connection, then only
    /// bound and executed) and returns every row, decoded by position; read
    /// to the end, and a writing one proved committed, like
    /// `rows(_:writes:as:)`. `refuse` may turn an error of the statement
    /// into another.
    func rows<Statement: PostgresPreparedStatement>(
        _ statement: Statement, writes: Bool, as name: StatementName,
        refusing refuse: @escaping @Sendable (PSQLError) -> (any Error)? = { _ in nil }
    ) async throws -> [Statement.Row] where Statement.Row: Sendable {
        try await withConnection(writes: writes, as: name) { [logger, limit = options.deadline] connection in
            var rows: [Statement.Row] = []
            do {
                for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            } catch let error as PSQLError {
                throw refuse(error) ?? error
            }
            if writes { try await Self.proveCommitted(on: connection, logger: logger, within: limit) }
            return rows
        }
    }

    /// Returns once the statement just run on `connection` in an implicit
    /// transaction is known to be committed.
    ///
    /// A statement's own completion is not proof of its commit: PostgreSQL
    /// commits the implicit transaction after it has written the statement's
    /// completion, and a backend ended in between (its server crashing, or
    /// the backend terminated while a deferred trigger runs at the commit)
    /// sends what it had written, completion included, before it goes. The
    /// backend answers the next query on the connection only after the
    /// commit, so a trivial one follows; if the connection dies first, the
    /// outcome is unknown, as it is. (A `BEGIN` ... `COMMIT` would prove the
    /// same but hold the statement's row locks for one more round trip.)
    static func proveCommitted(on connection: PostgresConnection, logger: Logger, within limit: Duration) async throws {
        try await committed(on: connection, logger: logger, within: limit) {
            _ = try await connection.query("SELECT 1", logger: logger).collect()
        }
    }

    /// Runs `next`, the query after a write on `connection`, as the proof
    /// of that write's commit (see `proveCommitted`): a statement that reads
    /// what was written proves it as well as a trivial one.
    ///
    /// A proof that has not answered within `limit` answers
    /// `outcomeUnknown` and closes the connection. A backend ended while its
    /// commit runs (a crash, or one terminated in a deferred trigger) sends
    /// the statement's completion and goes, and the driver was seen never to
    /// fail the query queued behind it: awaited alone, that query would keep
    /// its connection leased for good, and a pool that shuts down waits for
    /// every lease (the instance, or a test's store, would never stop).
    /// `next` goes on in a task of its own until the driver lets it go.
    static func committed<T: Sendable>(
        on connection: PostgresConnection, logger: Logger, within limit: Duration,
        _ next: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let result = await firstAnswer(of: next) { first in
            let timer = connection.eventLoop.scheduleTask(in: .nanoseconds(limit.nanoseconds)) {
                guard let waiting = first.take() else { return }
                logger.warning("the proof of a commit did not answer in time: closing its connection")
                // The caller hears only once the connection is closed: its
                // lease then goes back to a pool that has already dropped
                // the connection (the pool's own close callback runs first),
                // never to a waiting request that would queue behind the
                // query the driver never ends. A close that itself never
                // completes is not waited for past a few seconds.
                Task {
                    await close(connection)
                    waiting.resume(returning: .failure(StoreError.outcomeUnknown))
                }
            }
            return { timer.cancel() }
        }
        do {
            return try result.get()
        } catch let error as MalformedRow {
            throw error  // a bug between a statement and its decoding, not an unknown commit
        } catch {
            // Whatever ended it, the commit may have happened or not.
            throw StoreError.outcomeUnknown
        }
    }

    /// Runs `body`, which works on `connection` alone, and answers what it
    /// answers, or `outcomeUnknown` once the connection has closed under
    /// it. A backend ended between two statements (terminated, crashed)
    /// closes the connection, and the driver was seen never to end a query
    /// sent after that: a long piece of work on one connection (an import)
    /// would wait for it for good. `body` goes on in a task of its own until
    /// the driver lets it go.
    static func whileOpen<T: Sendable>(
        _ connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await firstAnswer(of: body) { first in
            connection.closeFuture.whenComplete { _ in
                // A body that failed because of the close answers itself first.
                connection.eventLoop.scheduleTask(in: .milliseconds(100)) {
                    first.answer(.failure(StoreError.outcomeUnknown))
                }
            }
            return {}
        }.get()
    }

    /// `body`'s result, or the first other answer given to the
    /// `FirstAnswer` that `arm` receives (it returns what to do once
    /// `body` has ended). Unstructured on purpose, as in `Deadline`: a
    /// structured child would make the caller wait for a query the driver
    /// never ends.
    private static func firstAnswer<T: Sendable>(
        of body: @escaping @Sendable () async throws -> T,
        orElse arm: (FirstAnswer<T>) -> @Sendable () -> Void
    ) async -> Result<T, any Error> {
        let first = FirstAnswer<T>()
        return await withCheckedContinuation { continuation in
            first.open(continuation)
            let ended = arm(first)
            Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await body())
                } catch {
                    result = .failure(error)
                }
                ended()
                first.answer(result)
            }
        }
    }

    /// Resumes a continuation with the first answer it is given; later
    /// ones are dropped.
    private final class FirstAnswer<T: Sendable>: Sendable {
        private let continuation = NIOLockedValueBox<CheckedContinuation<Result<T, any Error>, Never>?>(nil)

        func open(_ waiting: CheckedContinuation<Result<T, any Error>, Never>) {
            continuation.withLockedValue { $0 = waiting }
        }

        /// The continuation, if no answer was given yet; later answers are
        /// then dropped, and the caller resumes it.
        func take() -> CheckedContinuation<Result<T, any Error>, Never>? {
            continuation.withLockedValue { waiting in
                defer { waiting = nil }
                return waiting
            }
        }

        func answer(_ result: Result<T, any Error>) {
            take()?.resume(returning: result)
        }
    }

    /// Runs `body` on a pooled connection, returned to the pool when `body`
    /// ends whatever happened in it, under the store's deadline, with driver
    /// and pool errors turned into `StoreError`s.
    ///
    /// A statement PostgreSQL rolled back because of a serialization failure
    /// or a deadlock is run again (a few times): nothing of it was applied.
    /// `writes` says whether a lost connection leaves the outcome unknown.
    /// `bounded: false` waits as long as the work takes (migrations).
    /// `repeatable: false` says `body` cannot run twice (an import reads its
    /// lines from a stream once): what would be run again fails it instead.
    /// The time `body` takes is reported as statement `name`.
    func withConnection<T: Sendable>(
        writes: Bool, bounded: Bool = true, repeatable: Bool = true, as name: StatementName,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        if !writes, let replica = ReadRoute.replica {
            // A replica's failure is its own: the caller reads from the
            // primary instead, and does not wait long for a connection to
            // a replica that may be gone.
            do {
                return try await Deadline.run(connection: Self.replicaConnectionWait, total: options.deadline) { gate in
                    try await leased(from: replica.client, as: name) { connection in
                        gate.sending()
                        return try await body(connection)
                    }
                }
            } catch is Deadline.Expiry {
                throw StoreError.unavailable
            }
        }
        var attempt = 1
        while true {
            do {
                guard bounded else {
                    return try await leased(as: name) { connection in try await body(connection) }
                }
                // While the database is unreachable, a request waits for a
                // connection only briefly: the pool would keep it until its
                // circuit breaker trips.
                let connectionLimit = reachability.isReachable ? options.deadline : Self.connectionWaitWhileUnreachable
                return try await Deadline.run(connection: connectionLimit, total: options.deadline) {
                    [reachability] gate in
                    try await leased(as: name) { connection in
                        gate.sending()
                        reachability.update(true)
                        return try await body(connection)
                    }
                }
            } catch Deadline.Expiry.waitingForConnection {
                metrics.timedOut(.noConnection)
                reachability.update(false)
                logger.warning("database unavailable", metadata: ["reason": "no connection in time"])
                throw StoreError.unavailable
            } catch Deadline.Expiry.running {
                metrics.timedOut(.noAnswer)
                logger.warning("database did not answer in time", metadata: ["writes": "\(writes)"])
                throw writes ? StoreError.outcomeUnknown : StoreError.unavailable
            } catch {
                let translated = DatabaseErrors.translate(error, writes: writes, logger: logger, metrics: metrics)
                if case .retry = translated, repeatable, attempt < Self.retryAttempts {
                    attempt += 1
                    continue
                }
                throw translated.error
            }
        }
    }

    /// A connection from the pool for `body` (the primary's unless a
    /// replica's is given), counted in the primary pool's gauges while it
    /// is awaited and while it is held (a replica's lease is not: the
    /// gauges are that pool's), and `body` timed as `name`.
    private func leased<T: Sendable>(
        from pool: PostgresClient? = nil, as name: StatementName,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        // With several servers named, nothing runs before the one that takes writes is found.
        if pool == nil, !primary.isLocated { await primary.untilLocated(within: options.deadline) }
        let lease = pool == nil ? StoreMetrics.Lease(metrics) : nil
        defer { lease?.end() }
        return try await (pool ?? primary.current.client).withConnection { [metrics] connection in
            lease?.grant()
            let start = ContinuousClock.now
            defer { metrics.ran(name, for: .now - start) }
            do {
                return try await body(connection)
            } catch {
                if Self.endsConnection(error) { await Self.close(connection) }
                throw error
            }
        }
    }

    /// Whether `error` says the connection is going away: its backend ended
    /// (terminated, crashed, shut down) or the proof of a commit failed.
    /// The server's last error can reach the query before the socket's end
    /// reaches the pool, and a lease returned in between would hand the
    /// dying connection to the next request, whose query the driver was
    /// seen never to end.
    static func endsConnection(_ error: any Error) -> Bool {
        switch error {
        case StoreError.outcomeUnknown:
            return true
        case let error as PostgresTransactionError:
            return [error.beginError, error.closureError, error.commitError, error.rollbackError]
                .contains { $0.map(endsConnection) ?? false }
        case let error as PSQLError:
            switch error.code {
            case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .connectionError:
                return true
            case .server:
                let state = error.sqlState ?? ""
                return state.hasPrefix("08") || state.hasPrefix("57P")
                    || ["FATAL", "PANIC"].contains(error.serverInfo?[.severity] ?? "")
            default:
                return false
            }
        default:
            return false
        }
    }

    /// Closes `connection` and returns once it is closed (the pool's own
    /// close callback, registered first, has then dropped it), or after a
    /// few seconds when the close does not complete.
    static func close(_ connection: PostgresConnection) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(continuation)
            @Sendable func resume() {
                once.withLockedValue { waiting in
                    defer { waiting = nil }
                    return waiting
                }?.resume()
            }
            (connection.close() as EventLoopFuture<Void>).whenComplete { _ in resume() }
            connection.eventLoop.scheduleTask(in: .seconds(5)) { resume() }
        }
    }

    /// Runs `body` in a transaction on a pooled connection (see `withConnection`).
    func withTransaction<T: Sendable>(
        as name: StatementName, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection(writes: true, as: name) { [logger] connection in
            try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
        }
    }

    /// How long a read waits for a connection to a replica before it asks
    /// the primary instead.
    static let replicaConnectionWait = Duration.milliseconds(500)

    /// How long a request waits for a connection while the last one that
    /// waited got none.
    static let connectionWaitWhileUnreachable = Duration.milliseconds(500)

    /// Attempts of a statement that PostgreSQL rolled back for a transient
    /// conflict (serialization failure, deadlock).
    static let retryAttempts = 3
}

extension PSQLError {
    var sqlState: String? { serverInfo?[.sqlState] }
}
