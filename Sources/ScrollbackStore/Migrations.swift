import Logging
import PostgresNIO

/// One numbered schema change from `sql/NNN_name.sql`.
public struct Migration: Sendable, Equatable {
    public var version: Int
    public var name: String
    public var sql: String

    /// The migrations carried in the binary, in order.
    public static let embedded: [Migration] = EmbeddedMigrationFiles.files.compactMap { file in
        Migration(fileName: file.name, sql: file.contents)
    }.sorted { $0.version < $1.version }

    /// `001_create_things.sql` -> version 1, name `001_create_things`.
    init?(fileName: String, sql: String) {
        guard fileName.hasSuffix(".sql") else { return nil }
        let name = String(fileName.dropLast(4))
        guard let digits = name.split(separator: "_").first, let version = Int(digits) else { return nil }
        self.version = version
        self.name = name
        self.sql = sql
    }
}

extension ScrollbackStore {
    /// Applies the migrations not yet recorded, in order, each in its own
    /// transaction. An advisory lock keeps two instances starting at once from
    /// both applying them. Returns the names of the migrations it applied.
    @discardableResult
    public func migrate(_ migrations: [Migration] = Migration.embedded) async throws -> [String] {
        // Without the request deadline: a migration of a large table takes
        // its time, and the session's timeouts are lifted for it.
        try await withConnection(writes: true, bounded: false, as: .migrate) { connection in
            try await connection.query("SET statement_timeout = 0", logger: logger)
            try await connection.query("SET lock_timeout = 0", logger: logger)
            // Back to the values the connection started with, whatever
            // happened: the connection returns to the pool afterwards.
            func restoreTimeouts() async throws {
                try await connection.query("RESET statement_timeout", logger: logger)
                try await connection.query("RESET lock_timeout", logger: logger)
            }
            do {
                let applied = try await migrate(migrations, on: connection)
                try await restoreTimeouts()
                return applied
            } catch {
                try? await restoreTimeouts()
                throw error
            }
        }
    }

    private func migrate(_ migrations: [Migration], on connection: PostgresConnection) async throws -> [String] {
        // Keyed by schema, so stores in different schemas of one database do
        // not wait for each other.
        try await connection.query(
            "SELECT pg_advisory_lock(hashtext('scrollback.migrations'), hashtext(current_schema()))",
            logger: logger)
        do {
            let applied = try await applyPending(migrations, on: connection)
            try await connection.query(
                "SELECT pg_advisory_unlock(hashtext('scrollback.migrations'), hashtext(current_schema()))",
                logger: logger)
            return applied
        } catch {
            _ = try? await connection.query("ROLLBACK", logger: logger)
            _ = try? await connection.query(
                "SELECT pg_advisory_unlock(hashtext('scrollback.migrations'), hashtext(current_schema()))",
                logger: logger)
            throw error
        }
    }

    private func applyPending(_ migrations: [Migration], on connection: PostgresConnection) async throws -> [String] {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    integer     PRIMARY KEY,
                name       text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            logger: logger)
        var done = Set<Int>()
        for try await version in try await connection.query(
            "SELECT version FROM schema_migrations", logger: logger
        ).decode(Int.self) {
            done.insert(version)
        }
        var applied: [String] = []
        for migration in migrations where !done.contains(migration.version) {
            try await connection.query("BEGIN", logger: logger)
            for statement in SQLStatements.split(migration.sql) {
                try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            }
            try await connection.query(
                "INSERT INTO schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                logger: logger)
            try await connection.query("COMMIT", logger: logger)
            logger.info("applied migration", metadata: ["migration": "\(migration.name)"])
            applied.append(migration.name)
        }
        return applied
    }
}
