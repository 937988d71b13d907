import Logging
import PostgresNIO

/// The one place where what the driver, the pool or PostgreSQL report
/// becomes a `StoreError`. A database's own text never goes further than the
/// log.
enum DatabaseErrors {
    enum Translation {
        /// Rolled back for a transient conflict: the same statement may run again.
        case retry(any Error)
        case fail(any Error)

        var error: any Error {
            switch self {
            case .retry(let error), .fail(let error): error
            }
        }
    }

    /// `metrics` counts the statements PostgreSQL cancelled for a timeout.
    static func translate(_ error: any Error, writes: Bool, logger: Logger, metrics: StoreMetrics) -> Translation {
        switch error {
        case let error as StoreError:
            return .fail(error)
        case let error as PostgresTransactionError:
            // The first thing that went wrong: BEGIN, the work inside, or COMMIT.
            // A failed COMMIT leaves the outcome unknown, as a lost connection does.
            if let inner = error.beginError ?? error.closureError {
                return translate(inner, writes: writes, logger: logger, metrics: metrics)
            }
            if let commit = error.commitError {
                return translate(commit, writes: true, logger: logger, metrics: metrics)
            }
            return .fail(unavailable(logger, "transaction failed"))
        case let error as PSQLError:
            return translate(error, writes: writes, logger: logger, metrics: metrics)
        case is CancellationError:
            return .fail(StoreError.unavailable)
        default:
            // The pool's own errors (`ConnectionPoolError`: its circuit breaker
            // tripped after a long outage, or it was shut down) come from a
            // module of the driver's that is not public API, so they are
            // recognised by name.
            if String(describing: type(of: error)) == "ConnectionPoolError" {
                return .fail(unavailable(logger, "connection pool: \(error)"))
            }
            return .fail(error)
        }
    }

    private static func translate(_ error: PSQLError, writes: Bool, logger: Logger, metrics: StoreMetrics)
        -> Translation
    {
        switch error.code {
        case .server:
            let state = error.sqlState ?? ""
            switch state {
            case "40001", "40P01":
                // Serialization failure, deadlock: rolled back whole, safe to repeat.
                logger.info("database conflict, retrying", metadata: ["sqlstate": "\(state)"])
                return .retry(unavailable(logger, "database conflict", state))
            case "23505", "23503":
                // A key another transaction committed first, in a race no
                // statement was written for (each known one is: a lock, an
                // arbiter, a check after the lock): rolled back whole, and
                // run again the transaction sees that row. A key that is
                // broken again every time ends as 503, never as a 500 whose
                // log line holds the key (PostgreSQL's detail names its values).
                logger.warning(
                    "database key conflict, retrying",
                    metadata: ["sqlstate": "\(state)", "constraint": "\(error.serverInfo?[.constraintName] ?? "")"])
                return .retry(unavailable(logger, "key conflict", state))
            case "57014", "55P03", "25006":
                // Cancelled (statement_timeout), lock not available (lock_timeout),
                // read-only transaction (a standby after a failover): rolled back.
                if state == "57014" { metrics.timedOut(.statementTimeout) }
                if state == "55P03" { metrics.timedOut(.lockTimeout) }
                return .fail(unavailable(logger, "statement refused", state))
            default:
                // 08: connection exception; 53: insufficient resources;
                // 57P01-57P05: the server is shutting down, starting up or crashed.
                // The server answered with an error, so the statement did not commit.
                if state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") {
                    return .fail(unavailable(logger, "database refused", state))
                }
                return .fail(error)
            }
        case .connectionError, .sslUnsupported, .failedToAddSSLHandler, .poolClosed, .queryCancelled:
            // No statement was sent (`queryCancelled`: a wait for a connection ended).
            return .fail(unavailable(logger, "\(error.code)"))
        case .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
            return .fail(lost(logger, writes: writes, "\(error.code)"))
        default:
            return .fail(error)
        }
    }

    private static func unavailable(_ logger: Logger, _ reason: String, _ state: String = "") -> StoreError {
        logger.warning("database unavailable", metadata: ["reason": "\(reason)", "sqlstate": "\(state)"])
        return .unavailable
    }

    /// The connection went away while a statement may have been running: a
    /// write may or may not have committed.
    private static func lost(_ logger: Logger, writes: Bool, _ reason: String) -> StoreError {
        logger.warning("database connection lost", metadata: ["reason": "\(reason)"])
        return writes ? .outcomeUnknown : .unavailable
    }
}

/// What a log line says of an error that reached no answer of its own: for
/// a database error, its SQLSTATE, constraint, table and where the query
/// was made, never PostgreSQL's message or detail (which name the values
/// of a key: a push token, an external id) nor the query.
public enum LoggedError {
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let error as PSQLError:
            var fields = ["code: \(error.code)"]
            if let info = error.serverInfo {
                for (name, key) in [("sqlstate", PSQLError.ServerInfo.Field.sqlState), ("constraint", .constraintName), ("table", .tableName)] {
                    if let value = info[key] { fields.append("\(name): \(value)") }
                }
            }
            if let file = error.file, let line = error.line { fields.append("at: \(file):\(line)") }
            return "PSQLError(" + fields.joined(separator: ", ") + ")"
        case let error as PostgresTransactionError:
            let inner = [error.beginError, error.closureError, error.commitError, error.rollbackError].compactMap { $0 }
            return "PostgresTransactionError(" + inner.map(describe).joined(separator: "; ") + ")"
        default:
            return String(reflecting: error)
        }
    }
}
