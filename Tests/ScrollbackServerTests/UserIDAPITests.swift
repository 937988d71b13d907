import Foundation
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// Users whose ids are as identity providers write them (`|`, `:`, spaces,
/// other scripts and emoji), end to end through a real server on loopback:
/// every path, body, page, cursor, mention and live frame carries their
/// exact id.
@Suite struct UserIDAPITests {
    static let auth0 = "auth0|5f7c8ec7c33c6c004bbafe82"
    static let spaced = "a user: with spaces"
    static let named = "名前🙂"

    /// `text` as one path segment: every byte of its UTF-8 percent-encoded
    /// but the unreserved ASCII characters.
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(
                charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"))!
    }

    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test func usersWithAnyIDTalkMentionReactAndAreSeenLive() async throws {
        try await LiveCluster.run { cluster in
            let (a, b, c) = (Self.auth0, Self.spaced, Self.named)
            let created = try await cluster.request(
                .POST, "/v1/conversations", as: a, body: try Self.json(["members": [b]]))
            #expect(created.status == 201, "\(String(decoding: created.body, as: UTF8.self))")
            let id = try created.decode(Conversation.self).id
            let members = "/v1/conversations/\(id)/members"
            #expect(try await cluster.request(.POST, members, as: a, body: try Self.json(["user_id": c])).status == 200)
            #expect(try await cluster.request(.DELETE, "\(members)/\(Self.segment(c))", as: a).status == 204)
            #expect(try await cluster.request(.GET, "/v1/conversations/\(id)", as: c).status == 404)
            #expect(try await cluster.request(.POST, members, as: a, body: try Self.json(["user_id": c])).status == 200)
            let listed = try await cluster.request(.GET, members, as: b).decode(MemberList.self)
            #expect(Set(listed.members.map(\.userId)) == [a, b, c])

            // B watches, with presence; C comes online.
            let watcher = try await cluster.connect(b)
            defer { watcher.close() }
            try await cluster.subscribe(watcher, to: id, presence: true)
            let other = try await cluster.connect(c)
            defer { other.close() }
            try await cluster.subscribe(other, to: id)
            let online = try await watcher.next {
                if case .presence(_, let presence) = $0 { presence.userId == c && presence.online } else { false }
            }
            #expect(online.presenceUser == c)

            // A mentions B and C by the bracketed form; B mentions A.
            let body = "hi @[\(b)] and @[\(c)], @[nobody]"
            #expect(try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: a, body: try Self.json(["body": body])).status == 201)
            let first = try #require(try await watcher.messages(1).first)
            #expect(first.sender == a && first.body == body)
            #expect(try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: b, body: try Self.json(["body": "@[\(a)] yes"])).status == 201)
            for (user, count) in [(a, 1), (b, 1), (c, 1)] {
                let page = try await cluster.request(.GET, "/v1/mentions", as: user).decode(MentionPage.self)
                #expect(page.mentions.count == count, "\(user)")
                let shown = try await cluster.request(.GET, "/v1/conversations/\(id)", as: user).decode(Conversation.self)
                #expect(shown.unreadMentions == count, "\(user)")
            }

            // C and B react to the first message: each sees their own as `me`.
            let reaction = "/v1/conversations/\(id)/messages/1/reactions/\(Self.segment("👍"))"
            #expect(try await cluster.request(.PUT, reaction, as: c).status == 200)
            #expect(try await cluster.request(.PUT, reaction, as: b).status == 200)
            let updated = try await watcher.next {
                if case .messageUpdated(let message) = $0 { message.reactions.first?.count == 2 } else { false }
            }
            guard case .messageUpdated(let live) = updated else { return }
            #expect(live.reactions.map(\.me) == [true])
            for (user, me) in [(a, false), (b, true), (c, true)] {
                let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: user).decode(MessagePage.self)
                let message = try #require(page.messages.first { $0.seq == 1 })
                #expect(message.reactions.map(\.me) == [me], "\(user)")
            }

            // Read markers, typing and a role change name C exactly, live.
            #expect(try await cluster.request(.PUT, "/v1/conversations/\(id)/read", as: c, body: try Self.json(["seq": 2])).status == 200)
            let read = try await watcher.next { if case .read(_, let user, _) = $0 { user == c } else { false } }
            guard case .read(_, _, let seq) = read else { return }
            #expect(seq == 2)
            #expect(try await cluster.request(.POST, "/v1/conversations/\(id)/typing", as: c).status == 204)
            _ = try await watcher.next { if case .typing(_, let user) = $0 { user == c } else { false } }
            let role = try await cluster.request(
                .PATCH, "\(members)/\(Self.segment(c))", as: a, body: try Self.json(["role": "admin"]))
            #expect(role.status == 200)
            _ = try await watcher.next {
                if case .memberUpdated(_, let user, .admin) = $0 { user == c } else { false }
            }
            // C is removed: C's socket hears it, B's sees the member list without C.
            #expect(try await cluster.request(.DELETE, "\(members)/\(Self.segment(c))", as: a).status == 204)
            _ = try await other.next { if case .memberRemoved(let gone) = $0 { gone == id } else { false } }

            // A page of the conversation list, by cursor, over conversations of these users.
            for n in 1...2 {
                #expect(try await cluster.request(.POST, "/v1/conversations", as: b, body: try Self.json(["members": [a], "title": "t\(n)"])).status == 201)
            }
            var seen: [UUID] = []
            var cursor: String?
            repeat {
                let query = cursor.map { "&cursor=\($0)" } ?? ""
                let page = try await cluster.request(.GET, "/v1/conversations?limit=1\(query)", as: a).decode(ConversationList.self)
                seen += page.conversations.map(\.id)
                #expect(page.conversations.allSatisfy { Set($0.members).isSuperset(of: [a, b]) })
                cursor = page.nextCursor
            } while cursor != nil && seen.count < 10
            #expect(seen.count == 3 && Set(seen).count == 3 && seen.contains(id))
        }
    }

    /// Ids the rule refuses are 422 in a body and in a path, with the rule
    /// in the message; `/` cannot reach a route even encoded.
    @Test func refusedIDsSayTheRule() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation(Self.auth0, members: [])
            for bad in ["(erased)", " lead", "trail ", "a\u{202E}b", String(repeating: "x", count: 256), "a\tb"] {
                let reply = try await cluster.request(
                    .POST, "/v1/conversations/\(id)/members", as: Self.auth0, body: try Self.json(["user_id": bad]))
                #expect(reply.status == 422, "\(bad)")
                #expect(reply.code == .invalidUserID)
                let text = String(decoding: reply.body, as: UTF8.self)
                #expect(text.contains("255 Unicode code points"), "\(text)")
                let path = try await cluster.request(.DELETE, "/v1/conversations/\(id)/members/\(Self.segment(bad))", as: Self.auth0)
                #expect(path.status == 422, "\(bad)")
            }
            let slash = try await cluster.request(.DELETE, "/v1/conversations/\(id)/members/a%2Fb", as: Self.auth0)
            #expect(slash.status == 422 && slash.code == .invalidUserID)
        }
    }
}

extension ServerFrame {
    fileprivate var presenceUser: String? {
        if case .presence(_, let presence) = self { presence.userId } else { nil }
    }
}
