import Foundation
import ScrollbackModels
import Testing

@Suite struct ConversationAPITests {
    @Test func createShowAndListOverHTTP() async throws {
        try await TestServer.run { server in
            let created = try await server.createConversation(as: "alice", members: ["bob", "carol"], title: "Trip")
            #expect(created.members == ["alice", "bob", "carol"])
            #expect(created.createdBy == "alice" && created.lastSeq == 0 && created.title == "Trip")
            let shown = try await server.request(.get, "/v1/conversations/\(created.id)", as: "bob")
            #expect(shown.status == .ok)
            var asBob = created
            asBob.role = .member
            #expect(created.role == .owner)
            #expect(try shown.decode(Conversation.self) == asBob)
            // Wire format: snake_case keys, RFC 3339 UTC timestamps with milliseconds.
            let object = try #require(try JSONSerialization.jsonObject(with: shown.body) as? [String: Any])
            #expect(
                Set(object.keys) == [
                    "id", "title", "created_by", "created_at", "last_seq", "members", "read_seq", "unread_count",
                    "unread_mentions", "last_message", "version", "activity", "muted", "muted_until", "role",
                    "slow_mode_seconds", "first_seq",
                ])
            let timestamp = try #require(object["created_at"] as? String)
            #expect(timestamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "\(timestamp)")

            let second = try await server.createConversation(as: "bob")
            let list = try await server.request(.get, "/v1/conversations?limit=1", as: "bob").decode(ConversationList.self)
            #expect(list.conversations.map(\.id) == [second.id])
            let cursor = try #require(list.nextCursor)
            let rest = try await server.request(.get, "/v1/conversations?limit=1&cursor=\(cursor)", as: "bob")
                .decode(ConversationList.self)
            #expect(rest.conversations.map(\.id) == [created.id])
            #expect(rest.nextCursor == nil)
            let raw = try await server.request(.get, "/v1/conversations?limit=5", as: "bob")
            #expect(raw.text.contains(#""next_cursor":null"#))
            #expect(raw.text.contains(#""activity_changed":false"#))
        }
    }

    /// A message in a conversation the pass has not reached yet moves it
    /// above the cursor: the next page says `activity_changed`, and a pass
    /// from the top lists it.
    @Test func theConversationListSaysWhenAConversationJumpedAboveTheCursor() async throws {
        try await TestServer.run { server in
            var ids: [UUID] = []
            for index in 0..<4 { ids.append(try await server.createConversation(as: "alice", title: "c\(index)").id) }
            let first = try await server.request(.get, "/v1/conversations?limit=2", as: "alice").decode(ConversationList.self)
            #expect(first.conversations.map(\.id) == [ids[3], ids[2]])
            #expect(!first.activityChanged)
            #expect(try await server.send("wake up", to: ids[0], as: "alice").status == .created)
            let cursor = try #require(first.nextCursor)
            let second = try await server.request(.get, "/v1/conversations?limit=2&cursor=\(cursor)", as: "alice")
                .decode(ConversationList.self)
            #expect(second.conversations.map(\.id) == [ids[1]])
            #expect(second.activityChanged)
            let restarted = try await server.request(.get, "/v1/conversations?limit=10", as: "alice")
                .decode(ConversationList.self)
            #expect(restarted.conversations.map(\.id) == [ids[0], ids[3], ids[2], ids[1]])

            // A cursor of the earlier kind (a bare activity mark) still pages, and asks for a restart.
            let legacy = Data("a:\(Int64.max)".utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
            let old = try await server.request(.get, "/v1/conversations?limit=10&cursor=\(legacy)", as: "alice")
                .decode(ConversationList.self)
            #expect(old.conversations.count == 4 && old.activityChanged)
            for bad in ["nonsense", "Yjox", Data("b:1:2".utf8).base64EncodedString()] {
                let reply = try await server.request(.get, "/v1/conversations?cursor=\(bad)", as: "alice")
                #expect(reply.status == .badRequest, "\(bad)")
                #expect(try reply.error().error.code == .invalidParameter)
            }
        }
    }

    @Test func nonMembersGetTheSame404AsForAMissingConversation() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            #expect(try await server.send("secret", to: conversation.id, as: "alice").status == .created)
            let paths = [
                "/v1/conversations/\(conversation.id)", "/v1/conversations/\(conversation.id)/messages",
            ]
            for path in paths {
                let outsider = try await server.request(.get, path, as: "mallory")
                let missing = try await server.request(.get, path.replacingOccurrences(of: "\(conversation.id)", with: "\(UUID())"), as: "alice")
                #expect(outsider.status == .notFound && missing.status == .notFound)
                #expect(outsider.body == missing.body)
            }
            let send = try await server.send("let me in", to: conversation.id, as: "mallory")
            #expect(send.status == .notFound)
            let join = try await server.request(
                .post, "/v1/conversations/\(conversation.id)/members", as: "mallory", json: AddMemberRequest(userId: "mallory"))
            #expect(join.status == .notFound)
            let page = try await server.request(.get, "/v1/conversations/\(conversation.id)/messages", as: "bob")
                .decode(MessagePage.self)
            #expect(page.messages.map(\.body) == ["secret"])
        }
    }

    @Test func membershipChangesOverHTTP() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let membersPath = "/v1/conversations/\(conversation.id)/members"
            // A percent-encoded id in the path is the same id (encodeURIComponent writes @ as %40).
            _ = try await server.request(.post, membersPath, as: "bob", json: AddMemberRequest(userId: "erin@example.com"))
            #expect(try await server.request(.delete, "\(membersPath)/erin%40example.com", as: "alice").status == .noContent)
            let added = try await server.request(.post, membersPath, as: "bob", json: AddMemberRequest(userId: "dave"))
            #expect(added.status == .ok)
            #expect(try added.decode(Conversation.self).members == ["alice", "bob", "dave"])
            let badID = try await server.request(.post, membersPath, as: "bob", rawBody: #"{"user_id": "bad/id"}"#)
            #expect(badID.status == .unprocessableContent)
            let forbidden = try await server.request(.delete, "\(membersPath)/dave", as: "bob")
            #expect(forbidden.status == .forbidden)
            #expect(try forbidden.error().error.code == .forbidden)
            #expect(try await server.request(.delete, "\(membersPath)/dave", as: "dave").status == .noContent)
            #expect(try await server.request(.delete, "\(membersPath)/bob", as: "alice").status == .noContent)
            #expect(try await server.request(.delete, "\(membersPath)/zed", as: "alice").status == .notFound)
            #expect(try await server.request(.get, "/v1/conversations/\(conversation.id)", as: "bob").status == .notFound)
        }
    }
}
