import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct ThreadAPITests {
    @Test func repliesThreadsAndReactionsOverHTTPWithTheirRefusals() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let messages = "/v1/conversations/\(conversation.id)/messages"
            #expect(try await server.send("root", to: conversation.id, as: "alice").status == .created)
            let reply = try await server.request(
                .post, messages, as: "bob", json: SendMessageRequest(body: "a reply", clientId: "r1", replyTo: 1))
            #expect(reply.status == .created)
            let replied = try reply.decode(MessageEnvelope.self).message
            #expect(replied.replyTo == ReplyPreview(seq: 1, sender: "alice", excerpt: "root", deleted: false))
            #expect(reply.text.contains(#""reply_to":{"deleted":false,"excerpt":"root","sender":"alice","seq":1}"#))

            let thread = try await server.request(.get, "\(messages)/1/thread?limit=10", as: "alice")
            #expect(thread.status == .ok)
            let page = try thread.decode(ThreadPage.self)
            #expect(page.root.thread?.replyCount == 1 && page.messages.map(\.seq) == [2])

            // %F0%9F%8E%89 is 🎉.
            let react = try await server.request(.put, "\(messages)/1/reactions/%F0%9F%8E%89", as: "bob")
            #expect(react.status == .ok)
            #expect(try react.decode(MessageEnvelope.self).message.reactions == [.init(emoji: "🎉", count: 1, me: true)])
            #expect(react.text.contains(#""reactions":[{"count":1,"emoji":"🎉","me":true}]"#))
            let seen = try await server.request(.get, messages, as: "alice").decode(MessagePage.self)
            #expect(seen.messages.last?.reactions == [.init(emoji: "🎉", count: 1, me: false)])
            let removed = try await server.request(.delete, "\(messages)/1/reactions/%F0%9F%8E%89", as: "bob")
            #expect(removed.status == .ok)
            #expect(try removed.decode(MessageEnvelope.self).message.reactions.isEmpty)
            #expect(!removed.text.contains("reactions"))

            let cases: [(HTTPRequest.Method, String, String?, String, HTTPResponse.Status, APIErrorCode)] = [
                (.post, messages, #"{"body": "x", "reply_to": 9}"#, "bob", .unprocessableContent, .invalidReplyTo),
                (.post, messages, #"{"body": "x", "reply_to": 0}"#, "bob", .unprocessableContent, .invalidReplyTo),
                (.post, messages, #"{"body": "x", "reply_to": "1"}"#, "bob", .badRequest, .invalidField),
                (.put, "\(messages)/1/reactions/a", nil, "bob", .unprocessableContent, .invalidEmoji),
                (.put, "\(messages)/1/reactions/1", nil, "bob", .unprocessableContent, .invalidEmoji),
                (.put, "\(messages)/1/reactions/%F0%9F%8E%89%F0%9F%8E%89", nil, "bob", .unprocessableContent, .invalidEmoji),
                (.put, "\(messages)/9/reactions/%F0%9F%8E%89", nil, "bob", .notFound, .messageNotFound),
                (.put, "\(messages)/1/reactions/%F0%9F%8E%89", nil, "mallory", .notFound, .conversationNotFound),
                (.get, "\(messages)/2/thread", nil, "bob", .unprocessableContent, .notAThreadRoot),
                (.get, "\(messages)/9/thread", nil, "bob", .notFound, .messageNotFound),
                (.get, "\(messages)/1/thread?around_time=2026-01-01T00:00:00Z", nil, "bob", .badRequest, .invalidParameter),
                (.get, "\(messages)/1/thread?limit=0", nil, "bob", .badRequest, .invalidParameter),
            ]
            for (method, path, body, user, status, code) in cases {
                let answer = try await server.request(method, path, as: user, rawBody: body)
                #expect(answer.status == status, "\(method) \(path) as \(user): \(answer.text)")
                #expect(try answer.error().error.code == code, "\(method) \(path)")
            }
            // A reply to a deleted message is refused, and nothing was stored by any refusal.
            _ = try await server.request(.delete, "\(messages)/1", as: "alice")
            let toDeleted = try await server.request(
                .post, messages, as: "bob", json: SendMessageRequest(body: "x", replyTo: 1))
            #expect(toDeleted.status == .conflict)
            #expect(try toDeleted.error().error.code == .messageDeleted)
            let after = try await server.request(.get, messages, as: "bob").decode(MessagePage.self)
            #expect(after.lastSeq == 2 && after.messages.first?.replyTo?.deleted == true)
        }
    }

    /// A reply sent through one instance reaches a subscriber of the other as
    /// a `message`, its root as a `message_updated`; a reaction arrives as a
    /// `message_updated` whose `me` is about the one who receives it.
    @Test func repliesAndReactionsArriveLiveOnTheOtherInstance() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            let alice = try await cluster.connect("alice", to: 0)
            let bob = try await cluster.connect("bob", to: 1)
            let carol = try await cluster.connect("carol", to: 1)
            for client in [alice, bob, carol] { try await cluster.subscribe(client, to: id) }
            try alice.send(.send(conversationId: id, body: "root", clientId: "a1"))
            for client in [alice, bob, carol] { _ = try await client.messages(1) }

            try alice.send(.send(conversationId: id, body: "in the thread", clientId: "a2", replyTo: 1))
            for client in [bob, carol] {
                let reply = try await client.next { if case .message = $0 { true } else { false } }
                guard case .message(let message) = reply else { continue }
                #expect(message.seq == 2 && message.replyTo?.seq == 1 && message.threadRoot == 1)
                let root = try await client.next { if case .messageUpdated = $0 { true } else { false } }
                guard case .messageUpdated(let updated) = root else { continue }
                #expect(updated.seq == 1 && updated.thread?.replyCount == 1 && updated.version == 3)
            }

            _ = try await cluster.store.react("👍", to: 1, in: id, by: "bob", adding: true)
            for (client, mine) in [(bob, true), (carol, false)] {
                let frame = try await client.next {
                    if case .messageUpdated(let message) = $0 { message.version == 4 } else { false }
                }
                guard case .messageUpdated(let message) = frame else { continue }
                #expect(message.reactions == [ReactionSummary(emoji: "👍", count: 1, me: mine)])
            }
        }
    }
}
