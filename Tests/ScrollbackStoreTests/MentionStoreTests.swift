import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The mention rule of sql/007_mentions.sql, through every write path, and
/// the counts and the list that read it.
@Suite struct MentionStoreTests {
    /// Who a message mentions, as stored.
    static func mentioned(_ store: ScrollbackStore, in id: UUID, seq: Int64) async throws -> [String] {
        try await store.values(
            String.self,
            "SELECT user_id FROM mentions WHERE conversation_id = \(id) AND seq = \(seq) ORDER BY user_id COLLATE \"C\"")
    }

    static let members: [UserID] = [
        "bob", "carol", "dave@example.com", "e.f", "x_y", "bob.smith",
        "auth0|5f7c8ec7c33c6c004bbafe82", "a user: with spaces", "名前🙂", "a]b", #"back\slash"#, "x @bob y",
    ]

    @Test(arguments: [
        ("@bob at the start", ["bob"]),
        ("thanks @bob.", ["bob"]),
        ("(@carol), [@bob]!", ["bob", "carol"]),
        ("mail a@bob or alice@bob", []),
        ("@nobody here", []),
        ("@alice mentions myself", []),
        ("@bob @bob and @bob again", ["bob"]),
        ("write @dave@example.com and @e.f", ["dave@example.com", "e.f"]),
        ("trailing @x_y_ and @bob-", ["bob", "x_y"]),
        ("@bob.smith is not @bob", ["bob", "bob.smith"]),
        ("@Bob differs in case", []),
        ("é@carol after a letter that is no id character", ["carol"]),
        ("line\n@carol", ["carol"]),
        ("no at sign at all", []),
        ("@ alone and @@bob", []),
        // `@[...]` names any id (sql/029_mentions_of_any_id.sql): up to the
        // first `]` not escaped, `\]` and `\\` standing for `]` and `\`.
        ("hi @[auth0|5f7c8ec7c33c6c004bbafe82].", ["auth0|5f7c8ec7c33c6c004bbafe82"]),
        ("@[a user: with spaces] and (@[名前🙂])", ["a user: with spaces", "名前🙂"]),
        (#"@[a\]b] and @[back\\slash]"#, ["a]b", #"back\slash"#]),
        ("@[x @bob y] names one id, not bob", ["x @bob y"]),
        ("@[bob] is bob too, @[Bob] is nobody", ["bob"]),
        (#"@[a]b] ends at the first ], @[unclosed\] @bob"#, ["bob"]),
        ("a@[bob] after an id character, @[] and @[ bob]", []),
        ("@[alice] is the sender", []),
    ])
    func theParsingRule(_ body: String, _ expected: [String]) async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: Self.members).id
            let message = try await store.send(to: id, from: "alice", body: body, clientID: nil).message
            #expect(
                try await Self.mentioned(store, in: id, seq: message.seq)
                    == expected.map(UserID.init(rawValue:)).sorted().map(\.rawValue))
        }
    }

    @Test func aMessageMentionsAtMostFiftyUsersTheFirstInTheBody() async throws {
        try await TestDatabase.withStore { store in
            let users = (0..<60).map { UserID(rawValue: String(format: "u%02d", $0)) }
            let id = try await store.createConversation(creator: "alice", title: nil, members: users).id
            let body = users.map { "@\($0.rawValue)" }.joined(separator: " ")
            let message = try await store.send(to: id, from: "alice", body: body, clientID: nil).message
            let stored = try await Self.mentioned(store, in: id, seq: message.seq)
            #expect(stored.count == APILimits.maxMentionsPerMessage)
            #expect(stored == users.prefix(50).map(\.rawValue))
        }
    }

    @Test func onlyMembersAtTheTimeOfTheSendAreMentioned() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            _ = try await store.send(to: id, from: "alice", body: "@carol are you there?", clientID: nil)
            _ = try await store.addMember("carol", to: id, by: "alice")
            #expect(try await Self.mentioned(store, in: id, seq: 1).isEmpty)
            _ = try await store.send(to: id, from: "alice", body: "@carol welcome", clientID: nil)
            #expect(try await Self.mentioned(store, in: id, seq: 2) == ["carol"])
        }
    }

    @Test func anEditAddsAndRemovesMentionsAndADeletionRemovesThemAll() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob", "carol"]).id
            _ = try await store.send(to: id, from: "alice", body: "@bob look", clientID: nil)
            _ = try await store.edit(1, in: id, by: "alice", body: "@carol look")
            #expect(try await Self.mentioned(store, in: id, seq: 1) == ["carol"])
            _ = try await store.edit(1, in: id, by: "alice", body: "@carol and @bob look")
            #expect(try await Self.mentioned(store, in: id, seq: 1) == ["bob", "carol"])
            // A mention added by an edit of a message without one.
            _ = try await store.send(to: id, from: "alice", body: "plain", clientID: nil)
            _ = try await store.edit(2, in: id, by: "alice", body: "plain, @bob")
            #expect(try await Self.mentioned(store, in: id, seq: 2) == ["bob"])
            _ = try await store.edit(2, in: id, by: "alice", body: "plain again")
            #expect(try await Self.mentioned(store, in: id, seq: 2).isEmpty)
            _ = try await store.delete(1, in: id, by: "alice")
            #expect(try await Self.mentioned(store, in: id, seq: 1).isEmpty)
            #expect(try await store.conversation(id, for: "bob").unreadMentions == 0)
        }
    }

    @Test func unreadMentionsCountUntilTheReadMarkerPassesThem() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            _ = try await store.send(to: id, from: "alice", body: "@bob one", clientID: nil)
            _ = try await store.send(to: id, from: "alice", body: "no mention", clientID: nil)
            _ = try await store.send(to: id, from: "alice", body: "@bob three", clientID: nil)
            // Bob's own message mentioning himself and alice.
            _ = try await store.send(to: id, from: "bob", body: "@bob @alice", clientID: nil)

            let bobs = try await store.conversation(id, for: "bob")
            #expect(bobs.unreadMentions == 2 && bobs.unreadCount == 3)
            #expect(try await store.conversation(id, for: "alice").unreadMentions == 1)
            let listed = try await store.conversations(for: "bob", limit: 10, after: nil)
            #expect(listed.conversations.map(\.unreadMentions) == [2])

            let marker = try await store.markRead(2, in: id, by: "bob")
            #expect(marker.unreadMentions == 1 && marker.unreadCount == 1)
            #expect(try await store.conversation(id, for: "bob").unreadMentions == 1)
            #expect(try await store.markRead(4, in: id, by: "bob").unreadMentions == 0)
            // A marker that does not move answers the same count.
            #expect(try await store.markRead(1, in: id, by: "bob").unreadMentions == 0)
        }
    }

    @Test func theInboxReadCarriesUnreadMentions() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let start = try await store.inbox(of: "bob", after: nil, limit: 10)
            _ = try await store.send(to: id, from: "alice", body: "hey @bob", clientID: nil)
            let read = try await store.inbox(of: "bob", after: start.cursor, limit: 10)
            #expect(read.entries.first { $0.conversation.id == id }?.conversation.unreadMentions == 1)
        }
    }

    /// Every mention of bob, paged `limit` at a time, with the pages' cursors.
    static func allMentions(
        _ store: ScrollbackStore, of user: UserID, limit: Int, between: (Int) async throws -> Void = { _ in }
    ) async throws -> [Mention] {
        var all: [Mention] = []
        var cursor: Int64? = nil
        var page = 0
        repeat {
            let result = try await store.mentions(of: user, before: cursor, limit: limit)
            #expect(result.mentions.count <= limit)
            all += result.mentions
            cursor = result.next
            page += 1
            try await between(page)
        } while cursor != nil
        return all
    }

    @Test func theListIsNewestFirstAcrossConversationsAndPagesWithoutGapsOrRepeats() async throws {
        try await TestDatabase.withStore { store in
            let a = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let b = try await store.createConversation(creator: "carol", title: nil, members: ["bob"]).id
            var sent: [(UUID, Int64)] = []
            for n in 0..<6 {
                let (id, sender): (UUID, UserID) = n % 2 == 0 ? (a, "alice") : (b, "carol")
                let message = try await store.send(to: id, from: sender, body: "@bob \(n)", clientID: nil).message
                sent.append((id, message.seq))
            }
            _ = try await store.markRead(1, in: a, by: "bob")
            let newestFirst = sent.reversed().map { "\($0.0):\($0.1)" }

            // Pages of exactly the list's size end with an empty next.
            let whole = try await store.mentions(of: "bob", before: nil, limit: 6)
            #expect(whole.mentions.map { "\($0.conversationId):\($0.seq)" } == newestFirst)
            #expect(whole.next == nil)
            #expect(whole.mentions.last?.read == true && whole.mentions.first?.read == false)
            #expect(whole.mentions.first?.message.body == "@bob 5")

            for limit in [1, 2, 3, 4, 5] {
                let paged = try await Self.allMentions(store, of: "bob", limit: limit)
                #expect(paged.map { "\($0.conversationId):\($0.seq)" } == newestFirst, "limit \(limit)")
            }
        }
    }

    @Test func mentionsArrivingBetweenPagesAreNeitherRepeatedNorSkipped() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            for n in 0..<7 { _ = try await store.send(to: id, from: "alice", body: "@bob old \(n)", clientID: nil) }
            let paged = try await Self.allMentions(store, of: "bob", limit: 2) { page in
                _ = try await store.send(to: id, from: "alice", body: "@bob new \(page)", clientID: nil)
            }
            // The pass lists what was there when it began, once each, in order.
            #expect(paged.map(\.seq) == [7, 6, 5, 4, 3, 2, 1])
            // The new ones are at the top of a new pass.
            let top = try await store.mentions(of: "bob", before: nil, limit: 1)
            #expect(top.mentions.first?.message.body.hasPrefix("@bob new") == true)
        }
    }

    @Test func deletedMessagesAndConversationsLeftAreNotListed() async throws {
        try await TestDatabase.withStore { store in
            let kept = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let left = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            _ = try await store.send(to: kept, from: "alice", body: "@bob stays", clientID: nil)
            _ = try await store.send(to: kept, from: "alice", body: "@bob goes", clientID: nil)
            _ = try await store.send(to: left, from: "alice", body: "@bob in a conversation he leaves", clientID: nil)
            _ = try await store.delete(2, in: kept, by: "alice")
            try await store.removeMember("bob", from: left, by: "bob")
            let page = try await store.mentions(of: "bob", before: nil, limit: 10)
            #expect(page.mentions.map(\.message.body) == ["@bob stays"])
            #expect(page.next == nil)
            #expect(try await store.mentions(of: "alice", before: nil, limit: 10).mentions.isEmpty)
        }
    }
}
