import Foundation
import HTTPTypes
import ScrollbackModels
import Testing

/// Bad input gets a 4xx with the JSON error shape, and nothing stored changes.
@Suite struct ValidationTests {
    @Test func badMessageBodiesAreRefusedAndStoreNothing() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            #expect(try await server.send("first", to: conversation.id, as: "alice").status == .created)
            let path = "/v1/conversations/\(conversation.id)/messages"
            let cases: [(String, String, HTTPResponse.Status, String)] = [
                ("malformed JSON", #"{"body": "#, .badRequest, "invalid_json"),
                ("not an object", #"["body"]"#, .badRequest, "invalid_json"),
                ("empty body", "", .badRequest, "invalid_json"),
                ("body is a number", #"{"body": 5}"#, .badRequest, "invalid_field"),
                ("body missing", #"{"text": "hi"}"#, .badRequest, "invalid_field"),
                ("body null", #"{"body": null}"#, .badRequest, "invalid_field"),
                ("client_id wrong type", #"{"body": "hi", "client_id": 7}"#, .badRequest, "invalid_field"),
                ("empty text", #"{"body": ""}"#, .unprocessableContent, "invalid_message_body"),
                ("only whitespace", #"{"body": " \n\t "}"#, .unprocessableContent, "invalid_message_body"),
                ("only invisible characters", #"{"body": "\u200B\u2060 \u200D"}"#, .unprocessableContent, "invalid_message_body"),
                ("NUL", #"{"body": "a\u0000b"}"#, .unprocessableContent, "invalid_message_body"),
                ("4001 characters", #"{"body": "\#(String(repeating: "x", count: 4001))"}"#, .unprocessableContent, "invalid_message_body"),
                ("empty client_id", #"{"body": "hi", "client_id": ""}"#, .unprocessableContent, "invalid_client_id"),
                ("long client_id", #"{"body": "hi", "client_id": "\#(String(repeating: "k", count: 65))"}"#, .unprocessableContent, "invalid_client_id"),
                ("over 64 KiB", #"{"body": "\#(String(repeating: "y", count: 70_000))"}"#, .contentTooLarge, "payload_too_large"),
            ]
            for (name, body, status, code) in cases {
                let reply = try await server.request(.post, path, as: "alice", rawBody: body)
                #expect(reply.status == status, "\(name): \(reply.status) \(reply.text)")
                let error = try reply.error()
                #expect(error.error.code == code, "\(name)")
                #expect(!error.error.message.isEmpty)
            }
            // Lengths count code points: one grapheme carrying thousands of
            // combining marks is long, not one character.
            let combining = "a" + String(repeating: "\u{0301}", count: 4000)
            #expect(try await server.send(combining, to: conversation.id, as: "alice").status == .unprocessableContent)
            let longID = "a" + String(repeating: "\u{0300}", count: 20_000)
            let idReply = try await server.send("hi", to: conversation.id, as: "alice", clientID: longID)
            #expect(idReply.status == .unprocessableContent)
            #expect(try idReply.error().error.code == "invalid_client_id")
            // Exactly 4,000 code points is fine.
            let longest = String(repeating: "👍", count: 4000)
            #expect(try await server.send(longest, to: conversation.id, as: "alice").status == .created)
            let page = try await server.request(.get, path, as: "alice").decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == [2, 1])
            #expect(page.messages.last?.body == "first")
        }
    }

    @Test func badConversationInputIsRefused() async throws {
        try await TestServer.run { server in
            let cases: [(String, String, HTTPResponse.Status, String)] = [
                ("title too long", #"{"title": "\#(String(repeating: "t", count: 201))"}"#, .unprocessableContent, "invalid_title"),
                ("title NUL", #"{"title": "a\u0000"}"#, .unprocessableContent, "invalid_title"),
                ("title wrong type", #"{"title": ["x"]}"#, .badRequest, "invalid_field"),
                ("members not array", #"{"members": "bob"}"#, .badRequest, "invalid_field"),
                ("member wrong type", #"{"members": ["bob", 3]}"#, .badRequest, "invalid_field"),
                ("invalid member id", #"{"members": ["bob", "no spaces"]}"#, .unprocessableContent, "invalid_user_id"),
                ("empty member id", #"{"members": [""]}"#, .unprocessableContent, "invalid_user_id"),
                ("too many members", #"{"members": [\#((0..<1000).map { "\"u\($0)\"" }.joined(separator: ","))]}"#, .unprocessableContent, "too_many_members"),
                ("over 1,000 ids listed", #"{"members": [\#(Array(repeating: "\"bob\"", count: 1001).joined(separator: ","))]}"#, .unprocessableContent, "too_many_members"),
                ("title of combining marks", #"{"title": "t\#(String(repeating: "\\u0301", count: 200))"}"#, .unprocessableContent, "invalid_title"),
            ]
            for (name, body, status, code) in cases {
                let reply = try await server.request(.post, "/v1/conversations", as: "alice", rawBody: body)
                #expect(reply.status == status, "\(name): \(reply.status) \(reply.text)")
                #expect(try reply.error().error.code == code, "\(name)")
            }
            // 200 characters and 999 others (1,000 with the creator) are fine.
            let fine = try await server.request(
                .post, "/v1/conversations", as: "alice",
                json: CreateConversationRequest(title: String(repeating: "t", count: 200), members: (0..<999).map { "u\($0)" }))
            #expect(fine.status == .created)
            let list = try await server.request(.get, "/v1/conversations", as: "alice").decode(ConversationList.self)
            #expect(list.conversations.count == 1)
        }
    }

    @Test func badQueryParametersGet400() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            let path = "/v1/conversations/\(conversation.id)/messages"
            for query in [
                "limit=0", "limit=-1", "limit=1e9", "limit=abc", "limit=201", "limit=", "limit=1.5", "limit=%2B5",
                "limit=5&limit=6", "before=5&after=2", "before=1&around=3", "after=1&around=3", "before=-1",
                "after=-3", "around=-2", "before=0", "around=0", "before=abc", "after=99999999999999999999",
            ] {
                let reply = try await server.request(.get, "\(path)?\(query)", as: "alice")
                #expect(reply.status == .badRequest, "\(query): \(reply.status)")
                #expect(try reply.error().error.code == "invalid_parameter", "\(query)")
            }
            for query in ["limit=0", "cursor=garbage!", "cursor="] {
                let reply = try await server.request(.get, "/v1/conversations?\(query)", as: "alice")
                #expect(reply.status == .badRequest, "\(query): \(reply.status)")
            }
        }
    }

    @Test func aKnownPathWithAnotherMethodGets405WithAllow() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            let cases: [(HTTPRequest.Method, String, String)] = [
                (.put, "/healthz", "GET, HEAD"),
                (.delete, "/v1/conversations", "GET, HEAD, POST"),
                (.get, "/v1/layout", "POST"),
                (.post, "/v1/conversations/\(conversation.id)/messages/1", "DELETE, PATCH"),
            ]
            for (method, path, allow) in cases {
                let reply = try await server.request(method, path, as: "alice")
                #expect(reply.status == .methodNotAllowed, "\(method) \(path)")
                #expect(reply.headers[.allow] == allow, "\(method) \(path)")
                #expect(try reply.error().error.code == "method_not_allowed")
            }
            let head = try await server.request(.head, "/v1/conversations/\(conversation.id)", as: "alice")
            #expect(head.status == .ok && head.body.isEmpty)
        }
    }

    @Test func unknownRoutesAndIdsGetJSON404() async throws {
        try await TestServer.run { server in
            for path in ["/nope", "/v1/conversations/not-a-uuid", "/v1/conversations/\(UUID())"] {
                let reply = try await server.request(.get, path, as: "alice")
                #expect(reply.status == .notFound, "\(path)")
                #expect(try !reply.error().error.code.isEmpty)
            }
        }
    }
}
