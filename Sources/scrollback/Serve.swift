import Foundation
import ArgumentParser
import ScrollbackServer
import ScrollbackStore

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP server (on the embedded PostgreSQL unless DATABASE_URL is set).",
        discussion: "Every setting is an environment variable; see the configuration table in docs/operations.md.")

    @Option(help: "Address to listen on (overrides HOST; default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (overrides PORT; default 8080).")
    var port: String?

    @Option(name: .customLong("log-level"), help: "Log level (overrides LOG_LEVEL; default info).")
    var logLevel: String?

    @Option(
        name: .customLong("metrics-port"),
        help: "Port of GET /metrics, on the same host (overrides SCROLLBACK_METRICS_PORT; default none).")
    var metricsPort: String?

    @Flag(help: "Serve the web client at / and a route that mints demo tokens (loopback addresses only).")
    var demo = false

    @Flag(name: .customLong("demo-public"), help: "With --demo, allow a non-loopback address (anyone may then mint tokens).")
    var demoPublic = false

    func run() async throws {
        var flags: [String: String] = [:]
        if demo { flags["SCROLLBACK_DEMO"] = "1" }
        if demoPublic { flags["SCROLLBACK_DEMO_PUBLIC"] = "1" }
        flags["HOST"] = host
        flags["PORT"] = port
        flags["LOG_LEVEL"] = logLevel
        flags["SCROLLBACK_METRICS_PORT"] = metricsPort
        // Before the settings: the default connection cap follows the file limit.
        ConnectionLimits.raiseFileLimit()
        let configuration = try Startup.configuration(overrides: flags)
        let logger = configuration.logger("scrollback")
        logger.info(
            "limits",
            metadata: [
                "max_connections": "\(configuration.connections.maxConnections)",
                "max_sockets": "\(configuration.liveOptions.maxSockets)",
                "max_body_bytes": "\(configuration.connections.maxBodyBytes)",
                "max_response_bytes": "\(configuration.store.maxResponseBytes)",
                "page_cache_bytes": "\(configuration.store.pageCacheBytes)",
                "send_group_size": "\(configuration.store.sendGroupSize)",
                "send_group_wait": "\(configuration.store.sendGroupWait)",
                "rate_limits": "\(RateLimitedAction.allCases.map { "\($0.rawValue) \(configuration.rateLimits[$0])" }.joined(separator: ", "))",
            ])
        let database = try Startup.database(configuration, logger: logger)
        defer { if let (launcher, running) = database.embedded { launcher.stop(running) } }
        logger.info("using database", metadata: ["url": "\(database.url.redacted)"])
        let metrics = ScrollbackMetrics()
        let store = ScrollbackStore(
            url: database.url, options: configuration.store, metrics: metrics.factory, logger: logger)
        if configuration.demo {
            let shown = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
            // Written at once (print buffers when the output is a file or a pipe).
            FileHandle.standardOutput.write(
                Data("The demo is at http://\(shown):\(configuration.port)/ (open it in two windows as two users)\n".utf8))
        }
        try await runScrollback(configuration: configuration, store: store, metrics: metrics, logger: logger)
    }
}
