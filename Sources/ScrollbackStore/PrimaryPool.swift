import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO

/// The connection pool of the server that takes writes.
///
/// With one server named in `DATABASE_URL` the pool is made once. With
/// several (`postgres://a:5432,b:5432/db`), `watch` keeps asking the
/// current one whether it still takes writes (libpq's
/// `target_session_attrs=read-write`): once it stops answering, or answers
/// that it is in recovery, the first server of the list that takes writes
/// gets a new pool, the old one is closed, and the change feed's listener
/// moves there too (which drops the page cache, as any lost listener does).
/// A primary that comes back after a standby was promoted is not returned
/// to: it must be kept down (fenced) or rebuilt as a standby of the new one.
final class PrimaryPool: Sendable {
    struct Current: Sendable {
        var client: PostgresClient
        var endpoint: DatabaseURL.Endpoint
        /// Moves on every move to another server.
        var generation: Int
    }

    let url: DatabaseURL
    private let options: StoreOptions
    private let logger: Logger
    private let state: NIOLockedValueBox<Current>
    private let made: AsyncStream<PostgresClient>
    private let making: AsyncStream<PostgresClient>.Continuation

    init(url: DatabaseURL, options: StoreOptions, logger: Logger) {
        self.url = url
        self.options = options
        self.logger = logger
        let first = url.endpoints[0]
        let client = PostgresClient(configuration: url.on(first).clientConfiguration(options), backgroundLogger: logger)
        state = NIOLockedValueBox(Current(client: client, endpoint: first, generation: 0))
        (made, making) = AsyncStream.makeStream()
        making.yield(client)
    }

    var current: Current { state.withLockedValue { $0 } }

    /// Whether the store may move to another server (several were named).
    var canMove: Bool { url.endpoints.count > 1 }

    /// Runs every pool made, each until the next replaces it, until the
    /// task is cancelled (which ends the stream's iteration).
    func run() async {
        var running: [Task<Void, Never>] = []
        for await client in made {
            // The one replaced is on a server that is gone or no longer
            // takes writes: requests still leasing from it fail.
            running.last?.cancel()
            // Immediate: the pool counts as running before any request leases from it.
            running.append(Task.immediate { await client.run() })
        }
        for task in running { task.cancel() }
        for task in running { await task.value }
    }

    /// With several servers named: every `interval`, whether the current
    /// one still takes writes, and if not, a move to the first that does.
    /// Returns at once when one server is named.
    func watch(interval: Duration) async {
        guard canMove else { return }
        var probe: PostgresConnection?
        var checked = false
        while !Task.isCancelled {
            let here = current.endpoint
            if probe == nil || probe?.isClosed == true {
                probe = try? await connect(to: here, applicationName: "scrollback-primary-probe")
            }
            var writable = false
            if let probe { writable = await Self.takesWrites(probe, within: .seconds(1), logger: logger) }
            if !writable {
                try? await probe?.close()
                probe = nil
                if let found = await findPrimary(), found != here {
                    move(to: found)
                } else if !checked {
                    logger.warning("no server of DATABASE_URL takes writes yet", metadata: ["servers": "\(url.redacted)"])
                }
            }
            checked = true
            try? await Task.sleep(for: interval)
        }
        try? await probe?.close()
    }

    /// The first server of the list that answers and takes writes.
    private func findPrimary() async -> DatabaseURL.Endpoint? {
        for endpoint in url.endpoints {
            guard let connection = try? await connect(to: endpoint, applicationName: "scrollback-primary-probe") else {
                continue
            }
            let writable = await Self.takesWrites(connection, within: .seconds(1), logger: logger)
            try? await connection.close()
            if writable { return endpoint }
        }
        return nil
    }

    private func move(to endpoint: DatabaseURL.Endpoint) {
        let client = PostgresClient(
            configuration: url.on(endpoint).clientConfiguration(options), backgroundLogger: logger)
        let from = state.withLockedValue { current in
            defer { current = Current(client: client, endpoint: endpoint, generation: current.generation + 1) }
            return current.endpoint
        }
        logger.warning("the primary moved", metadata: ["from": "\(from)", "to": "\(endpoint)"])
        making.yield(client)
    }

    /// One connection to `endpoint`, given up after a second.
    func connect(to endpoint: DatabaseURL.Endpoint, applicationName: String) async throws -> PostgresConnection {
        var configuration = try url.on(endpoint).connectionConfiguration(options, applicationName: applicationName)
        configuration.options.connectTimeout = .seconds(1)
        return try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
    }

    /// Whether the server behind `connection` answers in time and takes
    /// writes (not in recovery, and writable by default).
    static func takesWrites(_ connection: PostgresConnection, within limit: Duration, logger: Logger) async -> Bool {
        let answer = try? await Deadline.run(connection: limit, total: limit) { (gate: Deadline.Gate<Bool>) in
            gate.sending()
            let rows = try await connection.query(
                "SELECT NOT pg_is_in_recovery() AND current_setting('default_transaction_read_only') = 'off'",
                logger: logger
            ).collect()
            return try rows.first?.decode(Bool.self) ?? false
        }
        return answer ?? false
    }
}
