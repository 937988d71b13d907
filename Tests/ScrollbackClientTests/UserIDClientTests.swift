import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// User ids as identity providers write them, through the kit against a real
/// instance: in paths (percent-encoded by the kit, decoded by the server)
/// and in `On-Behalf-Of`.
@Suite struct UserIDClientTests {
    static let odd = [
        "auth0|5f7c8ec7c33c6c004bbafe82", "名前🙂", "p%q?r#s&t=u+v", "..", "a;b,c", "%41", "dave+x@example.com",
    ]

    @Test func pathsAndOnBehalfOfCarryAnyID() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "backend", ttl: 600)
            let backend = ScrollbackClient(baseURL: cluster.instances[0].baseURL, token: { server })
            let owner = "a user: with spaces"
            let acting = backend.onBehalf(of: owner)
            let conversation = try await acting.createConversation(members: Self.odd)
            #expect(conversation.members == ([owner] + Self.odd).map(UserID.init(rawValue:)).sorted().map(\.rawValue))
            #expect(conversation.createdBy == owner)

            for user in Self.odd {
                try await acting.removeMember(user, from: conversation.id)
                #expect(!(try await acting.conversation(conversation.id).members.contains(user)), "\(user)")
                _ = try await acting.addMember(user, to: conversation.id)
                try await acting.setRole(.admin, of: user, in: conversation.id)
                #expect(try await acting.members(of: conversation.id).first { $0.userId == user }?.role == .admin)
                _ = try await acting.block(user)
                #expect(try await acting.blocks().map(\.userId).contains(user), "\(user)")
                try await acting.unblock(user)
            }
            #expect(try await acting.blocks().isEmpty)
            try await acting.ban(Self.odd[0], from: conversation.id)
            #expect(try await acting.bans(of: conversation.id).map(\.userId) == [Self.odd[0]])
            try await acting.unban(Self.odd[0], from: conversation.id)

            // The user the header named, exactly, acted: as the members see it and in the audit log.
            let member = ClientTests.client(cluster, Self.odd[1])
            let sent = try await backend.onBehalf(of: Self.odd[1]).send("hi", to: conversation.id)
            #expect(sent.message.sender == Self.odd[1])
            #expect(try await member.page(of: conversation.id).messages.first?.sender == Self.odd[1])
            let log = try await backend.auditLog(limit: 100)
            #expect(log.entries.contains { $0.onBehalfOf == owner && $0.method == "DELETE" })
            #expect(log.entries.contains { $0.onBehalfOf == Self.odd[1] && $0.method == "POST" && $0.status == 201 })

            // The admin routes of a user.
            var exported = 0
            _ = try await backend.exportUser(Self.odd[2]) { _ in exported += 1 }
            #expect(exported > 0)
            let erased = try await backend.eraseUser(Self.odd[2])
            #expect(erased.userId == Self.odd[2] && erased.conversations == 1)
        }
    }

    /// The one conversation of a set of users stays one per set when ids
    /// hold commas: `a,b` with `c` is not `a` with `b,c`.
    @Test func distinctConversationsOfIDsWithCommasAreApart() async throws {
        try await LiveCluster.run { cluster in
            let zed = ClientTests.client(cluster, "zed")
            let first = try await zed.distinctConversation(with: ["a,b", "c"])
            let second = try await zed.distinctConversation(with: ["a", "b,c"])
            #expect(first.id != second.id)
            #expect(try await zed.distinctConversation(with: ["c", "a,b"]).id == first.id)
        }
    }
}
