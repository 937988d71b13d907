import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import ScrollbackModels
import Testing

/// Sixteen clients, each on a connection of its own, re-send one stored
/// message (same client_id, same body: exactly what idempotency is for)
/// over and over through a small pool. Every retry is the original (200), and
/// afterwards a new send and `/readyz` still answer.
@Suite struct RetryStormTests {
    @Test func concurrentReplaysLeaveTheServiceServing() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            let path = "/v1/conversations/\(conversation.id)/messages"
            let first = try await server.send("tap", to: conversation.id, as: "alice", clientID: "x1")
            #expect(first.status == .created)
            let original = try first.decode(MessageEnvelope.self).message
            let port = try #require(server.client.port)
            let headers: HTTPFields = [
                .authorization: "Bearer \(try await server.token("alice"))", .contentType: "application/json",
            ]
            let statuses = try await withThrowingTaskGroup(of: [(HTTPResponse.Status, Int64?)].self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        let client = TestClient(host: "127.0.0.1", port: port, configuration: .init(timeout: .seconds(30)))
                        client.connect()
                        var replies: [(HTTPResponse.Status, Int64?)] = []
                        for _ in 0..<25 {
                            let response = try await client.post(
                                path, headers: headers, body: ByteBuffer(string: #"{"body": "tap", "client_id": "x1"}"#))
                            let seq = try? ScrollbackJSON.decoder().decode(
                                MessageEnvelope.self, from: Data(buffer: response.body ?? ByteBuffer())
                            ).message.seq
                            replies.append((response.status, seq))
                        }
                        try await client.shutdown()
                        return replies
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(statuses.count == 400)
            #expect(statuses.allSatisfy { $0.0 == .ok && $0.1 == original.seq })
            let next = try await server.send("new", to: conversation.id, as: "alice", clientID: "x2")
            #expect(next.status == .created)
            #expect(try next.decode(MessageEnvelope.self).message.seq == 2)
            #expect(try await server.readiness() == TestServer.ready)
        }
    }
}
