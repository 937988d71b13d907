import Foundation
import HummingbirdTesting
import Logging
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackModels
import ScrollbackServer
import ScrollbackStore
import Testing

/// The database goes away under a running server and comes back: requests
/// get 503 with Retry-After meanwhile, nothing crashes, and the server
/// recovers by itself. Runs on a cluster of its own, which it stops and
/// starts again on the same port.
@Suite struct OutageTests {
    @Test func databaseOutageGives503WithRetryAfterAndTheServerRecovers() async throws {
        var logger = Logger(label: "scrollback.tests.outage")
        logger.logLevel = .critical
        let port = try EmbeddedPostgres.freeLoopbackPort()
        let cluster = EmbeddedPostgres(
            stateDirectory: ".scrollback", clusterName: "test-outage-postgres",
            options: .init(durable: false, maxConnections: 50, port: port), logger: logger)
        // A cluster left over from an interrupted run may be on another port.
        try cluster.stopAnyRunning()
        let running = try cluster.start()
        defer { try? cluster.stopAnyRunning() }
        let url = try DatabaseURL(running.url)
        let client = PostgresClient(configuration: try url.clientConfiguration(maximumConnections: 4), backgroundLogger: logger)
        let store = ScrollbackStore(client: client, logger: logger, queryTimeout: .seconds(2))
        let app = try await buildApplication(
            configuration: ServerConfiguration(host: "127.0.0.1", port: 0, jwtSecret: TestServer.secret),
            store: store, logger: logger)
        let tokens = try await TokenAuthority(secret: TestServer.secret)
        let token = try await tokens.token(for: "alice", ttl: 600)

        try await app.test(.live) { client in
            func get(_ path: String) async throws -> (HTTPResponse.Status, HTTPFields, Data) {
                try await client.execute(uri: path, method: .get, headers: [.authorization: "Bearer \(token)"]) {
                    ($0.status, $0.headers, Data(buffer: $0.body))
                }
            }
            #expect(try await get("/v1/conversations").0 == .ok)
            #expect(try await get("/readyz").0 == .ok)

            try cluster.stopAnyRunning()

            let (status, headers, body) = try await get("/v1/conversations")
            #expect(status == .serviceUnavailable)
            #expect(headers[.retryAfter] == "1")
            let error = try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: body)
            #expect(error.error.code == .serviceUnavailable)
            #expect(try await get("/readyz").0 == .serviceUnavailable)
            #expect(try await get("/healthz").0 == .ok)

            let restarted = try cluster.start()
            #expect(restarted.port == port)
            var recovered = false
            for _ in 0..<60 where !recovered {
                recovered = try await get("/v1/conversations").0 == .ok
                if !recovered { try await Task.sleep(for: .milliseconds(500)) }
            }
            #expect(recovered)
            #expect(try await get("/readyz").0 == .ok)
        }
    }
}

import HTTPTypes
