import Foundation
import ScrollbackModels
import Testing

@Suite struct MessageAPITests {
    @Test func sendAssignsSenderSeqAndTimeIgnoringWhatTheClientClaims() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let reply = try await server.request(
                .post, "/v1/conversations/\(conversation.id)/messages", as: "bob",
                rawBody: #"{"body": "hi", "sender": "alice", "seq": 99, "created_at": "2001-01-01T00:00:00.000Z"}"#)
            #expect(reply.status == .created)
            let message = try reply.decode(MessageEnvelope.self).message
            #expect(message.sender == "bob" && message.seq == 1 && message.body == "hi" && message.clientId == nil)
            #expect(abs(message.createdAt.timeIntervalSinceNow) < 60)
            #expect(message.conversationId == conversation.id)
            #expect(reply.text.contains(#""client_id":null"#))
            #expect(reply.text.contains(#""edited_at":null"#) && reply.text.contains(#""deleted":false"#))
            #expect(message.version == 1)
        }
    }

    @Test func resendingWithTheSameClientIDReplaysTheOriginal() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            let first = try await server.send("hello", to: conversation.id, as: "alice", clientID: "tap-1")
            #expect(first.status == .created)
            let again = try await server.send("hello", to: conversation.id, as: "alice", clientID: "tap-1")
            #expect(again.status == .ok)
            #expect(try again.decode(MessageEnvelope.self) == first.decode(MessageEnvelope.self))
            let conflict = try await server.send("changed", to: conversation.id, as: "alice", clientID: "tap-1")
            #expect(conflict.status == .conflict)
            #expect(try conflict.error().error.code == .idempotencyConflict)
            let page = try await server.request(.get, "/v1/conversations/\(conversation.id)/messages", as: "alice")
                .decode(MessagePage.self)
            #expect(page.messages.map(\.body) == ["hello"])
            #expect(page.lastSeq == 1)
        }
    }

    @Test func pagingOverHTTPWithEveryAnchor() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            for index in 1...12 {
                #expect(try await server.send("m\(index)", to: conversation.id, as: "alice").status == .created)
            }
            func page(_ query: String) async throws -> MessagePage {
                let reply = try await server.request(.get, "/v1/conversations/\(conversation.id)/messages?\(query)", as: "alice")
                #expect(reply.status == .ok, "\(query): \(reply.text)")
                return try reply.decode(MessagePage.self)
            }
            let newest = try await page("limit=5")
            #expect(newest.messages.map(\.seq) == [12, 11, 10, 9, 8] && newest.hasOlder && !newest.hasNewer)
            #expect(newest.lastSeq == 12)
            let older = try await page("limit=5&before=8")
            #expect(older.messages.map(\.seq) == [7, 6, 5, 4, 3])
            let newer = try await page("limit=3&after=4")
            #expect(newer.messages.map(\.seq) == [7, 6, 5])
            let around = try await page("limit=3&around=1")
            #expect(around.messages.map(\.seq) == [3, 2, 1] && !around.hasOlder && around.hasNewer)
            let defaulted = try await page("")
            #expect(defaulted.messages.count == 12)
            let raw = try await server.request(.get, "/v1/conversations/\(conversation.id)/messages?limit=1", as: "alice")
            let object = try #require(try JSONSerialization.jsonObject(with: raw.body) as? [String: Any])
            #expect(Set(object.keys) == ["messages", "users", "has_older", "has_newer", "last_seq", "version", "first_seq"])
        }
    }
}
