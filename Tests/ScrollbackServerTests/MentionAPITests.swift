import Foundation
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// `GET /v1/mentions` and `unread_mentions` over HTTP, and on the inbox
/// stream across two instances.
@Suite struct MentionAPITests {
    @Test func mentionsPageNewestFirstWithAnOpaqueCursor() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            for n in 1...3 { #expect(try await server.send("@bob number \(n)", to: conversation.id, as: "alice").status == .created) }
            _ = try await server.request(.put, "/v1/conversations/\(conversation.id)/read", as: "bob", json: ReadMarkerRequest(seq: 1))

            let first = try await server.request(.get, "/v1/mentions?limit=2", as: "bob")
            #expect(first.status == .ok, "\(first.text)")
            let page = try first.decode(MentionPage.self)
            #expect(page.mentions.map(\.seq) == [3, 2])
            #expect(page.mentions.allSatisfy { $0.conversationId == conversation.id && !$0.read })
            #expect(page.mentions.first?.message.body == "@bob number 3")
            let object = try #require(try JSONSerialization.jsonObject(with: first.body) as? [String: Any])
            #expect(Set(object.keys) == ["mentions", "next"])
            let item = try #require((object["mentions"] as? [[String: Any]])?.first)
            #expect(Set(item.keys) == ["conversation_id", "seq", "message", "read"])

            let cursor = try #require(page.next)
            let rest = try await server.request(.get, "/v1/mentions?limit=2&before=\(cursor)", as: "bob")
                .decode(MentionPage.self)
            #expect(rest.mentions.map(\.seq) == [1])
            #expect(rest.mentions.first?.read == true)
            #expect(rest.next == nil)
            #expect(try await server.request(.get, "/v1/mentions", as: "bob").text.contains(#""next":null"#))
            #expect(try await server.request(.get, "/v1/mentions", as: "alice").decode(MentionPage.self).mentions.isEmpty)

            // unread_mentions on the conversation, the list and the read marker.
            let shown = try await server.request(.get, "/v1/conversations/\(conversation.id)", as: "bob")
                .decode(Conversation.self)
            #expect(shown.unreadMentions == 2)
            let listed = try await server.request(.get, "/v1/conversations", as: "bob").decode(ConversationList.self)
            #expect(listed.conversations.first?.unreadMentions == 2)
            let marker = try await server.request(
                .put, "/v1/conversations/\(conversation.id)/read", as: "bob", json: ReadMarkerRequest(seq: 2))
            #expect(try marker.decode(ReadMarker.self).unreadMentions == 1)
            #expect(marker.text.contains(#""unread_mentions":1"#))
        }
    }

    @Test func badCursorsAndLimitsAre400AndTheRouteNeedsAToken() async throws {
        try await TestServer.run { server in
            let badCursors = [
                "nonsense", "bTot", MentionCursor.encode(1) + "x", "YToxMg",
                String(repeating: "A", count: 200), "bTotNQ",
            ]
            for bad in badCursors {
                let reply = try await server.request(.get, "/v1/mentions?before=\(bad)", as: "bob")
                #expect(reply.status == .badRequest, "\(bad): \(reply.text)")
                #expect(try reply.error().error.code == .invalidParameter)
            }
            for bad in ["0", "51", "-1", "x", "1.5", ""] {
                let reply = try await server.request(.get, "/v1/mentions?limit=\(bad)", as: "bob")
                #expect(reply.status == .badRequest, "limit=\(bad): \(reply.text)")
                #expect(try reply.error().error.code == .invalidParameter)
            }
            let twice = try await server.request(.get, "/v1/mentions?limit=1&limit=2", as: "bob")
            #expect(twice.status == .badRequest)
            #expect(try await server.request(.get, "/v1/mentions?limit=50", as: "bob").status == .ok)

            let anonymous = try await server.request(.get, "/v1/mentions")
            #expect(anonymous.status == .unauthorized)
            #expect(try anonymous.error().error.code == .unauthorized)
            #expect(anonymous.headers[.wwwAuthenticate] != nil)
        }
    }

    @Test func theCursorRoundTripsAndRefusesWhatItDidNotMake() throws {
        #expect(try MentionCursor.decode(MentionCursor.encode(1)) == 1)
        #expect(try MentionCursor.decode(MentionCursor.encode(.max)) == .max)
        #expect(throws: APIError.self) { try MentionCursor.decode(MentionCursor.encode(0)) }
        #expect(throws: APIError.self) { try MentionCursor.decode(ConversationCursor.encode(.start)) }
    }

    /// A mention sent through instance 0 reaches the mentioned user's inbox
    /// on instance 1 with `unread_mentions`, and a read marker moved
    /// through instance 0 brings it back down.
    @Test func theInboxOnTheOtherInstanceCarriesUnreadMentions() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let inbox = try await cluster.connect("bob", to: 1)
            _ = try await InboxStreamTests.subscribeInbox(inbox)
            let sender = cluster.instances[0].store
            _ = try await sender.send(to: id, from: "alice", body: "@bob lunch?", clientID: nil)

            // The conversation's creation may come first, or be repeated
            // with the message in it (a read may start from a cursor that
            // transactions open elsewhere hold back; see docs/protocol.md).
            var frame = try await inbox.next(where: InboxStreamTests.isInbox)
            while InboxStreamTests.isCreation(of: id, frame) { frame = try await inbox.next(where: InboxStreamTests.isInbox) }
            guard let (line, _) = InboxStreamTests.line(frame) else {
                Issue.record("expected conversation_activity, got \(frame)")
                return
            }
            #expect(line.conversationId == id && line.unreadMentions == 1 && line.unreadCount == 1)

            _ = try await sender.edit(1, in: id, by: "alice", body: "lunch?")
            guard case .conversationActivity(let edited, _) = try await inbox.next(where: InboxStreamTests.isInbox) else {
                Issue.record("expected conversation_activity")
                return
            }
            #expect(edited.unreadMentions == 0 && edited.unreadCount == 1)

            _ = try await sender.edit(1, in: id, by: "alice", body: "lunch, @bob?")
            _ = try await inbox.next(where: InboxStreamTests.isInbox)
            _ = try await sender.markRead(1, in: id, by: "bob")
            guard case .inboxRead(_, _, let seq, let unread, let mentions, _) = try await inbox.next(
                where: InboxStreamTests.isInbox)
            else {
                Issue.record("expected read")
                return
            }
            #expect(seq == 1 && unread == 0 && mentions == 0)
        }
    }
}
