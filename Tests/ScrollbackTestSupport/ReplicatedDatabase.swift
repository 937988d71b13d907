import Foundation
import Logging
import NIOPosix
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackStore

/// A PostgreSQL primary and a streaming standby of it (`pg_basebackup -R`),
/// made for one test in a folder of its own and removed after it, with the
/// controls the replica and failover tests need: replay paused and resumed,
/// a server crashed, the standby promoted, commits made to wait for the
/// standby.
public final class ReplicatedDatabase: Sendable {
    public let primary: EmbeddedPostgres.Running
    public let standby: EmbeddedPostgres.Running
    let launcher: EmbeddedPostgres

    public var primaryURL: DatabaseURL { try! DatabaseURL(primary.url) }
    public var standbyURL: DatabaseURL { try! DatabaseURL(standby.url) }
    /// Both servers, primary first, as a `DATABASE_URL` that fails over.
    public var bothURL: DatabaseURL {
        var url = primaryURL
        url.endpoints = [primaryURL.endpoints[0], standbyURL.endpoints[0]]
        return url
    }

    private init(launcher: EmbeddedPostgres, primary: EmbeddedPostgres.Running, standby: EmbeddedPostgres.Running) {
        self.launcher = launcher
        self.primary = primary
        self.standby = standby
    }

    /// Runs `body` with a fresh pair; stops both servers and removes their
    /// files after. `synchronous`: every commit waits until the standby has
    /// flushed it (`synchronous_standby_names = '*'`,
    /// `synchronous_commit = on`).
    public static func with<T: Sendable>(
        synchronous: Bool = false, _ body: (ReplicatedDatabase) async throws -> T
    ) async throws -> T {
        let folder = "/tmp/scrollback-replicated-" + UUID().uuidString.lowercased().prefix(8)
        let launcher = EmbeddedPostgres(
            stateDirectory: folder, clusterName: "primary", options: .init(durable: false, maxConnections: 100),
            logger: TestDatabase.logger)
        let primary = try await offPool { try launcher.start() }
        let pair: ReplicatedDatabase
        do {
            if synchronous {
                try await admin(try DatabaseURL(primary.url)) { connection in
                    for setting in [
                        "ALTER SYSTEM SET synchronous_standby_names = '*'", "ALTER SYSTEM SET synchronous_commit = 'on'",
                        "SELECT pg_reload_conf()",
                    ] {
                        _ = try await connection.query(PostgresQuery(unsafeSQL: setting), logger: TestDatabase.logger).collect()
                    }
                }
            }
            let standby = try await offPool { try launcher.startStandby(of: primary, clusterName: "standby") }
            pair = ReplicatedDatabase(launcher: launcher, primary: primary, standby: standby)
        } catch {
            _ = try? await offPool { try launcher.crash(primary) }
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
        let outcome: Result<T, any Error>
        do {
            try await pair.untilStreaming()
            outcome = .success(try await body(pair))
        } catch {
            outcome = .failure(error)
        }
        _ = try? await offPool { try launcher.crash(pair.standby) }
        _ = try? await offPool { try launcher.crash(pair.primary) }
        try? FileManager.default.removeItem(atPath: folder)
        return try outcome.get()
    }

    /// Waits until the primary streams to the standby.
    public func untilStreaming(within limit: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let streaming = try await Self.admin(primaryURL) { connection in
                try await connection.query(
                    "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'", logger: TestDatabase.logger
                ).collect().first?.decode(Int64.self) ?? 0
            }
            if streaming > 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw NotStreaming()
    }

    struct NotStreaming: Error {}

    /// Stops (`pg_wal_replay_pause()`) or resumes replay on the standby:
    /// it keeps receiving WAL, and its reads stay where replay stopped.
    public func pauseReplay() async throws {
        try await standbySQL("SELECT pg_wal_replay_pause()")
        // Paused once the standby says so (it finishes the record it is on).
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let state = try await Self.admin(standbyURL) { connection in
                try await connection.query("SELECT pg_get_wal_replay_pause_state()", logger: TestDatabase.logger)
                    .collect().first?.decode(String.self)
            }
            if state == "paused" { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw NotPaused()
    }

    struct NotPaused: Error {}

    public func resumeReplay() async throws {
        try await standbySQL("SELECT pg_wal_replay_resume()")
    }

    /// Whether the standby has replayed everything the primary has written.
    public func standbyCaughtUp() async throws -> Bool {
        let written = try await Self.admin(primaryURL) { connection in
            try await connection.query("SELECT (pg_current_wal_insert_lsn() - '0/0')::int8", logger: TestDatabase.logger)
                .collect().first?.decode(Int64.self) ?? 0
        }
        let replayed = try await Self.admin(standbyURL) { connection in
            try await connection.query("SELECT (pg_last_wal_replay_lsn() - '0/0')::int8", logger: TestDatabase.logger)
                .collect().first?.decode(Int64.self) ?? 0
        }
        return replayed >= written
    }

    public func crashPrimary() async throws { try await Self.offPool { [self] in try launcher.crash(primary) } }
    public func crashStandby() async throws { try await Self.offPool { [self] in try launcher.crash(standby) } }
    public func restartStandby() async throws { try await Self.offPool { [self] in try launcher.restart(standby) } }
    public func promoteStandby() async throws { try await Self.offPool { [self] in try launcher.promote(standby) } }

    /// Runs PostgreSQL's programs (initdb, pg_basebackup, pg_ctl: blocking
    /// for seconds) on a thread of their own: on the cooperative pool (two
    /// threads on two cores) they would stall every other test's tasks
    /// meanwhile.
    static func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    /// After a promotion: the new primary has no standby of its own, so
    /// its commits stop waiting for one (`synchronous_standby_names` was
    /// copied from the old primary; left, every commit would wait for good).
    public func promotedStandbyCommitsAlone() async throws {
        try await standbySQL("ALTER SYSTEM SET synchronous_standby_names = ''")
        try await standbySQL("SELECT pg_reload_conf()")
    }

    private func standbySQL(_ sql: String) async throws {
        _ = try await Self.admin(standbyURL) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: sql), logger: TestDatabase.logger).collect()
        }
    }

    /// One short-lived connection to `url` (with its password).
    public static func admin<T: Sendable>(
        _ url: DatabaseURL, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await TestDatabase.admin(url, body)
    }
}
