import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct ThreadStoreTests {
    @Test func aReplyShowsItsParentAndTheRootKeepsTheThreadsSummary() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob", "carol"]).id
            let root = try await store.send(to: id, from: "alice", body: "lunch?", clientID: nil).message
            #expect(root.thread == nil && root.replyTo == nil && root.threadRoot == nil)
            let reply = try await store.send(to: id, from: "bob", body: "yes", clientID: "r1", replyTo: root.seq).message
            #expect(reply.seq == 2 && reply.version == 2)
            #expect(reply.replyTo == ReplyPreview(seq: 1, sender: "alice", excerpt: "lunch?", deleted: false))
            #expect(reply.threadRoot == 1)
            // A reply to a reply joins the root's thread.
            let nested = try await store.send(to: id, from: "carol", body: "me too", clientID: nil, replyTo: reply.seq)
                .message
            #expect(nested.threadRoot == 1 && nested.replyTo?.seq == 2 && nested.replyTo?.sender == "bob")
            _ = try await store.send(to: id, from: "bob", body: "at noon", clientID: nil, replyTo: root.seq)

            // Each reply took two versions: its own, then the root's.
            let page = try await store.page(of: id, for: "alice", anchor: .newest, limit: 10)
            #expect(page.version == 7 && page.lastSeq == 4)
            let stored = try #require(page.messages.last)
            #expect(stored.seq == 1 && stored.version == 7)
            #expect(stored.thread?.replyCount == 3)
            #expect(stored.thread?.participants == ["bob", "carol"])
            #expect(stored.thread?.lastReplyAt == page.messages.first?.createdAt)
            // `changes` carries the root with its new summary.
            let changes = try await store.changes(in: id, for: "bob", since: 5, limit: 10)
            #expect(changes.messages.map(\.seq) == [4, 1] && changes.messages.last?.thread?.replyCount == 3)

            // A retry of a reply with its client_id returns the original and spends nothing.
            let again = try await store.send(to: id, from: "bob", body: "yes", clientID: "r1", replyTo: root.seq)
            #expect(again == .replayed(reply))
            #expect(try await store.page(of: id, for: "alice", anchor: .newest, limit: 1).version == 7)
        }
    }

    @Test func aPreviewFollowsItsParentsEditsAndDeletion() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let long = String(repeating: "é", count: 150)
            let root = try await store.send(to: id, from: "alice", body: long, clientID: nil).message
            let reply = try await store.send(to: id, from: "bob", body: "?", clientID: nil, replyTo: root.seq).message
            #expect(reply.replyTo?.excerpt == String(repeating: "é", count: APILimits.replyExcerptLength))
            _ = try await store.edit(root.seq, in: id, by: "alice", body: "edited")
            var page = try await store.page(of: id, for: "bob", anchor: .newest, limit: 10)
            #expect(page.messages.first?.replyTo?.excerpt == "edited")
            _ = try await store.delete(root.seq, in: id, by: "alice")
            page = try await store.page(of: id, for: "bob", anchor: .newest, limit: 10)
            #expect(page.messages.first?.replyTo == ReplyPreview(seq: 1, sender: "alice", excerpt: nil, deleted: true))
            #expect(ReplyPreview(of: page.messages.last!) == page.messages.first?.replyTo)
        }
    }

    @Test func repliesToWhatCannotBeAnsweredAreRefusedAndStoreNothing() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let other = try await store.createConversation(creator: "alice", title: nil, members: []).id
            _ = try await store.send(to: other, from: "alice", body: "elsewhere", clientID: nil)
            let first = try await store.send(to: id, from: "alice", body: "one", clientID: nil).message
            await #expect(throws: StoreError.replyTargetMissing(2)) {
                try await store.send(to: id, from: "bob", body: "x", clientID: nil, replyTo: 2)
            }
            _ = try await store.delete(first.seq, in: id, by: "alice")
            await #expect(throws: StoreError.replyTargetDeleted) {
                try await store.send(to: id, from: "bob", body: "x", clientID: "c", replyTo: first.seq)
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.send(to: id, from: "mallory", body: "x", clientID: nil, replyTo: first.seq)
            }
            let page = try await store.page(of: id, for: "alice", anchor: .newest, limit: 10)
            #expect(page.lastSeq == 1 && page.version == 2)
        }
    }

    @Test func threadPagesHaveHistorysAnchorsAndFlags() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let root = try await store.send(to: id, from: "alice", body: "root", clientID: nil).message
            // Seven replies between other messages: their seqs have holes.
            var replies: [Int64] = []
            for index in 1...7 {
                _ = try await store.send(to: id, from: "bob", body: "between \(index)", clientID: nil)
                replies.append(
                    try await store.send(to: id, from: "bob", body: "reply \(index)", clientID: nil, replyTo: root.seq)
                        .message.seq)
            }
            func thread(_ anchor: PageAnchor, _ limit: Int) async throws -> ([Int64], Bool, Bool) {
                let page = try await store.thread(of: root.seq, in: id, for: "alice", anchor: anchor, limit: limit)
                #expect(page.root.seq == root.seq && page.root.thread?.replyCount == 7)
                return (page.messages.map(\.seq), page.hasOlder, page.hasNewer)
            }
            let newestFirst = Array(replies.reversed())
            #expect(try await thread(.newest, 3) == (Array(newestFirst[0..<3]), true, false))
            #expect(try await thread(.newest, 7) == (newestFirst, false, false))
            #expect(try await thread(.before(replies[4]), 3) == (Array(newestFirst[3..<6]), true, true))
            #expect(try await thread(.before(replies[1]), 3) == ([replies[0]], false, true))
            #expect(try await thread(.before(replies[0]), 3) == ([], false, true))
            #expect(try await thread(.after(replies[4]), 5) == ([replies[6], replies[5]], true, false))
            #expect(try await thread(.after(replies[6]), 5) == ([], true, false))
            #expect(try await thread(.around(replies[3]), 3) == ([replies[4], replies[3], replies[2]], true, true))
            // Walking down by `before` meets every reply once.
            var seen: [Int64] = []
            var anchor = PageAnchor.newest
            while true {
                let (seqs, hasOlder, _) = try await thread(anchor, 2)
                seen += seqs
                guard hasOlder, let last = seqs.last else { break }
                anchor = .before(last)
            }
            #expect(seen == newestFirst)

            // A message without replies has an empty thread; a reply is no root.
            let lone = try await store.thread(of: 2, in: id, for: "alice", anchor: .newest, limit: 5)
            #expect(lone.messages.isEmpty && !lone.hasOlder && !lone.hasNewer && lone.root.thread == nil)
            await #expect(throws: StoreError.notAThreadRoot(root: root.seq)) {
                try await store.thread(of: replies[0], in: id, for: "alice", anchor: .newest, limit: 5)
            }
            await #expect(throws: StoreError.messageNotFound) {
                try await store.thread(of: 999, in: id, for: "alice", anchor: .newest, limit: 5)
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.thread(of: root.seq, in: id, for: "mallory", anchor: .newest, limit: 5)
            }
        }
    }

    @Test func reactionsAreIdempotentCountedAndMarkedForTheReader() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob", "carol"]).id
            let message = try await store.send(to: id, from: "alice", body: "party", clientID: nil).message
            let first = try await store.react("🎉", to: message.seq, in: id, by: "bob", adding: true)
            #expect(first.changed && first.message.version == 2)
            #expect(first.message.reactions == [ReactionSummary(emoji: "🎉", count: 1, me: true)])
            // Again: nothing changes, no version is spent.
            let again = try await store.react("🎉", to: message.seq, in: id, by: "bob", adding: true)
            #expect(!again.changed && again.message.version == 2 && again.message.reactions == first.message.reactions)
            _ = try await store.react("🎉", to: message.seq, in: id, by: "carol", adding: true)
            _ = try await store.react("👍🏽", to: message.seq, in: id, by: "carol", adding: true)

            func reactions(for user: UserID) async throws -> [ReactionSummary] {
                try await store.page(of: id, for: user, anchor: .newest, limit: 1).messages[0].reactions
            }
            #expect(
                try await reactions(for: "bob") == [
                    ReactionSummary(emoji: "🎉", count: 2, me: true), ReactionSummary(emoji: "👍🏽", count: 1, me: false),
                ])
            #expect(
                try await reactions(for: "alice") == [
                    ReactionSummary(emoji: "🎉", count: 2, me: false), ReactionSummary(emoji: "👍🏽", count: 1, me: false),
                ])
            let changes = try await store.changes(in: id, for: "carol", since: 1, limit: 10)
            #expect(changes.version == 4 && changes.messages.first?.reactions.allSatisfy(\.me) == true)

            // Removing: the count drops, an emoji at zero goes; removing again changes nothing.
            let removed = try await store.react("🎉", to: message.seq, in: id, by: "bob", adding: false)
            #expect(removed.changed && removed.message.version == 5)
            #expect(
                removed.message.reactions == [
                    ReactionSummary(emoji: "🎉", count: 1, me: false), ReactionSummary(emoji: "👍🏽", count: 1, me: false),
                ])
            #expect(!(try await store.react("🎉", to: message.seq, in: id, by: "bob", adding: false)).changed)
            let gone = try await store.react("👍🏽", to: message.seq, in: id, by: "carol", adding: false)
            #expect(gone.message.reactions.map(\.emoji) == ["🎉"])

            await #expect(throws: StoreError.conversationNotFound) {
                try await store.react("🎉", to: message.seq, in: id, by: "mallory", adding: true)
            }
            await #expect(throws: StoreError.messageNotFound) {
                try await store.react("🎉", to: 99, in: id, by: "bob", adding: true)
            }
            // A deletion takes the reactions with the body; a tombstone takes none.
            let tombstone = try await store.delete(message.seq, in: id, by: "alice").message
            #expect(tombstone.reactions.isEmpty)
            await #expect(throws: StoreError.messageDeleted) {
                try await store.react("🎉", to: message.seq, in: id, by: "bob", adding: true)
            }
            #expect(try await store.values(Int.self, "SELECT count(*) FROM reactions") == [0])
        }
    }

    @Test func aMessageHasAtMostTheDocumentedKindsOfReactions() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let seq = try await store.send(to: id, from: "alice", body: "vote", clientID: nil).message.seq
            let kinds = (0..<APILimits.maxReactionKinds).map { String(UnicodeScalar(0x1F600 + $0)!) }
            for emoji in kinds { _ = try await store.react(emoji, to: seq, in: id, by: "alice", adding: true) }
            await #expect(throws: StoreError.tooManyReactions(limit: APILimits.maxReactionKinds)) {
                try await store.react("🦄", to: seq, in: id, by: "bob", adding: true)
            }
            // One it already has is still welcome.
            let joined = try await store.react(kinds[0], to: seq, in: id, by: "bob", adding: true)
            #expect(joined.changed && joined.message.reactions.count == APILimits.maxReactionKinds)
            #expect(joined.message.reactions.map(\.emoji) == kinds)
            #expect(joined.message.reactions[0] == ReactionSummary(emoji: kinds[0], count: 2, me: true))
        }
    }
}
