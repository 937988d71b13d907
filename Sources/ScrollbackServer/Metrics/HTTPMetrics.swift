import HTTPTypes
import Metrics
import NIOConcurrencyHelpers

/// The handles of `scrollback_http_requests_total` and
/// `scrollback_http_request_duration_seconds`, one pair per method, route
/// and status seen, made on first use and kept: a request then costs one
/// lookup under a lock, not a registration in the Prometheus registry.
///
/// The label values are bounded: the route is the router's pattern (never
/// the path, which holds ids), or `unmatched`; a method outside the
/// standard ones is `other`.
final class HTTPMetrics: Sendable {
    private struct Key: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    private struct Series {
        let requests: Counter
        let duration: Timer
    }

    private let series = NIOLockedValueBox<[Key: Series]>([:])
    private let factory: any MetricsFactory

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func record(method: HTTPRequest.Method, route: String?, status: Int, duration: Duration) {
        // Hummingbird names the not-found responder's route `NotFound`.
        let route = route.flatMap { $0 == "NotFound" ? nil : $0 } ?? "unmatched"
        let key = Key(method: Self.label(method), route: route, status: status)
        let series = self.series.withLockedValue { series in
            if let known = series[key] { return known }
            let made = Series(
                requests: Counter(
                    label: "scrollback_http_requests_total",
                    dimensions: [("method", key.method), ("route", key.route), ("status", String(status))],
                    factory: factory),
                duration: Timer(
                    label: "scrollback_http_request_duration_seconds",
                    dimensions: [("method", key.method), ("route", key.route)], factory: factory))
            series[key] = made
            return made
        }
        series.requests.increment()
        series.duration.record(duration: duration)
    }

    private static func label(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get: "GET"
        case .head: "HEAD"
        case .post: "POST"
        case .put: "PUT"
        case .patch: "PATCH"
        case .delete: "DELETE"
        case .options: "OPTIONS"
        default: "other"
        }
    }
}
