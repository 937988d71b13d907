import Hummingbird
import Logging
import NIOCore

/// The metrics server: `GET /metrics` in Prometheus's text format (0.0.4),
/// on a port of its own (`SCROLLBACK_METRICS_PORT`) so that it is never
/// public by accident with the API. It reads `metrics`, and `live`'s
/// sockets and queues when scraped. Not part of the public API
/// (`openapi.yaml`). The caller runs it, as `runScrollback` does;
/// `onServerRunning` gets the bound port (port 0 picks a free one).
public func buildMetricsApplication(
    metrics: ScrollbackMetrics, live: LiveDelivery, host: String, port: Int, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) -> some ApplicationProtocol {
    var logger = logger
    logger[metadataKey: "listener"] = "metrics"
    let router = Router()
    router.get("metrics") { _, _ -> Response in
        let text = await metrics.exposition(of: live)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: text)))
    }
    return Application(
        router: router,
        configuration: .init(address: .hostname(host, port: port), serverName: "scrollback-metrics"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger)
}
