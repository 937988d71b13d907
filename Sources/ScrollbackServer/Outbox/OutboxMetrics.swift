import Metrics
import ScrollbackStore

/// The outbox's metrics, per sink: events delivered and their delay from
/// the change, failed attempts, events that died, and the backlog read from
/// the database (pending, dead, the oldest pending event's age).
final class OutboxMetrics: Sendable {
    private let deliveredCounters: LabeledCounters
    private let failures: LabeledCounters
    private let deaths: LabeledCounters
    private let delays: [OutboxSink: CoreMetrics.Timer]
    private let pending: [OutboxSink: Gauge]
    private let dead: [OutboxSink: Gauge]
    private let oldest: [OutboxSink: Gauge]

    init(factory: any MetricsFactory) {
        let sinks = OutboxSink.allCases.map(\.rawValue)
        deliveredCounters = LabeledCounters("scrollback_outbox_delivered_total", label: "sink", sinks, factory)
        failures = LabeledCounters("scrollback_outbox_failed_attempts_total", label: "sink", sinks, factory)
        deaths = LabeledCounters("scrollback_outbox_died_total", label: "sink", sinks, factory)
        func gauges(_ name: String) -> [OutboxSink: Gauge] {
            Dictionary(uniqueKeysWithValues: OutboxSink.allCases.map {
                ($0, Gauge(label: name, dimensions: [("sink", $0.rawValue)], factory: factory))
            })
        }
        delays = Dictionary(uniqueKeysWithValues: OutboxSink.allCases.map {
            ($0, CoreMetrics.Timer(label: "scrollback_outbox_delivery_delay_seconds", dimensions: [("sink", $0.rawValue)], factory: factory))
        })
        pending = gauges("scrollback_outbox_pending")
        dead = gauges("scrollback_outbox_dead")
        oldest = gauges("scrollback_outbox_oldest_pending_seconds")
    }

    func delivered(_ sink: OutboxSink, latency seconds: Double) {
        deliveredCounters.increment(sink.rawValue)
        delays[sink]?.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    func failed(_ sink: OutboxSink, dead died: Bool) {
        failures.increment(sink.rawValue)
        if died { deaths.increment(sink.rawValue) }
    }

    func observe(_ sink: OutboxSink, _ counts: OutboxCounts) {
        pending[sink]?.record(Double(counts.pending))
        dead[sink]?.record(Double(counts.dead))
        oldest[sink]?.record(counts.oldestPendingSeconds)
    }
}
