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
    /// one still takes writes, and if not, a move to the one that does.
    /// Returns at once when one server is named.
    func watch(interval: Duration) async {
        guard canMove else { return }
        var probe: PostgresConnection?
        var warned = false
        while !Task.isCancelled {
            let here = current.endpoint
            if probe == nil || probe?.isClosed == true {
                probe = try? await connect(to: here, applicationName: "scrollback-primary-probe")
            }
            var writable = false
            if let probe { writable = await Self.takesWrites(probe, within: .seconds(1), logger: logger) != nil }
            if !writable {
                try? await probe?.close()
                probe = nil
                if let found = await findPrimary(preferring: here) {
                    if found != here { move(to: found) }
                    located.withLockedValue { $0 = true }
                } else if !warned {
                    warned = true
                    logger.warning("no server of DATABASE_URL takes writes yet", metadata: ["servers": "\(url.redacted)"])
                }
            } else {
                located.withLockedValue { $0 = true }
            }
            try? await Task.sleep(for: interval)
        }
        try? await probe?.close()
    }

    /// Set once a server that takes writes was found (the first pass of
    /// `watch`): requests wait for it, so that none (a migration at start,
    /// say) runs on a standby listed first.
    private let located = NIOLockedValueBox(false)

    /// Returns once the primary is located, or after `limit` (the requests
    /// then fail as the server they reach answers).
    func untilLocated(within limit: Duration) async {
        guard canMove else { return }
        let deadline = ContinuousClock.now + limit
        while !located.withLockedValue({ $0 }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    var isLocated: Bool { !canMove || located.withLockedValue { $0 } }

    /// The server that takes writes: `current` when it does (a probe that
    /// failed once is no reason to move), otherwise the one on the highest
    /// timeline (the most recently promoted). Two that take writes are a
    /// split brain: logged as an error, and the newer timeline wins.
    private func findPrimary(preferring current: DatabaseURL.Endpoint) async -> DatabaseURL.Endpoint? {
        var writable: [(endpoint: DatabaseURL.Endpoint, timeline: Int64)] = []
        for endpoint in url.endpoints {
            guard let connection = try? await connect(to: endpoint, applicationName: "scrollback-primary-probe") else {
                continue
            }
            if let timeline = await Self.takesWrites(connection, within: .seconds(1), logger: logger) {
                writable.append((endpoint, timeline))
            }
            try? await connection.close()
        }
        if writable.count > 1 {
            logger.error(
                "more than one server of DATABASE_URL takes writes: fence the old primary",
                metadata: ["servers": "\(writable.map { "\($0.endpoint) (timeline \($0.timeline))" })"])
        }
        if writable.contains(where: { $0.endpoint == current }) { return current }
        return writable.max { $0.timeline < $1.timeline }?.endpoint
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

    /// The server's timeline when the server behind `connection` answers
    /// in time and takes writes (not in recovery, and writable by
    /// default); nil otherwise. The timeline is 0 where the role may not
    /// read it (`pg_control_checkpoint()`).
    static func takesWrites(_ connection: PostgresConnection, within limit: Duration, logger: Logger) async -> Int64? {
        let answer = try? await Deadline.run(connection: limit, total: limit) { (gate: Deadline.Gate<Int64?>) in
            gate.sending()
            let rows = try await connection.query(
                "SELECT NOT pg_is_in_recovery() AND current_setting('default_transaction_read_only') = 'off'",
                logger: logger
            ).collect()
            guard try rows.first?.decode(Bool.self) == true else { return nil }
            let timeline = try? await connection.query(
                "SELECT timeline_id::int8 FROM pg_control_checkpoint()", logger: logger
            ).collect().first?.decode(Int64.self)
            return timeline ?? 0
        }
        return answer ?? nil
    }
}
