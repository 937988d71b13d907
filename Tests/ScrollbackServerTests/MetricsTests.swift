import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import ServiceLifecycle
import Testing

@Suite struct MetricsTests {
    static let logger: Logger = {
        var logger = Logger(label: "scrollback.tests.metrics")
        logger.logLevel = .warning
        return logger
    }()

    @Test func theMetricsPortIsOffByDefaultAndReadLikeThePort() throws {
        #expect(try ScrollbackConfiguration(environment: [:]).metricsPort == nil)
        #expect(try ScrollbackConfiguration(environment: ["SCROLLBACK_METRICS_PORT": "9464"]).metricsPort == 9464)
        let flagged = try ScrollbackConfiguration(
            environment: ["SCROLLBACK_METRICS_PORT": "9464"], overrides: ["SCROLLBACK_METRICS_PORT": "0"])
        #expect(flagged.metricsPort == 0)
        for bad in ["abc", "-1", "65536"] {
            #expect(throws: ScrollbackConfiguration.Failure.self) {
                try ScrollbackConfiguration(environment: ["SCROLLBACK_METRICS_PORT": bad])
            }
        }
    }

    /// Every line of the exposition is a comment or `name{labels} value`,
    /// every series belongs to a family with a `# TYPE`, and every family is
    /// documented in docs/operations.md: made without a database (a store's metrics
    /// are registered when it is created, before it connects).
    @Test func theExpositionIsPrometheusTextAndEveryMetricIsDocumented() async throws {
        let metrics = ScrollbackMetrics()
        let url = try DatabaseURL("postgres://user:secret@127.0.0.1:1/none")
        var withReplica = StoreOptions()
        withReplica.replicas = [try DatabaseURL("postgres://user:secret@127.0.0.1:2/none")]
        let store = ScrollbackStore(url: url, options: withReplica, metrics: metrics.factory, logger: Self.logger)
        // A second store on the same factory (an instance restarted in
        // place) registers the same names with the same labels.
        _ = ScrollbackStore(url: url, metrics: metrics.factory, logger: Self.logger)
        let live = LiveDelivery(store: store, metrics: metrics, logger: Self.logger)
        metrics.http.record(method: .get, route: "/v1/conversations", status: 200, duration: .milliseconds(3))
        metrics.http.record(method: .get, route: "/v1/conversations", status: 200, duration: .milliseconds(30))
        metrics.http.record(method: .init("BREW")!, route: "NotFound", status: 404, duration: .microseconds(40))
        metrics.rateLimited(kind: "send")
        metrics.refusedConnection(kind: "socket")
        metrics.rateLimited(kind: "a kind added later")

        let text = String(decoding: await metrics.exposition(of: live), as: UTF8.self)
        let exposition = try Exposition(parsing: text)

        #expect(exposition.requests("GET", "/v1/conversations", 200) == 2)
        #expect(exposition.requests("other", "unmatched", 404) == 1)
        let latency = "scrollback_http_request_duration_seconds"
        let listing = ["method": "GET", "route": "/v1/conversations"]
        #expect(exposition.value(latency + "_bucket", listing.merging(["le": "0.005"]) { $1 }) == 1)
        #expect(exposition.value(latency + "_count", listing) == 2)
        #expect(exposition.value("scrollback_rate_limited_total", ["kind": "send"]) == 1)
        #expect(exposition.value("scrollback_rate_limited_total", ["kind": "typing"]) == 0)
        #expect(exposition.value("scrollback_refused_connections_total", ["kind": "socket"]) == 1)
        #expect(exposition.value("scrollback_refused_connections_total", ["kind": "http"]) == 0)
        #expect(exposition.value("scrollback_db_pool_max_connections") == 40)
        #expect(exposition.value("scrollback_db_pool_idle_connections") == 40)
        #expect(exposition.value("scrollback_db_statement_duration_seconds_count", ["statement": "page"]) == 0)
        #expect(exposition.value("scrollback_live_sockets") == 0)
        #expect(exposition.value("scrollback_live_listening") == 0)
        #expect(exposition.value("scrollback_replica_up", ["replica": "1"]) == 0)
        #expect(exposition.value("scrollback_replica_reads_total", ["replica": "1", "result": "served"]) == 0)

        let operations = try String(contentsOf: Self.repositoryRoot.appending(path: "docs/operations.md"), encoding: .utf8)
        for family in exposition.types.keys.sorted() {
            #expect(operations.contains("`\(family)`"), "docs/operations.md's metrics section does not list \(family)")
        }
        for statement in StatementName.allCases {
            #expect(operations.contains("`\(statement.rawValue)`"), "docs/operations.md does not name statement \(statement.rawValue)")
        }
        // Every `kind` the table lists for a labelled counter is a series
        // from the start (0), not only after its first event.
        for family in ["scrollback_live_notifications_total", "scrollback_rate_limited_total", "scrollback_refused_connections_total"] {
            let row = try #require(operations.split(separator: "\n").first { $0.hasPrefix("| `\(family)` |") }, "\(family)")
            let description = try #require(row.split(separator: "|").last)
            let kinds = description.split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
                .filter { !$0.hasPrefix("SCROLLBACK_") }
            #expect(!kinds.isEmpty, "\(family)")
            for kind in kinds {
                #expect(exposition.value(family, ["kind": kind]) != nil, "\(family){kind=\"\(kind)\"} is not exposed")
            }
        }
    }

    /// Requests, a socket and a message through a running instance show up in
    /// a scrape of its metrics port: the route patterns with their statuses,
    /// the pool and the statements, the socket, the notification and its lag.
    @Test func aScrapeAfterTrafficShowsRequestsPoolStatementsAndSockets() async throws {
        try await MeteredInstance.run { instance in
            let alice = try await instance.token("alice")
            let created = try await instance.request(
                .post, "/v1/conversations", token: alice, body: #"{"title": "metered", "members": ["bob"]}"#)
            #expect(created.status == .created)
            let conversation = try ScrollbackJSON.decoder().decode(
                Conversation.self, from: Data(buffer: created.body ?? ByteBuffer()))

            let socket = StreamClient(port: instance.port, token: try await instance.token("bob"))
            defer { socket.cancel() }
            try socket.send(.subscribe(conversationId: conversation.id, afterSeq: nil))
            _ = try await socket.next { if case .subscribed = $0 { true } else { false } }

            let messages = "/v1/conversations/\(conversation.id)/messages"
            let sent = try await instance.request(.post, messages, token: alice, body: #"{"body": "hello"}"#)
            #expect(sent.status == .created)
            _ = try await socket.next { $0.newMessage != nil }
            let page = try await instance.request(.get, messages + "?limit=10", token: alice)
            #expect(page.status == .ok)
            let missing = try await instance.request(.get, "/v1/no/such/route/\(UUID())", token: alice)
            #expect(missing.status == .notFound)
            let wrongMethod = try await instance.request(.put, messages, token: alice, body: "{}")
            #expect(wrongMethod.status == .methodNotAllowed)

            // Background work (the presence writer, the outbox's poll) may
            // hold a connection for a moment; a leaked one never comes back.
            let scraped = try await instance.scrape(until: {
                $0.value("scrollback_db_pool_leased_connections") == 0
                    && $0.value("scrollback_db_pool_idle_connections") == 4
            })
            let route = "/v1/conversations/{id}/messages"
            #expect(scraped.requests("POST", route, 201) == 1)
            #expect(scraped.requests("GET", route, 200) == 1)
            #expect(scraped.requests("POST", "/v1/conversations", 201) == 1)
            #expect(scraped.requests("GET", "unmatched", 404) == 1)
            #expect(scraped.requests("PUT", "unmatched", 405) == 1)
            #expect(!scraped.series.contains { $0.labels["route"]?.contains(conversation.id.uuidString) == true })
            let latency = scraped.value("scrollback_http_request_duration_seconds_count", ["method": "GET", "route": route])
            #expect(latency == 1)

            for statement in ["create_conversation", "send", "page", "feed"] {
                let count = scraped.value("scrollback_db_statement_duration_seconds_count", ["statement": statement])
                #expect((count ?? 0) >= 1, "statement \(statement) was not timed")
            }
            #expect(scraped.value("scrollback_db_pool_max_connections") == 4)
            #expect(scraped.value("scrollback_db_pool_leased_connections") == 0)
            #expect(scraped.value("scrollback_db_pool_waiting_requests") == 0)
            #expect(scraped.value("scrollback_db_pool_idle_connections") == 4)
            #expect(scraped.value("scrollback_db_timeouts_total", ["kind": "statement_timeout"]) == 0)

            #expect(scraped.value("scrollback_live_sockets") == 1)
            #expect(scraped.value("scrollback_live_subscriptions") == 1)
            #expect(scraped.value("scrollback_live_listening") == 1)
            #expect((scraped.value("scrollback_live_notifications_total", ["kind": "message"]) ?? 0) >= 1)
            #expect(scraped.value("scrollback_live_feed_lag_seconds_count") == 1)

            socket.close()
            _ = try await socket.closed()
            let later = try await instance.scrape(until: { $0.value("scrollback_live_sockets") == 0 })
            #expect(later.value("scrollback_live_sockets") == 0)
            #expect(later.value("scrollback_live_subscriptions") == 0)
        }
    }

    static func limited(_ configuration: inout ScrollbackConfiguration) {
        configuration.rateLimits.send = RateLimit(burst: 1, per: .seconds(60))
        configuration.connections.headerTimeout = .milliseconds(500)
    }

    @Test func refusalsByTheLimitsAreCounted() async throws {
        try await MeteredInstance.run(configure: Self.limited) { instance in
            let alice = try await instance.token("alice")
            let created = try await instance.request(.post, "/v1/conversations", token: alice, body: "{}")
            let conversation = try ScrollbackJSON.decoder().decode(
                Conversation.self, from: Data(buffer: created.body ?? ByteBuffer()))
            let messages = "/v1/conversations/\(conversation.id)/messages"
            #expect(try await instance.request(.post, messages, token: alice, body: #"{"body": "one"}"#).status == .created)
            #expect(try await instance.request(.post, messages, token: alice, body: #"{"body": "two"}"#).status == .tooManyRequests)
            // A head that never ends: 408, and the connection cut.
            let slow = try await RawConnection.open(port: instance.port)
            try await slow.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            #expect(await slow.closed(within: .seconds(30)))
            #expect(slow.receivedText.hasPrefix("HTTP/1.1 408"))

            let scraped = try await instance.scrape(until: {
                $0.value("scrollback_refused_connections_total", ["kind": "timed_out"]) == 1
            })
            #expect(scraped.value("scrollback_rate_limited_total", ["kind": "send"]) == 1)
            #expect(scraped.value("scrollback_rate_limited_total", ["kind": "conversation"]) == 0)
            #expect(scraped.requests("POST", "/v1/conversations/{id}/messages", 429) == 1)
            #expect(scraped.value("scrollback_refused_connections_total", ["kind": "timed_out"]) == 1)
            #expect(scraped.value("scrollback_refused_connections_total", ["kind": "http"]) == 0)
        }
    }

    /// The repository's root, from this file's place in it.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
}

/// One instance wired as `runScrollback` wires it (the store, the server,
/// live delivery and the metrics server, recording into one
/// `ScrollbackMetrics`), on free loopback ports and a fresh schema.
struct MeteredInstance {
    let port: Int
    let metricsPort: Int
    let tokens: TokenAuthority

    static func run(
        configure: (inout ScrollbackConfiguration) -> Void = { _ in },
        _ test: @escaping @Sendable (MeteredInstance) async throws -> Void
    ) async throws {
        let logger = MetricsTests.logger
        var configuration = LiveCluster.configuration
        configure(&configuration)
        try await TestDatabase.withSchema { [configuration] url, schema in
            let metrics = ScrollbackMetrics()
            let store = ScrollbackStore(
                url: url,
                options: StoreOptions(
                    maximumConnections: 4, statementTimeout: TestDatabase.patientTimeout,
                    lockTimeout: TestDatabase.patientTimeout, searchPath: schema),
                metrics: metrics.factory, logger: logger)
            let live = LiveDelivery(store: store, metrics: metrics, logger: logger)
            let (ports, report) = AsyncStream<(String, Int)>.makeStream()
            let app = try await buildApplication(
                configuration: configuration, store: store, logger: logger, live: live, metrics: metrics,
                onServerRunning: { report.yield(("api", $0)) })
            let metricsApp = buildMetricsApplication(
                metrics: metrics, live: live, host: "127.0.0.1", port: 0, logger: logger,
                onServerRunning: { report.yield(("metrics", $0)) })
            let group = ServiceGroup(
                configuration: .init(
                    services: [
                        .init(service: store), .init(service: metricsApp), .init(service: app), .init(service: live),
                    ],
                    logger: logger))
            let running = Task { try await group.run() }
            let outcome: Result<Void, any Error>
            do {
                var bound: [String: Int] = [:]
                for await (name, port) in ports {
                    bound[name] = port
                    if bound.count == 2 { break }
                }
                let deadline = ContinuousClock.now + .seconds(30)
                while await !live.isListening, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                let instance = MeteredInstance(
                    port: try #require(bound["api"]), metricsPort: try #require(bound["metrics"]),
                    tokens: try await TokenAuthority(secret: LiveCluster.secret))
                outcome = .success(try await test(instance))
            } catch {
                outcome = .failure(error)
            }
            await group.triggerGracefulShutdown()
            try await running.value
            try outcome.get()
        }
    }

    func token(_ user: String) async throws -> String {
        try await tokens.token(for: user, ttl: 600)
    }

    func request(
        _ method: HTTPRequest.Method, _ path: String, token: String, body: String? = nil
    ) async throws -> TestClient.Response {
        var headers: HTTPFields = [.authorization: "Bearer \(token)"]
        if body != nil { headers[.contentType] = "application/json" }
        let request = TestClient.Request(
            path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
        return try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            try await client.execute(request)
        }
    }

    /// `GET /metrics` from the metrics port, parsed; with `until`, scraped
    /// again (for up to 30 seconds) until it holds.
    func scrape(until holds: (Exposition) -> Bool = { _ in true }) async throws -> Exposition {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let response = try await TestClient.withClient(host: "127.0.0.1", port: metricsPort) { client in
                try await client.get("/metrics")
            }
            #expect(response.status == .ok)
            #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            let exposition = try Exposition(parsing: String(buffer: response.body ?? ByteBuffer()))
            if holds(exposition) || ContinuousClock.now > deadline { return exposition }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

/// The Prometheus text format (0.0.4), parsed strictly enough to fail on a
/// line that is neither a comment nor `name{label="value",...} value`.
struct Exposition {
    struct Series {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Malformed: Error, CustomStringConvertible {
        var line: String
        var description: String { "not a Prometheus sample line: \(line)" }
    }

    /// Metric family name to its `# TYPE`.
    var types: [String: String] = [:]
    var series: [Series] = []

    init(parsing text: String) throws {
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) where !line.isEmpty {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3])
                else { throw Malformed(line: String(line)) }
                types[String(parts[2])] = String(parts[3])
                continue
            }
            if line.hasPrefix("#") { continue }
            let parsed = try Self.sample(Substring(line))
            let family = types.keys.first { parsed.name == $0 || parsed.name.hasPrefix($0 + "_") }
            guard family != nil else { throw Malformed(line: "\(line) (no # TYPE before it)") }
            series.append(parsed)
        }
    }

    /// The value of the series `name` with exactly `labels`.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        series.first { $0.name == name && $0.labels == labels }?.value
    }

    /// `scrollback_http_requests_total` of one method, route and status.
    func requests(_ method: String, _ route: String, _ status: Int) -> Double? {
        value("scrollback_http_requests_total", ["method": method, "route": route, "status": String(status)])
    }

    private static func sample(_ line: Substring) throws -> Series {
        var rest = line[...]
        let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }
        guard let first = name.first, first.isLetter || first == "_" || first == ":" else {
            throw Malformed(line: String(line))
        }
        rest = rest.dropFirst(name.count)
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let label = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                rest = rest.dropFirst(label.count)
                guard !label.isEmpty, rest.hasPrefix("=\"") else { throw Malformed(line: String(line)) }
                rest = rest.dropFirst(2)
                var value = ""
                while let character = rest.first, character != "\"" {
                    rest = rest.dropFirst()
                    if character == "\\" {
                        guard let escaped = rest.first else { throw Malformed(line: String(line)) }
                        rest = rest.dropFirst()
                        value.append(escaped == "n" ? "\n" : escaped)
                    } else {
                        value.append(character)
                    }
                }
                guard rest.first == "\"" else { throw Malformed(line: String(line)) }
                rest = rest.dropFirst()
                labels[String(label)] = value
                if rest.first == "," {
                    rest = rest.dropFirst()
                } else if rest.first != "}" {
                    throw Malformed(line: String(line))
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " ", let value = Double(rest.dropFirst()) ?? Self.special(rest.dropFirst()) else {
            throw Malformed(line: String(line))
        }
        return Series(name: String(name), labels: labels, value: value)
    }

    private static func special(_ text: Substring) -> Double? {
        switch text {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        case "NaN": .nan
        default: nil
        }
    }
}
