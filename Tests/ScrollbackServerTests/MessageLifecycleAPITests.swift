import Foundation
import ScrollbackModels
import Testing

@Suite struct MessageLifecycleAPITests {
    @Test func editDeleteAndTheirRefusalsOverHTTP() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let messages = "/v1/conversations/\(conversation.id)/messages"
            #expect(try await server.send("hello", to: conversation.id, as: "bob").status == .created)

            let edited = try await server.request(.patch, "\(messages)/1", as: "bob", json: EditMessageRequest(body: "hello!"))
            #expect(edited.status == .ok)
            let message = try edited.decode(MessageEnvelope.self).message
            #expect(message.body == "hello!" && message.editedAt != nil && message.version == 2)

            let cases: [(HTTPRequest.Method, String, String?, String, HTTPResponse.Status, APIErrorCode)] = [
                (.patch, "\(messages)/1", #"{"body": "mine now"}"#, "alice", .forbidden, .forbidden),
                (.patch, "\(messages)/1", #"{"body": "  "}"#, "bob", .unprocessableContent, .invalidMessageBody),
                (.patch, "\(messages)/1", #"{"body": 3}"#, "bob", .badRequest, .invalidField),
                (.patch, "\(messages)/9", #"{"body": "x"}"#, "bob", .notFound, .messageNotFound),
                (.patch, "\(messages)/0", #"{"body": "x"}"#, "bob", .notFound, .messageNotFound),
                (.patch, "\(messages)/abc", #"{"body": "x"}"#, "bob", .notFound, .messageNotFound),
                (.patch, "\(messages)/1", #"{"body": "x"}"#, "mallory", .notFound, .conversationNotFound),
                (.delete, "\(messages)/1", nil, "mallory", .notFound, .conversationNotFound),
            ]
            for (method, path, body, user, status, code) in cases {
                let reply = try await server.request(method, path, as: user, rawBody: body)
                #expect(reply.status == status, "\(method) \(path) as \(user): \(reply.text)")
                #expect(try reply.error().error.code == code)
            }

            // The creator may delete bob's message; deleting again returns the same tombstone.
            let deleted = try await server.request(.delete, "\(messages)/1", as: "alice")
            #expect(deleted.status == .ok)
            let tombstone = try deleted.decode(MessageEnvelope.self).message
            #expect(tombstone.deleted && tombstone.body == "" && tombstone.version == 3)
            let again = try await server.request(.delete, "\(messages)/1", as: "bob")
            #expect(again.status == .ok)
            #expect(try again.decode(MessageEnvelope.self) == deleted.decode(MessageEnvelope.self))
            let editTombstone = try await server.request(.patch, "\(messages)/1", as: "bob", json: EditMessageRequest(body: "back"))
            #expect(editTombstone.status == .conflict)
            #expect(try editTombstone.error().error.code == .messageDeleted)

            let page = try await server.request(.get, messages, as: "bob").decode(MessagePage.self)
            #expect(page.messages.map(\.deleted) == [true] && page.version == 3)
        }
    }

    @Test func readMarkersAndUnreadCountsOverHTTP() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            for index in 1...4 { _ = try await server.send("m\(index)", to: conversation.id, as: "alice") }
            let read = "/v1/conversations/\(conversation.id)/read"
            let first = try await server.request(.put, read, as: "bob", json: ReadMarkerRequest(seq: 3))
            #expect(first.status == .ok)
            #expect(try first.decode(ReadMarker.self) == ReadMarker(conversationId: conversation.id, readSeq: 3, unreadCount: 1))
            let backwards = try await server.request(.put, read, as: "bob", json: ReadMarkerRequest(seq: 1))
            #expect(backwards.status == .ok)
            #expect(try backwards.decode(ReadMarker.self).readSeq == 3)
            for (body, status) in [
                (#"{"seq": 5}"#, HTTPResponse.Status.unprocessableContent), (#"{"seq": -1}"#, .unprocessableContent),
                (#"{"seq": "3"}"#, .badRequest), (#"{}"#, .badRequest),
            ] {
                #expect(try await server.request(.put, read, as: "bob", rawBody: body).status == status, "\(body)")
            }
            #expect(try await server.request(.put, read, as: "mallory", json: ReadMarkerRequest(seq: 1)).status == .notFound)
            let listed = try await server.request(.get, "/v1/conversations", as: "bob").decode(ConversationList.self)
            #expect(listed.conversations.first?.readSeq == 3)
            #expect(listed.conversations.first?.unreadCount == 1)
            #expect(listed.conversations.first?.lastMessage?.body == "m4")
            let shown = try await server.request(.get, "/v1/conversations/\(conversation.id)", as: "alice")
                .decode(Conversation.self)
            #expect(shown.unreadCount == 0 && shown.readSeq == 0)
        }
    }

    @Test func aroundTimeAndChangesOverHTTP() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            var times: [Date] = []
            for index in 1...6 {
                let reply = try await server.send("m\(index)", to: conversation.id, as: "alice")
                times.append(try reply.decode(MessageEnvelope.self).message.createdAt)
                try await Task.sleep(for: .milliseconds(5))
            }
            let messages = "/v1/conversations/\(conversation.id)/messages"
            func page(_ query: String) async throws -> MessagePage {
                let reply = try await server.request(.get, "\(messages)?\(query)", as: "alice")
                #expect(reply.status == .ok, "\(query): \(reply.text)")
                return try reply.decode(MessagePage.self)
            }
            let early = ScrollbackJSON.formatTimestamp(times[0].addingTimeInterval(-86_400))
            let atStart = try await page("around_time=\(early)&limit=3")
            #expect(atStart.messages.map(\.seq) == [3, 2, 1] && !atStart.hasOlder && atStart.hasNewer)
            let late = ScrollbackJSON.formatTimestamp(times[5].addingTimeInterval(3600))
            let atEnd = try await page("around_time=\(late)&limit=3")
            #expect(atEnd.messages.map(\.seq) == [6, 5, 4] && atEnd.hasOlder && !atEnd.hasNewer)
            let middle = try await page("around_time=\(ScrollbackJSON.formatTimestamp(times[3]))&limit=3")
            #expect(middle.messages.map(\.seq) == [5, 4, 3])
            // Far outside years 1...9999 once stopped the server: a 400 now, and the server keeps serving.
            for bad in [
                "around_time=yesterday", "around_time=\(late)&before=3", "around_time=\(late)&around_time=\(late)",
                "around_time=294300-01-01T00:00:00Z", "around_time=294277-01-01T00:00:00Z",
                "around_time=10000-01-01T00:00:00Z", "around_time=-5000-01-01T00:00:00Z",
            ] {
                #expect(try await server.request(.get, "\(messages)?\(bad)", as: "alice").status == .badRequest, "\(bad)")
            }

            _ = try await server.request(.patch, "\(messages)/2", as: "alice", json: EditMessageRequest(body: "m2 edited"))
            _ = try await server.request(.delete, "\(messages)/5", as: "alice")
            let changesPath = "/v1/conversations/\(conversation.id)/changes"
            let changes = try await server.request(.get, "\(changesPath)?since_version=4&limit=2", as: "alice")
            #expect(changes.status == .ok)
            let set = try changes.decode(ChangeSet.self)
            #expect(set.messages.map(\.seq) == [6, 2] && set.hasMore && set.version == 7)
            let rest = try await server.request(.get, "\(changesPath)?since_version=7", as: "alice").decode(ChangeSet.self)
            #expect(rest.messages.map(\.seq) == [5] && !rest.hasMore && rest.version == 8)
            for bad in ["since_version=-1", "since_version=x", "limit=0", "limit=1001"] {
                #expect(try await server.request(.get, "\(changesPath)?\(bad)", as: "alice").status == .badRequest, "\(bad)")
            }
            #expect(try await server.request(.get, changesPath, as: "mallory").status == .notFound)
        }
    }

    @Test func aRemovedMemberLosesTheHistoryTheyCouldRead() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            _ = try await server.send("before removal", to: conversation.id, as: "alice")
            #expect(try await server.request(.get, "/v1/conversations/\(conversation.id)/messages", as: "bob").status == .ok)
            #expect(try await server.request(.delete, "/v1/conversations/\(conversation.id)/members/bob", as: "alice").status == .noContent)
            for path in ["", "/messages", "/changes", "/messages?around=1"] {
                #expect(try await server.request(.get, "/v1/conversations/\(conversation.id)\(path)", as: "bob").status == .notFound, "\(path)")
            }
            #expect(try await server.request(.put, "/v1/conversations/\(conversation.id)/read", as: "bob", json: ReadMarkerRequest(seq: 1)).status == .notFound)
        }
    }
}

import HTTPTypes
