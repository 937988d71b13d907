import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import ScrollbackModels
import ScrollbackServer
import ScrollbackTestSupport
import Testing

@Suite struct RequestLogTests {
    /// One info line per request, naming the route pattern, status, duration
    /// and user, and never the token, the query string or the body.
    @Test func everyRequestLogsOneLineWithoutTokenOrBody() async throws {
        let captured = CapturedLog()
        let logger = Logger(label: "scrollback.tests.log") { _ in captured.handler(level: .info) }
        try await TestDatabase.withStore { store in
            let app = try await buildApplication(
                configuration: TestServer.configuration, store: store, logger: logger, migrateOnStart: false)
            let token = try await TokenAuthority(secret: TestServer.secret).token(for: "alice", ttl: 600)
            try await app.test(.live) { client in
                let created = try await client.execute(
                    uri: "/v1/conversations", method: .post,
                    headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                    body: .init(string: #"{"title": "very secret title"}"#)
                ) { try ScrollbackJSON.decoder().decode(Conversation.self, from: Data(buffer: $0.body)) }
                let page = try await client.execute(
                    uri: "/v1/conversations/\(created.id)/messages?limit=5&before=9", method: .get,
                    headers: [.authorization: "Bearer \(token)"]
                ) { $0.status }
                #expect(page == .ok)
                let refused = try await client.execute(uri: "/v1/conversations", method: .get) { $0.status }
                #expect(refused == .unauthorized)
            }
            let lines = captured.entries.filter { $0.message == "request" }
            #expect(lines.count == 3)
            guard lines.count == 3 else { return }
            #expect(lines[0].metadata["method"] == "POST" && lines[0].metadata["route"] == "/v1/conversations")
            #expect(lines[0].metadata["status"] == "201" && lines[0].metadata["user"] == "alice")
            #expect(lines[1].metadata["route"] == "/v1/conversations/{id}/messages")
            #expect(lines[1].metadata["status"] == "200")
            #expect(lines[2].metadata["status"] == "401" && lines[2].metadata["user"] == nil)
            for line in lines {
                #expect(line.metadata["duration_ms"].flatMap { Double("\($0)") } != nil)
            }
            let everything = captured.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
            #expect(!everything.contains(token))
            #expect(!everything.contains("very secret title"))
            #expect(!everything.contains("before=9"))
        }
    }
}
