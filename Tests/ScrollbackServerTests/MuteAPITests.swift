import Foundation
import HTTPTypes
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// Muting over HTTP: for the caller only, for good or until a time, shown
/// on the conversation, refused with what to fix.
@Suite struct MuteAPITests {
    @Test func aConversationIsMutedUntilATimeOrForGoodAndUnmuted() async throws {
        try await TestServer.run { server in
            let conversation = try await server.request(
                .post, "/v1/conversations", as: "alice", json: CreateConversationRequest(members: ["bob"])
            ).decode(Conversation.self)
            let path = "/v1/conversations/\(conversation.id)"
            #expect(!conversation.muted && conversation.mutedUntil == nil)

            // No body: for good.
            let forGood = try await server.request(.put, path + "/mute", as: "bob")
            #expect(forGood.status == .ok, "\(forGood.text)")
            #expect(try forGood.decode(MuteState.self) == MuteState(conversationId: conversation.id, muted: true, mutedUntil: nil))
            let shown = try await server.request(.get, path, as: "bob").decode(Conversation.self)
            #expect(shown.muted && shown.mutedUntil == nil)
            // Alice's view is hers.
            #expect(try await !server.request(.get, path, as: "alice").decode(Conversation.self).muted)

            let until = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3600).rounded())
            let timed = try await server.request(.put, path + "/mute", as: "bob", json: MuteRequest(until: until))
            #expect(try timed.decode(MuteState.self).mutedUntil == until)
            let listed = try await server.request(.get, "/v1/conversations", as: "bob").decode(ConversationList.self)
            #expect(listed.conversations.first?.mutedUntil == until)

            let unmuted = try await server.request(.delete, path + "/mute", as: "bob")
            #expect(try unmuted.decode(MuteState.self) == MuteState(conversationId: conversation.id, muted: false, mutedUntil: nil))
            #expect(try await !server.request(.get, path, as: "bob").decode(Conversation.self).muted)

            // A mute that ran out is not one.
            _ = try await server.request(.put, path + "/mute", as: "bob", json: MuteRequest(until: Date().addingTimeInterval(1)))
            try await Task.sleep(for: .milliseconds(1500))
            #expect(try await !server.request(.get, path, as: "bob").decode(Conversation.self).muted)
        }
    }

    @Test func badMutesAreRefusedWithWhatToFix() async throws {
        try await TestServer.run { server in
            let conversation = try await server.request(
                .post, "/v1/conversations", as: "alice", json: CreateConversationRequest(members: [])
            ).decode(Conversation.self)
            let path = "/v1/conversations/\(conversation.id)/mute"
            let past = try await server.request(.put, path, as: "alice", rawBody: #"{"until": "2020-01-01T00:00:00Z"}"#)
            #expect(past.status == .unprocessableContent)
            #expect(try past.error().error.code == .invalidMute)
            #expect(try past.error().error.message.contains("future"))
            let garbled = try await server.request(.put, path, as: "alice", rawBody: #"{"until": "tomorrow"}"#)
            #expect(garbled.status == .badRequest || garbled.status == .unprocessableContent)
            #expect(try await server.request(.put, path, as: "mallory").status == .notFound)
            #expect(try await server.request(.delete, path, as: "mallory").status == .notFound)
            #expect(try await server.request(.put, "/v1/conversations/not-a-uuid/mute", as: "alice").status == .notFound)
            // Nothing changed for the member who made the bad requests.
            #expect(try await !server.request(.get, "/v1/conversations/\(conversation.id)", as: "alice").decode(Conversation.self).muted)
        }
    }
}
