import PostgresNIO
@testable import ScrollbackStore

extension ScrollbackStore {
    /// The first column of every row of `query`, run on the store's own
    /// schema: for tests that look behind the API at what is stored (on
    /// the pool, but not timed as any of the store's statements).
    public func values<T: PostgresDecodable>(_ type: T.Type, _ query: PostgresQuery) async throws -> [T] {
        try await client.withConnection { [logger] connection in
            try await connection.query(query, logger: logger).collect()
        }.map { try $0.decode(T.self) }
    }
}

extension ScrollbackStore {
    /// The schema the store works in (each test has its own).
    public var schema: String? { options.searchPath }
}

extension TestDatabase {
    /// Runs `body` on a connection of its own (outside the store's pool) in
    /// `store`'s schema: another client of the same database, for holding
    /// locks or looking at rows while the store works.
    public static func otherConnection<T: Sendable>(
        to store: ScrollbackStore, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await admin(try url()) { connection in
            if let schema = store.schema {
                try await connection.query("SET search_path TO \(unescaped: schema)", logger: logger)
            }
            return try await body(connection)
        }
    }
}
