import Metrics
import NIOConcurrencyHelpers
import Prometheus

/// The metrics of one instance, in a Prometheus registry of its own (never
/// swift-metrics' global system: a process may run several applications,
/// as the tests do). The application records requests and live delivery
/// into it; the store records into `factory`, given to it at creation; the
/// metrics application (`buildMetricsApplication`) writes it out. The
/// metrics section of docs/operations.md lists every metric.
///
/// Every handle is made once with fixed label names, at start or on the
/// first use of a label value, and kept: recording never registers
/// anything, and no name is ever registered twice with different labels.
public final class ScrollbackMetrics: Sendable {
    /// Where every metric is registered.
    public let registry: PrometheusCollectorRegistry
    /// The registry as a swift-metrics factory, for the store:
    /// `ScrollbackStore(url:options:metrics: metrics.factory, logger:)`.
    public let factory: PrometheusMetricsFactory
    let http: HTTPMetrics
    let live: LiveMetrics
    let outbox: OutboxMetrics
    private let rateLimits: LabeledCounters
    private let refusals: LabeledCounters

    /// The rate limits' kinds, counted from zero.
    static let rateLimitKinds = ["send", "conversation", "member", "typing", "subscribe", "upload"]
    /// What a refused connection was.
    static let connectionKinds = ["http", "socket", "timed_out", "body_too_large", "malformed"]

    /// The buckets of every latency histogram: from half a millisecond (a
    /// page from a warm cache) to ten seconds (past the statement timeout).
    static let latencyBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.latencyBuckets
        self.factory = factory
        http = HTTPMetrics(factory: factory)
        live = LiveMetrics(factory: factory)
        outbox = OutboxMetrics(factory: factory)
        rateLimits = LabeledCounters("scrollback_rate_limited_total", label: "kind", Self.rateLimitKinds, factory)
        refusals = LabeledCounters(
            "scrollback_refused_connections_total", label: "kind", Self.connectionKinds, factory)
    }

    /// A request or frame refused by a rate limit: `kind` is send,
    /// conversation, member, typing or subscribe.
    public func rateLimited(kind: String) {
        rateLimits.increment(kind)
    }

    /// A connection refused by the connection cap (`kind` http or socket),
    /// or cut for a request that arrived too slowly (timed_out) or whose
    /// body passed the limit (body_too_large), or whose framing could not be
    /// read (malformed).
    public func refusedConnection(kind: String) {
        refusals.increment(kind)
    }

    /// The Prometheus text exposition, with the gauges that are read when
    /// scraped (`live`'s sockets, subscriptions and queues) read now.
    func exposition(of delivery: LiveDelivery) async -> [UInt8] {
        live.observe(await delivery.hub.statistics(), listening: await delivery.isListening)
        return registry.emitToBuffer()
    }
}
