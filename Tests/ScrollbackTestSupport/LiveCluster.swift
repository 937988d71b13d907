import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackModels
import ScrollbackServer
import ScrollbackStore
import ServiceLifecycle

/// One or more Scrollback instances on loopback sharing one fresh schema, each
/// run as `runScrollback` runs it (store, server, live delivery under one
/// service group), for end-to-end tests of the live stream and the client kit.
public final class LiveCluster: Sendable {
    /// The signing secret of every instance.
    public static let secret = "test-secret-for-the-http-suite-" + String(repeating: "0123456789", count: 4)

    /// A server on a free loopback port, signing with `secret`, without rate
    /// limits (tests send as fast as they can) and with a long idle timeout
    /// (the test client does not reopen a connection the server closed, and
    /// on a busy machine a test may set data up for minutes); the limits' own
    /// tests set theirs.
    public static var configuration: ScrollbackConfiguration {
        var configuration = ScrollbackConfiguration()
        configuration.port = 0
        configuration.jwtSecret = secret
        configuration.rateLimits = .off
        configuration.connections.idleTimeout = .seconds(3600)
        return configuration
    }

    public struct Instance: Sendable {
        public let port: Int
        public let store: ScrollbackStore
        public let live: LiveDelivery
        public let group: ServiceGroup
        let done: Task<Void, any Error>

        public var baseURL: String { "http://127.0.0.1:\(port)" }
    }

    /// The running instances, replaced on restart.
    private let running = NIOLockedValueBox<[Instance]>([])
    public let tokens: TokenAuthority
    public let url: DatabaseURL
    public let schema: String
    private let options: LiveOptions
    private let logger: Logger
    private let configuration: ScrollbackConfiguration
    private let storeOptions: @Sendable (inout StoreOptions) -> Void

    public var instances: [Instance] { running.withLockedValue { $0 } }
    /// The first instance's store, for setting up conversations.
    public var store: ScrollbackStore { instances[0].store }

    private init(
        url: DatabaseURL, schema: String, options: LiveOptions, logger: Logger, configuration: ScrollbackConfiguration,
        tokens: TokenAuthority, storeOptions: @escaping @Sendable (inout StoreOptions) -> Void
    ) {
        self.storeOptions = storeOptions
        self.url = url
        self.schema = schema
        self.options = options
        self.logger = logger
        self.configuration = configuration
        self.tokens = tokens
    }

    /// `database`: the instances' `DATABASE_URL` (the test database's by
    /// default; the schema is made on its first server); `store` adjusts
    /// each instance's store options (replicas, for one).
    public static func run(
        instances count: Int = 1, options: LiveOptions = LiveOptions(), logger: Logger? = nil,
        database: DatabaseURL? = nil,
        configure: (inout ScrollbackConfiguration) -> Void = { _ in },
        store storeOptions: @escaping @Sendable (inout StoreOptions) -> Void = { _ in },
        _ test: @escaping @Sendable (LiveCluster) async throws -> Void
    ) async throws {
        let logger = logger ?? {
            var logger = Logger(label: "scrollback.tests.live")
            logger.logLevel = .warning
            return logger
        }()
        var configuration = Self.configuration
        configure(&configuration)
        try await TestDatabase.withSchema(on: database.map { $0.on($0.endpoints[0]) }) { url, schema in
            let cluster = LiveCluster(
                url: database ?? url, schema: schema, options: options, logger: logger, configuration: configuration,
                tokens: try await TokenAuthority(secret: Self.secret), storeOptions: storeOptions)
            for index in 0..<count {
                let instance = try await cluster.startOnAPrivatePort(migrate: index == 0)
                cluster.running.withLockedValue { $0.append(instance) }
            }
            let outcome: Result<Void, any Error>
            do {
                outcome = .success(try await test(cluster))
            } catch {
                outcome = .failure(error)
            }
            var stopped: Result<Void, any Error> = .success(())
            for instance in cluster.instances {
                do { try await cluster.stop(instance) } catch let overdue as ShutdownOverdue { stopped = .failure(overdue) } catch {}
            }
            try outcome.get()
            try stopped.get()
        }
    }

    /// Stops instance `index` gracefully and starts a new one on the same port.
    public func restart(_ index: Int, downtime: Duration = .zero, whileDown: () async throws -> Void = {})
        async throws
    {
        let old = instances[index]
        try await stop(old)
        try await whileDown()
        try await Task.sleep(for: downtime)
        // The old listener's port can take a moment to be free again after
        // the stop: a bind that finds it taken is tried again for a while.
        var attempt = 0
        while true {
            do {
                let restarted = try await start(port: old.port, migrate: false)
                running.withLockedValue { $0[index] = restarted }
                return
            } catch is StartFailure where attempt < 20 {
                attempt += 1
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    /// Starts an instance on a port below the kernel's ephemeral range
    /// (32768 and up), chosen at random and tried again when taken. A
    /// restart binds the same port again; a port the kernel hands out for
    /// port 0 or for a client's connection could meanwhile be taken by any
    /// other test, and the restarted instance could not start.
    /// A port is the instance's for the rest of the test process, so the
    /// instances of other tests never pick it while it is down for a restart.
    private func startOnAPrivatePort(migrate: Bool) async throws -> Instance {
        var failures: [String] = []
        for _ in 0..<20 {
            let port = Self.reservePort()
            do {
                return try await start(port: port, migrate: migrate)
            } catch let failure as StartFailure {
                failures.append(failure.description)
            }
        }
        throw StartFailure(port: 0, reason: "no free port in 20 tries: \(failures)")
    }

    private static let reservedPorts = NIOLockedValueBox<Set<Int>>([])

    /// A port in 20000..<32000 that no instance of this process has had.
    private static func reservePort() -> Int {
        reservedPorts.withLockedValue { reserved in
            while true {
                let port = Int.random(in: 20_000..<32_000)
                if reserved.insert(port).inserted { return port }
            }
        }
    }

    private func start(port: Int, migrate: Bool) async throws -> Instance {
        var storeOptions = StoreOptions(
            maximumConnections: 4, statementTimeout: TestDatabase.patientTimeout,
            lockTimeout: TestDatabase.patientTimeout, searchPath: schema)
        self.storeOptions(&storeOptions)
        let store = ScrollbackStore(url: url, options: storeOptions, logger: logger)
        let live = LiveDelivery(store: store, options: options, logger: logger)
        let (ports, portReported) = AsyncStream<Int>.makeStream()
        var configuration = self.configuration
        configuration.port = port
        let app = try await buildApplication(
            configuration: configuration, store: store, logger: logger, migrateOnStart: migrate, live: live,
            onServerRunning: { portReported.yield($0) })
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: store), .init(service: app), .init(service: live)], logger: logger))
        let done = Task { try await group.run() }
        // An instance that ends before it reports its port (its port is
        // taken) ends the wait with its error, instead of leaving it waiting.
        Task {
            _ = await done.result
            portReported.finish()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            let reason: String
            do {
                try await done.value
                reason = "it stopped before it listened"
            } catch {
                reason = "\(error)"
            }
            throw StartFailure(port: port, reason: reason)
        }
        let instance = Instance(port: bound, store: store, live: live, group: group, done: done)
        // Started means ready: sends made before the listener connects reach
        // subscribers only by its first catch-up, which tests should not
        // depend on by accident.
        try await Self.untilListening(instance)
        return instance
    }

    /// Waits until instance `index`'s change-feed listener is connected
    /// (what `/readyz` reports), as after a reconnect.
    public func untilListening(_ index: Int = 0) async throws {
        try await Self.untilListening(instances[index])
    }

    private static func untilListening(_ instance: Instance, within limit: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + limit
        while await !instance.live.isListening {
            guard ContinuousClock.now < deadline else { throw NotListening(port: instance.port) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    struct NotListening: Error, CustomStringConvertible {
        var port: Int
        var description: String { "the instance on port \(port) did not connect its change-feed listener in time" }
    }

    /// Stops an instance gracefully, as SIGTERM does. A graceful stop that
    /// has not ended after `limit` is a fault (something the server waits on
    /// never ends): the instance is then cancelled and left behind, and the
    /// test fails with that rather than hanging the run.
    private func stop(_ instance: Instance, within limit: Duration = .seconds(60)) async throws {
        await instance.group.triggerGracefulShutdown()
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, any Error>?, Never>) in
            let first = NIOLockedValueBox<CheckedContinuation<Result<Void, any Error>?, Never>?>(continuation)
            let watchdog = Task {
                try await Task.sleep(for: limit)
                instance.done.cancel()
                first.withLockedValue { $0.take() }?.resume(returning: nil)
            }
            Task {
                let result = await instance.done.result
                watchdog.cancel()
                first.withLockedValue { $0.take() }?.resume(returning: result)
            }
        }
        guard let outcome else { throw ShutdownOverdue(port: instance.port, limit: limit) }
        try outcome.get()
    }

    struct StartFailure: Error, CustomStringConvertible {
        var port: Int
        var reason: String
        var description: String { "an instance did not start on port \(port): \(reason)" }
    }

    struct ShutdownOverdue: Error, CustomStringConvertible {
        var port: Int
        var limit: Duration
        var description: String { "the instance on port \(port) had not stopped \(limit) after a graceful shutdown began" }
    }

    public func token(_ user: String, ttl: TimeInterval = 600) async throws -> String {
        try await tokens.token(for: user, ttl: ttl)
    }

    /// A conversation of `creator` with `members`.
    public func conversation(_ creator: String, members: [String]) async throws -> UUID {
        try await store.createConversation(
            creator: UserID(rawValue: creator), title: nil, members: members.map(UserID.init(rawValue:))
        ).id
    }

    /// Stores messages 1...`count` from `sender` in bulk with SQL (far
    /// faster than sending them), as a conversation that is `count` long.
    public func insertMessages(_ count: Int, into id: UUID, from sender: String) async throws {
        _ = try await TestDatabase.admin(url) { connection in
            try await connection.query(
                """
                WITH ins AS (
                    INSERT INTO \(unescaped: schema).messages (conversation_id, seq, sender, body, version)
                    SELECT \(id), n, \(sender), 'bulk ' || n, n FROM generate_series(1, \(count)) n
                )
                UPDATE \(unescaped: schema).conversations SET last_seq = \(count), version = \(count)
                WHERE id = \(id)
                """,
                logger: connection.logger
            ).collect()
        }
    }

    /// Sends `count` messages through the store of instance `index`.
    public func send(_ count: Int, to id: UUID, as user: String, from index: Int = 0, prefix: String = "m") async throws {
        for n in 0..<count {
            _ = try await instances[index].store.send(
                to: id, from: UserID(rawValue: user), body: "\(prefix) \(n)", clientID: nil)
        }
    }
}
