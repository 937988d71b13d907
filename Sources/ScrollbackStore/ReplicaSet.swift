import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackModels

/// Streaming replicas (`SCROLLBACK_REPLICA_URLS`) and what each has replayed.
///
/// Every `interval` the poller reads the primary's WAL insert position and
/// keeps it with the time it asked: a sample `(t, L)` says that every commit
/// answered before `t` ends at or before `L`. It then reads how far each
/// replica has replayed, and a replica's `caughtUpAt` becomes the time of the
/// newest sample it has replayed past: it holds every commit answered
/// before then. So routing a read asks no server anything: a replica serves
/// a user whose last write through this instance was answered before its
/// `caughtUpAt`, while it answers its polls and its `caughtUpAt` is within
/// `maxLag`. A client that wrote through another instance, or holds live
/// frames, sends `min_version`; a replica's page or change set below it is
/// read again from the primary (see `ScrollbackStore.replicated`), as is
/// any read a replica fails.
final class ReplicaSet: Sendable {
    final class Replica: Sendable {
        struct State: Sendable {
            var up = false
            var replayed: Int64 = 0
            var caughtUpAt: ContinuousClock.Instant?
            var served = 0
            var fellBack = 0
        }

        let endpoint: DatabaseURL.Endpoint
        let url: DatabaseURL
        let options: StoreOptions
        /// Its place in the list, from 1 (`/readyz` and `/metrics` name it so).
        let name: String
        let client: PostgresClient
        let state = NIOLockedValueBox(State())
        let upGauge: Gauge
        let lagGauge: Gauge
        let servedCounter: Counter
        let fellBackCounter: Counter

        init(url: DatabaseURL, name: String, options: StoreOptions, factory: any MetricsFactory, logger: Logger) {
            endpoint = url.endpoints[0]
            self.url = url
            self.options = options
            self.name = name
            client = PostgresClient(configuration: url.clientConfiguration(options), backgroundLogger: logger)
            let label = [("replica", name)]
            upGauge = Gauge(label: "scrollback_replica_up", dimensions: label, factory: factory)
            lagGauge = Gauge(label: "scrollback_replica_lag_seconds", dimensions: label, factory: factory)
            servedCounter = Counter(
                label: "scrollback_replica_reads_total", dimensions: label + [("result", "served")], factory: factory)
            fellBackCounter = Counter(
                label: "scrollback_replica_reads_total", dimensions: label + [("result", "primary")], factory: factory)
            upGauge.record(0)
        }

        /// In the rotation, and holding every commit answered before `wrote`.
        func serves(after wrote: ContinuousClock.Instant?, now: ContinuousClock.Instant, maxLag: Duration) -> Bool {
            state.withLockedValue { state in
                guard state.up, let caughtUpAt = state.caughtUpAt, now - caughtUpAt <= maxLag else { return false }
                return wrote.map { caughtUpAt > $0 } ?? true
            }
        }

        func served() {
            state.withLockedValue { $0.served += 1 }
            servedCounter.increment()
        }

        /// A read it took that the primary answered after all.
        func fellBack() {
            state.withLockedValue { $0.fellBack += 1 }
            fellBackCounter.increment()
        }

        func markDown() {
            state.withLockedValue { $0.up = false }
            upGauge.record(0)
        }
    }

    let replicas: [Replica]
    let maxLag: Duration
    let writers: RecentWriters
    private let samples = NIOLockedValueBox<[(at: ContinuousClock.Instant, lsn: Int64)]>([])
    private let turn = NIOLockedValueBox(0)
    private let logger: Logger

    init(urls: [DatabaseURL], options: StoreOptions, factory: any MetricsFactory, logger: Logger) {
        replicas = urls.enumerated().map {
            Replica(url: $1, name: "\($0 + 1)", options: options, factory: factory, logger: logger)
        }
        maxLag = options.replicaMaxLag
        writers = RecentWriters(window: options.replicaMaxLag)
        self.logger = logger
    }

    /// A replica that may serve `user` now, taken in turn; nil for the primary.
    func choose(for user: UserID) -> Replica? {
        let now = ContinuousClock.now
        let wrote = writers.lastWrite(of: user)
        let usable = replicas.filter { $0.serves(after: wrote, now: now, maxLag: maxLag) }
        guard !usable.isEmpty else { return nil }
        let index = turn.withLockedValue { turn in
            defer { turn &+= 1 }
            return turn
        }
        return usable[Int(UInt(bitPattern: index) % UInt(usable.count))]
    }

    var statuses: [ReplicaStatus] {
        let now = ContinuousClock.now
        return replicas.map { replica in
            let state = replica.state.withLockedValue { $0 }
            return ReplicaStatus(
                replica: replica.name, up: state.up,
                inRotation: replica.serves(after: nil, now: now, maxLag: maxLag),
                lagSeconds: state.caughtUpAt.map { Double((now - $0).nanoseconds) / 1e9 },
                served: state.served, fellBack: state.fellBack)
        }
    }

    /// Runs the replicas' pools and the poller until the task is cancelled.
    func run(primary: PrimaryPool, interval: Duration) async {
        await withDiscardingTaskGroup { group in
            for replica in replicas {
                group.addTask { await replica.client.run() }
            }
            group.addTask { [self] in
                var probes = Probes(replicas: replicas.count)
                // The first poll once the pools run.
                while (try? await Task.sleep(for: interval)) != nil {
                    probes = await poll(primary, probes)
                }
                await probes.close()
            }
        }
    }

    /// The poller's own connections: one to the primary (of the
    /// generation it was opened for), one to each replica. Never the
    /// request pools': a saturated pool would stop the polls, and every
    /// replica would leave the rotation just when the primary is busiest.
    struct Probes: Sendable {
        var primary: (generation: Int, connection: PostgresConnection)?
        var replicas: [PostgresConnection?]

        init(replicas count: Int) {
            replicas = Array(repeating: nil, count: count)
        }

        func close() async {
            try? await primary?.connection.close()
            for connection in replicas { try? await connection?.close() }
        }
    }

    /// One round: the primary's position, then each replica's replay.
    func poll(_ primary: PrimaryPool, _ probes: Probes) async -> Probes {
        var probes = probes
        let current = primary.current
        if let held = probes.primary, held.generation != current.generation {
            // A move to a promoted standby: positions of the old primary's
            // timeline say nothing of the new one's commits.
            try? await held.connection.close()
            probes.primary = nil
            forgetPositions()
        }
        let asked = ContinuousClock.now
        let (connection, lsn) = await Self.position(
            "SELECT (pg_current_wal_insert_lsn() - '0/0')::int8", probe: probes.primary?.connection, logger: logger
        ) { try await primary.connect(to: current.endpoint, applicationName: "scrollback-replica-poll") }
        probes.primary = connection.map { (current.generation, $0) }
        if let lsn {
            samples.withLockedValue { samples in
                if let last = samples.last, last.lsn >= lsn {
                    samples[samples.count - 1].at = asked
                } else {
                    samples.append((asked, lsn))
                }
                // Older than the lag allowed: a replica that has only those is out anyway.
                let horizon = asked - maxLag - .seconds(1)
                if let keep = samples.firstIndex(where: { $0.at >= horizon }), keep > 0 {
                    samples.removeFirst(min(keep, samples.count - 1))
                }
            }
        }
        let answers = await withTaskGroup(of: (Int, PostgresConnection?, Int64?).self) { group in
            for (index, replica) in replicas.enumerated() {
                let probe = probes.replicas[index]
                group.addTask { [logger] in
                    let (connection, replayed) = await Self.position(
                        "SELECT CASE WHEN pg_is_in_recovery() THEN (pg_last_wal_replay_lsn() - '0/0')::int8 END",
                        probe: probe, logger: logger
                    ) {
                        var configuration = try replica.url.connectionConfiguration(
                            replica.options, applicationName: "scrollback-replica-poll")
                        configuration.options.connectTimeout = .seconds(1)
                        return try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                    }
                    return (index, connection, replayed)
                }
            }
            var answers: [(Int, PostgresConnection?, Int64?)] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        for (index, connection, replayed) in answers {
            probes.replicas[index] = connection
            update(replicas[index], replayed: replayed)
        }
        writers.prune()
        return probes
    }

    /// After the primary moved: no sample, and no replica caught up, until
    /// the next polls say so again.
    private func forgetPositions() {
        samples.withLockedValue { $0.removeAll() }
        for replica in replicas {
            replica.state.withLockedValue { $0.caughtUpAt = nil }
        }
    }

    private func update(_ replica: Replica, replayed: Int64?) {
        let sample = samples.withLockedValue { samples in
            replayed.flatMap { replayed in samples.last { $0.lsn <= replayed } }
        }
        let now = ContinuousClock.now
        let (wasUp, state) = replica.state.withLockedValue { state in
            let wasUp = state.up
            // Null replay: the server is not (or no longer) a standby.
            state.up = replayed != nil
            if let replayed { state.replayed = replayed }
            if let sample, sample.at > state.caughtUpAt ?? .now - .seconds(86_400) { state.caughtUpAt = sample.at }
            return (wasUp, state)
        }
        replica.upGauge.record(state.up ? 1 : 0)
        if let caughtUpAt = state.caughtUpAt {
            replica.lagGauge.record(Double((now - caughtUpAt).nanoseconds) / 1e9)
        }
        if wasUp != state.up {
            logger.notice(
                state.up ? "a replica answers" : "a replica stopped answering (or is no longer a standby)",
                metadata: ["replica": "\(replica.name)", "server": "\(replica.endpoint)"])
        }
    }

    /// One bigint a trivial statement answers on `probe` (opened with
    /// `connect` when there is none), and the connection to keep; nil, and
    /// no connection, when the server does not answer within a second (or
    /// the value when it answers null).
    private static func position(
        _ sql: PostgresQuery, probe: PostgresConnection?, logger: Logger,
        connect: @escaping @Sendable () async throws -> PostgresConnection
    ) async -> (PostgresConnection?, Int64?) {
        let limit = Duration.seconds(1)
        let opened = NIOLockedValueBox<PostgresConnection?>(nil)
        do {
            return try await Deadline.run(connection: limit, total: limit) { (gate: Deadline.Gate<(PostgresConnection?, Int64?)>) in
                let connection: PostgresConnection
                if let probe, !probe.isClosed {
                    connection = probe
                } else {
                    connection = try await connect()
                    opened.withLockedValue { $0 = connection }
                }
                gate.sending()
                let rows = try await connection.query(sql, logger: logger).collect()
                return (connection, try rows.first?.decode(Int64?.self) ?? nil)
            }
        } catch {
            // Not answered in time, or failed: a new connection next time.
            try? await probe?.close()
            try? await opened.withLockedValue({ $0 })?.close()
            return (nil, nil)
        }
    }
}

/// When each user's last write through this instance was answered, for
/// as long as a replica in the rotation might not hold it yet (`window`,
/// the lag allowed: a replica whose `caughtUpAt` is older is out anyway).
/// Bounded: when full of recent writers it keeps one time for everyone
/// instead (every read then waits for the replicas to pass it).
final class RecentWriters: Sendable {
    private struct State {
        var last: [UserID: ContinuousClock.Instant] = [:]
        var everyone: ContinuousClock.Instant?
    }

    let window: Duration
    let capacity: Int
    private let state = NIOLockedValueBox(State())

    init(window: Duration, capacity: Int = 100_000) {
        self.window = window
        self.capacity = capacity
    }

    func note(_ user: UserID) {
        let now = ContinuousClock.now
        state.withLockedValue { state in
            if state.last.count >= capacity {
                Self.prune(&state, now: now, window: window)
                if state.last.count >= capacity {
                    state.last.removeAll(keepingCapacity: true)
                    state.everyone = now
                }
            }
            state.last[user] = now
        }
    }

    func lastWrite(of user: UserID) -> ContinuousClock.Instant? {
        state.withLockedValue { state in
            switch (state.last[user], state.everyone) {
            case let (mine?, everyone?): max(mine, everyone)
            case let (mine, everyone): mine ?? everyone
            }
        }
    }

    var count: Int { state.withLockedValue { $0.last.count } }

    func prune() {
        let now = ContinuousClock.now
        state.withLockedValue { Self.prune(&$0, now: now, window: window) }
    }

    private static func prune(_ state: inout State, now: ContinuousClock.Instant, window: Duration) {
        let horizon = now - window
        if !state.last.isEmpty { state.last = state.last.filter { $0.value >= horizon } }
        if let everyone = state.everyone, everyone < horizon { state.everyone = nil }
    }
}
