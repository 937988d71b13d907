import Foundation
import Logging
import PostgresNIO

/// PostgreSQL access for the service: every SQL statement lives in this module.
///
/// Each operation is one statement (one round trip) where possible, binds its
/// values through PostgresNIO's interpolation, and runs under a deadline so a
/// database that stopped answering turns into `StoreError.unavailable`
/// instead of a request that hangs.
public struct ScrollbackStore: Sendable {
    public let client: PostgresClient
    let logger: Logger
    let queryTimeout: Duration
    let knownUsers: KnownUsers

    public init(client: PostgresClient, logger: Logger, queryTimeout: Duration = .seconds(5)) {
        self.client = client
        self.logger = logger
        self.queryTimeout = queryTimeout
        self.knownUsers = KnownUsers()
    }

    /// Whether the database answers (`/readyz`).
    public func ping(timeout: Duration = .seconds(2)) async -> Bool {
        do {
            return try await withStoreErrors(timeout: timeout) {
                try await client.query("SELECT 1", logger: logger).decode(Int.self).first { _ in true } == 1
            }
        } catch {
            return false
        }
    }

    /// Records a user the first time they are seen. Users belong to the
    /// integrating app; this only remembers that they exist.
    public func ensureUser(_ userID: String) async throws {
        if await knownUsers.contains(userID) { return }
        _ = try await withStoreErrors {
            try await client.query(
                "INSERT INTO users (id) VALUES (\(userID)) ON CONFLICT (id) DO NOTHING", logger: logger)
        }
        await knownUsers.insert(userID)
    }

    /// Runs one store operation under the deadline and turns driver errors into
    /// `StoreError`s.
    func withStoreErrors<T: Sendable>(
        timeout: Duration? = nil, _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let limit = timeout ?? queryTimeout
        do {
            return try await withThrowingTaskGroup(of: T.self) { group in
                group.addTask { try await operation() }
                group.addTask {
                    try await Task.sleep(for: limit)
                    throw StoreError.unavailable
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
        } catch let error as StoreError {
            throw error
        } catch let error as PSQLError {
            throw translate(error)
        }
    }

    private func translate(_ error: PSQLError) -> any Error {
        switch error.code {
        case .server:
            let state = error.sqlState ?? ""
            // 08: connection exception; 53: insufficient resources;
            // 57P01-57P03: the server is shutting down or starting up.
            if state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") {
                logger.warning("database unavailable", metadata: ["sqlstate": "\(state)"])
                return StoreError.unavailable
            }
            return error
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown,
            .poolClosed, .sslUnsupported, .failedToAddSSLHandler:
            logger.warning("database unavailable", metadata: ["error": "\(error.code)"])
            return StoreError.unavailable
        default:
            return error
        }
    }
}

/// Users already recorded by this process, so most requests skip the upsert.
/// Bounded: when full it forgets everything and relearns (an upsert is cheap).
actor KnownUsers {
    private var ids = Set<String>()
    private let capacity = 100_000

    func contains(_ id: String) -> Bool { ids.contains(id) }

    func insert(_ id: String) {
        if ids.count >= capacity { ids.removeAll(keepingCapacity: true) }
        ids.insert(id)
    }
}

extension PSQLError {
    var sqlState: String? { serverInfo?[.sqlState] }
}
