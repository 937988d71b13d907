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
            let cases: [(String, String, HTTPResponse.Status, APIErrorCode)] = [
                ("malformed JSON", #"{"body": "#, .badRequest, .invalidJSON),
                ("not an object", #"["body"]"#, .badRequest, .invalidJSON),
                ("empty body", "", .badRequest, .invalidJSON),
                ("body is a number", #"{"body": 5}"#, .badRequest, .invalidField),
                // A body may be left out only by a message with attachments.
                ("body missing", #"{"text": "hi"}"#, .unprocessableContent, .invalidMessageBody),
                // Null is not a string, with data or without (openapi.yaml types it so).
                ("body null", #"{"body": null}"#, .badRequest, .invalidField),
                ("body null with data", #"{"body": null, "data": {}}"#, .badRequest, .invalidField),
                ("body missing, no attachments", #"{"attachments": []}"#, .unprocessableContent, .invalidMessageBody),
                ("client_id wrong type", #"{"body": "hi", "client_id": 7}"#, .badRequest, .invalidField),
                ("empty text", #"{"body": ""}"#, .unprocessableContent, .invalidMessageBody),
                ("only whitespace", #"{"body": " \n\t "}"#, .unprocessableContent, .invalidMessageBody),
                ("only invisible characters", #"{"body": "\u200B\u2060 \u200D"}"#, .unprocessableContent, .invalidMessageBody),
                ("NUL", #"{"body": "a\u0000b"}"#, .unprocessableContent, .invalidMessageBody),
                ("a control inside", #"{"body": "a\u0001b"}"#, .unprocessableContent, .invalidMessageBody),
                ("an escape sequence inside", #"{"body": "red \u001B[31m"}"#, .unprocessableContent, .invalidMessageBody),
                ("a C1 control inside", #"{"body": "a\u0085b"}"#, .unprocessableContent, .invalidMessageBody),
                ("only a control", #"{"body": "\u0001"}"#, .unprocessableContent, .invalidMessageBody),
                ("only a Hangul filler", #"{"body": "\u3164"}"#, .unprocessableContent, .invalidMessageBody),
                ("only blank Braille", #"{"body": "\u2800\u2800"}"#, .unprocessableContent, .invalidMessageBody),
                ("only a variation selector", #"{"body": "\uFE0F"}"#, .unprocessableContent, .invalidMessageBody),
                ("only tag characters", #"{"body": "\uDB40\uDC01\uDB40\uDC41"}"#, .unprocessableContent, .invalidMessageBody),
                ("one character too many", #"{"body": "\#(String(repeating: "x", count: APILimits.maxMessageBodyLength + 1))"}"#, .unprocessableContent, .invalidMessageBody),
                ("empty client_id", #"{"body": "hi", "client_id": ""}"#, .unprocessableContent, .invalidClientID),
                ("long client_id", #"{"body": "hi", "client_id": "\#(String(repeating: "k", count: APILimits.maxClientIDLength + 1))"}"#, .unprocessableContent, .invalidClientID),
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
            let combining = "a" + String(repeating: "\u{0301}", count: APILimits.maxMessageBodyLength)
            #expect(try await server.send(combining, to: conversation.id, as: "alice").status == .unprocessableContent)
            let longID = "a" + String(repeating: "\u{0300}", count: 20_000)
            let idReply = try await server.send("hi", to: conversation.id, as: "alice", clientID: longID)
            #expect(idReply.status == .unprocessableContent)
            #expect(try idReply.error().error.code == .invalidClientID)
            // Ordinary text with line breaks, tabs and an emoji with its
            // variation selector is fine, and stored as sent.
            let lines = "first line\r\n\tsecond ❤\u{FE0F}"
            #expect(try await server.send(lines, to: conversation.id, as: "alice").status == .created)
            // Exactly the limit in code points is fine.
            let longest = String(repeating: "👍", count: APILimits.maxMessageBodyLength)
            #expect(try await server.send(longest, to: conversation.id, as: "alice").status == .created)
            let page = try await server.request(.get, path, as: "alice").decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == [3, 2, 1])
            #expect(page.messages[1].body == lines)
            #expect(page.messages.last?.body == "first")
        }
    }

    @Test func badConversationInputIsRefused() async throws {
        try await TestServer.run { server in
            let cases: [(String, String, HTTPResponse.Status, APIErrorCode)] = [
                ("title too long", #"{"title": "\#(String(repeating: "t", count: APILimits.maxTitleLength + 1))"}"#, .unprocessableContent, .invalidTitle),
                ("title NUL", #"{"title": "a\u0000"}"#, .unprocessableContent, .invalidTitle),
                ("title with a line feed", #"{"title": "a\nb"}"#, .unprocessableContent, .invalidTitle),
                ("empty title", #"{"title": ""}"#, .unprocessableContent, .invalidTitle),
                ("title of a Hangul filler", #"{"title": "\u3164"}"#, .unprocessableContent, .invalidTitle),
                ("title of blank Braille and spaces", #"{"title": " \u2800 "}"#, .unprocessableContent, .invalidTitle),
                ("title of only a control", #"{"title": "\u0001"}"#, .unprocessableContent, .invalidTitle),
                ("title of only controls", #"{"title": "\u0001\u0001\u0001"}"#, .unprocessableContent, .invalidTitle),
                ("title of only a variation selector", #"{"title": "\uFE0F"}"#, .unprocessableContent, .invalidTitle),
                ("title of only variation selectors", #"{"title": "\uFE0F\uFE0F"}"#, .unprocessableContent, .invalidTitle),
                ("title wrong type", #"{"title": ["x"]}"#, .badRequest, .invalidField),
                ("members not array", #"{"members": "bob"}"#, .badRequest, .invalidField),
                ("members null", #"{"members": null}"#, .badRequest, .invalidField),
                ("member wrong type", #"{"members": ["bob", 3]}"#, .badRequest, .invalidField),
                ("invalid member id", #"{"members": ["bob", "no/slashes"]}"#, .unprocessableContent, .invalidUserID),
                ("empty member id", #"{"members": [""]}"#, .unprocessableContent, .invalidUserID),
                ("too many members", #"{"members": [\#((0..<APILimits.maxMembers).map { "\"u\($0)\"" }.joined(separator: ","))]}"#, .unprocessableContent, .tooManyMembers),
                ("more ids listed than the limit", #"{"members": [\#(Array(repeating: "\"bob\"", count: APILimits.maxMembers + 1).joined(separator: ","))]}"#, .unprocessableContent, .tooManyMembers),
                ("title of combining marks", #"{"title": "t\#(String(repeating: "\\u0301", count: APILimits.maxTitleLength))"}"#, .unprocessableContent, .invalidTitle),
            ]
            for (name, body, status, code) in cases {
                let reply = try await server.request(.post, "/v1/conversations", as: "alice", rawBody: body)
                #expect(reply.status == status, "\(name): \(reply.status) \(reply.text)")
                #expect(try reply.error().error.code == code, "\(name)")
            }
            // A title of the longest length and the most members, creator included, are fine.
            let fine = try await server.request(
                .post, "/v1/conversations", as: "alice",
                json: CreateConversationRequest(
                    title: String(repeating: "t", count: APILimits.maxTitleLength),
                    members: (1..<APILimits.maxMembers).map { "u\($0)" }))
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
                "limit=0", "limit=-1", "limit=1e9", "limit=abc", "limit=\(APILimits.pageLimit.upperBound + 1)", "limit=", "limit=1.5", "limit=%2B5",
                "limit=5&limit=6", "before=5&after=2", "before=1&around=3", "after=1&around=3", "before=-1",
                "after=-3", "around=-2", "before=0", "around=0", "before=abc", "after=99999999999999999999",
                "min_version=-1", "min_version=x", "min_version=", "min_version=1&min_version=2",
            ] {
                let reply = try await server.request(.get, "\(path)?\(query)", as: "alice")
                #expect(reply.status == .badRequest, "\(query): \(reply.status)")
                #expect(try reply.error().error.code == .invalidParameter, "\(query)")
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
                #expect(try reply.error().error.code == .methodNotAllowed)
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
                #expect(try !reply.error().error.code.rawValue.isEmpty)
            }
        }
    }
}
