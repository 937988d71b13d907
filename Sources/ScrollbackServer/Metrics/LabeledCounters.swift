import Metrics
import NIOConcurrencyHelpers
import Prometheus

/// One counter per value of a label: the expected values from the start
/// (so they read 0 before the first event), any other on first use.
final class LabeledCounters: Sendable {
    private let name: String
    private let label: String
    private let factory: any MetricsFactory
    private let counters: NIOLockedValueBox<[String: CoreMetrics.Counter]>

    init(_ name: String, label: String, _ values: [String], _ factory: any MetricsFactory) {
        self.name = name
        self.label = label
        self.factory = factory
        counters = NIOLockedValueBox(
            Dictionary(
                uniqueKeysWithValues: values.map {
                    ($0, CoreMetrics.Counter(label: name, dimensions: [(label, $0)], factory: factory))
                }))
    }

    func increment(_ value: String) {
        counter(value).increment()
    }

    func counter(_ value: String) -> CoreMetrics.Counter {
        counters.withLockedValue { counters in
            if let counter = counters[value] { return counter }
            let counter = CoreMetrics.Counter(label: name, dimensions: [(label, value)], factory: factory)
            counters[value] = counter
            return counter
        }
    }
}
