import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackModels
import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The database goes away under a running server, for longer than the
/// connection pool's circuit breaker window (60 s), and comes back: every
/// route answers 503 with Retry-After meanwhile, nothing crashes, and the
/// server recovers by itself. Runs on a cluster of its own, which it stops
/// and starts again on the same port.
@Suite struct OutageTests {
    /// The routes that need the database, each as a request a member may make.
    static func routes(conversation id: UUID) -> [(HTTPRequest.Method, String, String?)] {
        [
            (.get, "/v1/conversations", nil),
            (.post, "/v1/conversations", #"{"title": "during"}"#),
            (.get, "/v1/conversations/\(id)", nil),
            (.post, "/v1/conversations/\(id)/members", #"{"user_id": "carol"}"#),
            (.delete, "/v1/conversations/\(id)/members/carol", nil),
            (.post, "/v1/conversations/\(id)/messages", #"{"body": "during", "client_id": "d1"}"#),
            (.get, "/v1/conversations/\(id)/messages", nil),
            (.get, "/v1/conversations/\(id)/messages?around_time=2026-01-01T00:00:00Z", nil),
            (.patch, "/v1/conversations/\(id)/messages/1", #"{"body": "edited"}"#),
            (.put, "/v1/conversations/\(id)/read", #"{"seq": 1}"#),
            (.get, "/v1/conversations/\(id)/changes", nil),
            (.delete, "/v1/conversations/\(id)/messages/2", nil),
        ]
    }

    @Test func anOutageLongerThanThePoolsBreakerGives503WithRetryAfterAndTheServerRecovers() async throws {
        var logger = Logger(label: "scrollback.tests.outage")
        logger.logLevel = .critical
        let port = try EmbeddedPostgres.freeLoopbackPort()
        let cluster = EmbeddedPostgres(
            stateDirectory: ".scrollback", clusterName: "test-outage-postgres",
            options: .init(durable: false, maxConnections: 50, port: port), logger: logger)
        // A cluster left over from an interrupted run may be on another port.
        try await offThePool { try cluster.stopAnyRunning() }
        let running = try await offThePool { try cluster.start() }
        defer { try? cluster.stopAnyRunning() }
        let url = try DatabaseURL(running.url)
        let store = ScrollbackStore(
            url: url, options: StoreOptions(maximumConnections: 4, statementTimeout: .seconds(10)), logger: logger)
        let app = try await buildApplication(configuration: TestServer.configuration, store: store, logger: logger)
        let tokens = try await TokenAuthority(secret: TestServer.secret)
        let token = try await tokens.token(for: "alice", ttl: 600)

        try await TestDatabase.running(store) {
            try await app.test(.live) { client in
                func call(_ method: HTTPRequest.Method, _ path: String, _ body: String? = nil) async throws
                    -> (HTTPResponse.Status, HTTPFields, Data)
                {
                    var headers: HTTPFields = [.authorization: "Bearer \(token)"]
                    if body != nil { headers[.contentType] = "application/json" }
                    return try await client.execute(
                        uri: path, method: method, headers: headers, body: body.map { .init(string: $0) }
                    ) { ($0.status, $0.headers, Data(buffer: $0.body)) }
                }
                let created = try await call(.post, "/v1/conversations", #"{"members": ["bob"]}"#)
                #expect(created.0 == .created)
                let id = try ScrollbackJSON.decoder().decode(Conversation.self, from: created.2).id
                for index in 1...3 {
                    #expect(try await call(.post, "/v1/conversations/\(id)/messages", #"{"body": "m\#(index)"}"#).0 == .created)
                }
                func readiness() async throws -> [String: String] {
                    try await TestServer.readiness(within: .seconds(60)) {
                        let (status, _, body) = try await call(.get, "/readyz")
                        return (status, body)
                    }
                }
                #expect(try await readiness() == TestServer.ready)

                try await offThePool { try cluster.stopAnyRunning() }

                // Past the breaker's window, every route still answers 503 at once.
                let outage = ContinuousClock.now
                var roundsPastBreaker = 0
                var slowestPastBreaker = Duration.zero
                while ContinuousClock.now - outage < .seconds(66) || roundsPastBreaker < 2 {
                    let pastBreaker = ContinuousClock.now - outage > .seconds(62)
                    for (method, path, body) in Self.routes(conversation: id) {
                        let started = ContinuousClock.now
                        let (status, headers, data) = try await call(method, path, body)
                        if pastBreaker { slowestPastBreaker = max(slowestPastBreaker, .now - started) }
                        #expect(status == .serviceUnavailable, "\(method) \(path) during the outage: \(status)")
                        #expect(headers[.retryAfter] == "1", "\(method) \(path)")
                        let code = try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: data).error.code
                        #expect(code == .serviceUnavailable, "\(method) \(path): \(code)")
                    }
                    #expect(try await call(.get, "/healthz").0 == .ok)
                    let (status, headers, data) = try await call(.get, "/readyz")
                    #expect(status == .serviceUnavailable && headers[.retryAfter] == "1")
                    let report = try JSONDecoder().decode([String: String].self, from: data)
                    #expect(report["status"] == "not_ready" && report["database"] == "unreachable")
                    if pastBreaker { roundsPastBreaker += 1 }
                    try await Task.sleep(for: .seconds(2))
                }
                // Requests fail fast: none waits for the store's deadline (the
                // statement timeout + 2 s, 12 s), which a request that waited
                // on the database would reach; the margin is for a busy
                // machine. (How many rounds fit in the window depends on how
                // busy the machine is, and is not asserted.)
                #expect(slowestPastBreaker < .seconds(10), "\(slowestPastBreaker)")

                let restarted = try await offThePool { try cluster.start() }
                #expect(restarted.port == port)
                // Ready again once the pool and the change feed's listener
                // have both reconnected by themselves.
                #expect(try await readiness() == TestServer.ready)
                // Every route works again; nothing sent during the outage was stored.
                for (method, path, body) in Self.routes(conversation: id) {
                    let status = try await call(method, path, body).0
                    #expect((200..<300).contains(status.code), "\(method) \(path) after the outage: \(status)")
                }
                let page = try ScrollbackJSON.decoder().decode(
                    MessagePage.self, from: try await call(.get, "/v1/conversations/\(id)/messages").2)
                #expect(page.lastSeq == 4)
            }
        }
    }

    /// The database answers but the change feed's listening connection is
    /// down: the instance is not ready (messages written through other
    /// instances would not reach its sockets), and ready again once the
    /// listener has reconnected by itself.
    @Test func theInstanceIsNotReadyWhileItsChangeFeedListenerIsDown() async throws {
        try await TestServer.run { server in
            #expect(try await server.readiness() == TestServer.ready)
            let url = try await TestDatabase.url()
            let name = server.store.listenerApplicationName
            // The listening connection is terminated each time it is back,
            // until the test has seen the instance not ready: it reconnects
            // within a fraction of a second, too soon to be seen otherwise.
            let killing = Task {
                try await TestDatabase.admin(url) { connection in
                    while !Task.isCancelled {
                        _ = try await connection.query(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(name)",
                            logger: connection.logger
                        ).collect()
                        try? await Task.sleep(for: .milliseconds(10))
                    }
                }
            }
            var reply = try await server.request(.get, "/readyz")
            let deadline = ContinuousClock.now + .seconds(60)
            while reply.status == .ok, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                reply = try await server.request(.get, "/readyz")
            }
            killing.cancel()
            _ = await killing.result
            #expect(reply.status == .serviceUnavailable)
            #expect(reply.headers[.retryAfter] == "1")
            let report = try JSONDecoder().decode([String: String].self, from: reply.body)
            #expect(report == ["status": "not_ready", "database": "up", "live_delivery": "reconnecting"])
            // Ready again, the listener back by itself (the report shown when not).
            let again = try await server.readiness()
            #expect(again == TestServer.ready)
        }
    }

    /// The database stops answering (its backend is frozen) while a send is
    /// in flight: the client hears 503 `outcome_unknown` at the deadline
    /// rather than waiting for ever; when the database answers again the
    /// statement commits, and the retry with the same client_id returns that
    /// message (200) instead of storing it twice.
    @Test func aStalledDatabaseGivesOutcomeUnknownAndTheRetryResolvesIt() async throws {
        var logger = Logger(label: "scrollback.tests.stall")
        logger.logLevel = .critical
        let cluster = EmbeddedPostgres(
            stateDirectory: ".scrollback", clusterName: "test-stall-postgres",
            options: .init(durable: false, maxConnections: 20), logger: logger)
        try await offThePool { try cluster.stopAnyRunning() }
        let running = try await offThePool { try cluster.start() }
        defer { try? cluster.stopAnyRunning() }
        let url = try DatabaseURL(running.url)
        let store = ScrollbackStore(
            url: url, options: StoreOptions(maximumConnections: 1, statementTimeout: .seconds(5)), logger: logger)
        let app = try await buildApplication(configuration: TestServer.configuration, store: store, logger: logger)
        let token = try await TokenAuthority(secret: TestServer.secret).token(for: "alice", ttl: 600)

        try await TestDatabase.running(store) {
            try await app.test(.live) { client in
                func post(_ path: String, _ body: String) async throws -> (HTTPResponse.Status, Data) {
                    try await client.execute(
                        uri: path, method: .post,
                        headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                        body: .init(string: body)
                    ) { ($0.status, Data(buffer: $0.body)) }
                }
                let created = try await post("/v1/conversations", "{}")
                let id = try ScrollbackJSON.decoder().decode(Conversation.self, from: created.1).id
                let path = "/v1/conversations/\(id)/messages"

                // The pool's one connection: freeze the process that serves it.
                let backends = try await TestDatabase.admin(url) { admin in
                    try await admin.query(
                        "SELECT pid FROM pg_stat_activity WHERE application_name = 'scrollback'",
                        logger: Logger(label: "scrollback.tests.stall")
                    ).collect().map { try $0.decode(Int32.self) }
                }
                #expect(backends.count == 1)
                for pid in backends { kill(pid, SIGSTOP) }
                let stalled = try await post(path, #"{"body": "are you there?", "client_id": "s1"}"#)
                for pid in backends { kill(pid, SIGCONT) }
                #expect(stalled.0 == .serviceUnavailable)
                let code = try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: stalled.1).error.code
                #expect(code == .outcomeUnknown)

                // The statement went on once the database answered: the retry finds it.
                var retried: (HTTPResponse.Status, Data) = (.serviceUnavailable, Data())
                for _ in 0..<40 where retried.0 == .serviceUnavailable {
                    retried = try await post(path, #"{"body": "are you there?", "client_id": "s1"}"#)
                    if retried.0 == .serviceUnavailable { try await Task.sleep(for: .milliseconds(250)) }
                }
                #expect(retried.0 == .ok)
                let message = try ScrollbackJSON.decoder().decode(MessageEnvelope.self, from: retried.1).message
                #expect(message.seq == 1 && message.clientId == "s1")
            }
        }
    }
}
