import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackStore

#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL the tests run against: `DATABASE_URL` when set, otherwise
/// the same embedded cluster the server uses, kept under
/// `.scrollback/test-postgres` and started once per test process. Each test
/// gets a schema of its own, so tests run in parallel without seeing each
/// other's rows.
public enum TestDatabase {
    static let logger: Logger = {
        var logger = Logger(label: "scrollback.tests")
        logger.logLevel = .warning
        return logger
    }()

    /// Started on first use; stopped when the test process exits. Read it
    /// through `url()` only: its first read runs initdb and pg_ctl, for
    /// seconds, and every other thread that reads it meanwhile waits in the
    /// lazy initializer's lock.
    private static let server: Result<DatabaseURL, any Error> = {
        if let text = ProcessInfo.processInfo.environment["DATABASE_URL"], !text.isEmpty {
            return Result { try DatabaseURL(text) }
        }
        let launcher = EmbeddedPostgres(
            stateDirectory: ".scrollback", clusterName: "test-postgres",
            options: .init(durable: false, maxConnections: 500), logger: logger)
        return Result {
            let running = try launcher.start()
            EmbeddedClusterStopper.register(launcher, running)
            return try DatabaseURL(running.url)
        }
    }()

    /// The first read of `server`, on a thread of NIO's pool: the
    /// cooperative threads (two on a two-core machine) must never block in
    /// initdb or pg_ctl, or in the lock of the lazy initializer waiting for
    /// them, or every test of the process stalls (a test's server that
    /// starts then, a webhook receiver, misses its deadline).
    private static let starting = Task<DatabaseURL, any Error> {
        try await NIOThreadPool.singleton.runIfActive { try server.get() }
    }

    /// The database's address (for tests that build their own pools),
    /// once it is running.
    public static func url() async throws -> DatabaseURL {
        try await starting.value
    }

    /// The statement and lock timeouts of tests that do not test timeouts.
    /// Sized for a busy machine, where tests run in parallel beside builds:
    /// a transaction that holds a conversation's lock may then wait seconds
    /// for a CPU between its statements, and thirty writers queued on that
    /// lock wait thirty times as long. What such a test asserts does not
    /// depend on how long it takes; a test of the deadlines sets its own.
    public static let patientTimeout = Duration.seconds(60)

    /// Runs `body` with a running store on a fresh, migrated schema, then drops it.
    public static func withStore<T: Sendable>(
        maximumConnections: Int = 8, statementTimeout: Duration = patientTimeout, lockTimeout: Duration = patientTimeout,
        migrated: Bool = true, _ body: (ScrollbackStore) async throws -> T
    ) async throws -> T {
        try await withSchema { url, schema in
            let options = StoreOptions(
                maximumConnections: maximumConnections, statementTimeout: statementTimeout, lockTimeout: lockTimeout,
                searchPath: schema)
            let store = ScrollbackStore(url: url, options: options, logger: logger)
            return try await running(store) {
                if migrated { try await store.migrate() }
                return try await body(store)
            }
        }
    }

    /// Runs `body` while `store`'s pool runs; stops the pool after. A pool
    /// that has not stopped a minute later (a connection that stays leased
    /// for good) fails the test that used it, instead of hanging the run.
    public static func running<T: Sendable>(_ store: ScrollbackStore, _ body: () async throws -> T) async throws -> T {
        let pool = Task { try await store.run() }
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        pool.cancel()
        if !(await ended(pool, within: .seconds(60))) {
            throw PoolDidNotStop()
        }
        return try outcome.get()
    }

    struct PoolDidNotStop: Error, CustomStringConvertible {
        var description: String { "the store's pool had not stopped a minute after its test ended: a connection stayed leased" }
    }

    /// Whether `task` ends within `limit` (it goes on either way).
    static func ended(_ task: Task<Void, any Error>, within limit: Duration) async -> Bool {
        let first = NIOLockedValueBox<CheckedContinuation<Bool, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            first.withLockedValue { $0 = continuation }
            func answer(_ ended: Bool) {
                first.withLockedValue { waiting in
                    defer { waiting = nil }
                    return waiting
                }?.resume(returning: ended)
            }
            Task {
                _ = await task.result
                answer(true)
            }
            Task {
                try? await Task.sleep(for: limit)
                answer(false)
            }
        }
    }

    /// Runs `body` with a fresh, empty schema of the test database, then
    /// drops it; holds one of the `TestSlots` meanwhile.
    /// `database`: another server than the test database's (a test's own).
    public static func withSchema<T: Sendable>(
        on database: DatabaseURL? = nil, _ body: (DatabaseURL, String) async throws -> T
    ) async throws -> T {
        try await TestSlots.withSlot { try await withOwnSchema(on: database, body) }
    }

    private static func withOwnSchema<T: Sendable>(
        on database: DatabaseURL?, _ body: (DatabaseURL, String) async throws -> T
    ) async throws -> T {
        let url: DatabaseURL
        if let database { url = database } else { url = try await Self.url() }
        let schema = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        _ = try await admin(url) { try await $0.query("CREATE SCHEMA \(unescaped: schema)", logger: logger) }
        let outcome: Result<T, any Error>
        do {
            outcome = .success(try await body(url, schema))
        } catch {
            outcome = .failure(error)
        }
        // A lock some leftover session holds in the schema must not hang the
        // run: the schema is then left behind, which is harmless.
        _ = try? await admin(url) { connection in
            _ = try await connection.query("SET lock_timeout = '60s'", logger: logger)
            return try await connection.query("DROP SCHEMA \(unescaped: schema) CASCADE", logger: logger)
        }
        return try outcome.get()
    }

    /// One short-lived connection for schema housekeeping.
    public static func admin<T: Sendable>(
        _ url: DatabaseURL, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        let configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.username, password: url.password,
            database: url.database, tls: .disable)
        let connection = try await PostgresConnection.connect(
            configuration: configuration, id: Int.random(in: 0...Int.max), logger: logger)
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// Stops the test cluster when the test process exits.
enum EmbeddedClusterStopper {
    nonisolated(unsafe) private static var stop: (() -> Void)?

    // Called once, from `TestDatabase.server`'s lazy initializer, which Swift
    // runs exactly once under its own lock; `atexit` runs on the exiting thread
    // after all tests are done, so the two never overlap.
    static func register(_ launcher: EmbeddedPostgres, _ running: EmbeddedPostgres.Running) {
        stop = { launcher.stop(running) }
        atexit { EmbeddedClusterStopper.stop?() }
    }
}
