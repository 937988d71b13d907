import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackModels
import ServiceLifecycle

/// PostgreSQL access for the service: every SQL statement lives in this module.
///
/// The store owns its connection pool and runs it as a `Service` (the
/// application's service group starts it, and stops it after the HTTP
/// server). Each operation is one statement (one round trip) where possible,
/// binds its values through PostgresNIO's interpolation, reads its result to
/// the end before answering, and is bounded by the database's own
/// `statement_timeout` and `lock_timeout` (see `StoreOptions`).
public struct ScrollbackStore: Service {
    /// The pool of the server that takes writes (it may move: see `PrimaryPool`).
    let primary: PrimaryPool
    /// Streaming replicas that serve reads; nil without any.
    let replicas: ReplicaSet?
    let url: DatabaseURL
    let logger: Logger
    let options: StoreOptions
    let metrics: StoreMetrics
    let knownUsers = KnownUsers()
    let reachability = Reachability()
    /// The text search configuration, once set or read (see `searchConfiguration()`).
    let searchConfigurationCache = NIOLockedValueBox<String?>(nil)
    /// Newest pages kept while the change feed proves them current.
    let pageCache: PageCache
    /// Profiles kept while the change feed proves them current.
    let profileCache: ProfileCache
    /// Sends committed together; nil when grouping is off.
    let sendGroups: SendGroups?

    /// `metrics` receives the pool's gauges, each operation's latency and
    /// the timeouts (see the metrics in docs/operations.md); by default they go nowhere.
    public init(
        url: DatabaseURL, options: StoreOptions = StoreOptions(),
        metrics: any MetricsFactory = NOOPMetricsHandler.instance, logger: Logger
    ) {
        self.primary = PrimaryPool(url: url, options: options, logger: logger)
        self.replicas =
            options.replicas.isEmpty
            ? nil : ReplicaSet(urls: options.replicas, options: options, factory: metrics, logger: logger)
        self.url = url
        self.logger = logger
        self.options = options
        self.metrics = StoreMetrics(factory: metrics, poolSize: options.maximumConnections)
        self.pageCache = PageCache(capacity: max(options.pageCacheBytes, 0), factory: metrics)
        self.profileCache = ProfileCache(capacity: options.pageCacheBytes > 0 ? 100_000 : 0)
        self.sendGroups =
            options.sendGroupSize > 1 ? SendGroups(size: options.sendGroupSize, wait: options.sendGroupWait) : nil
    }

    /// Runs the connection pools (the primary's and the replicas'), and
    /// the watch of which server is the primary and of what the replicas
    /// have replayed, until the task is cancelled or the service group
    /// shuts down.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withDiscardingTaskGroup { group in
                group.addTask { await primary.watch(interval: options.replicaPollInterval) }
                if let replicas {
                    group.addTask { await replicas.run(primary: primary, interval: options.replicaPollInterval) }
                }
                // In this task: the pool runs as soon as the store does.
                await primary.run()
            }
        }
    }

    /// Whether the database answers (`/readyz`).
    public func ping() async -> Bool {
        do {
            let rows = try await rows("SELECT 1", writes: false, as: .ping)
            return try rows.first?.decode(Int.self) == 1
        } catch {
            return false
        }
    }

    /// Forgets that this process recorded `user` (they were erased, here
    /// or on another instance): their next request records them anew.
    public func forgetKnownUser(_ user: UserID) {
        knownUsers.forget(user)
    }

}

/// Users already recorded by this process, with the profile claims of
/// their token as last recorded, so most requests skip the upsert (a lock,
/// not an actor: no hop on every request). Bounded: when full it forgets
/// everything and relearns (an upsert is cheap).
struct KnownUsers: Sendable {
    private let ids = NIOLockedValueBox([UserID: TokenProfile]())
    private let capacity = 100_000

    func contains(_ id: UserID, token: TokenProfile) -> Bool { ids.withLockedValue { $0[id] == token } }

    func forget(_ id: UserID) { _ = ids.withLockedValue { $0.removeValue(forKey: id) } }

    func insert(_ id: UserID, token: TokenProfile) {
        ids.withLockedValue { ids in
            if ids.count >= capacity { ids.removeAll(keepingCapacity: true) }
            ids[id] = token
        }
    }
}
