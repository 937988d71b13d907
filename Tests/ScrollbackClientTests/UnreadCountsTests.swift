import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// The badge over every conversation, loaded or not: `GET /v1/unread`, and
/// the inbox's total before its list is all loaded.
@Suite(.serialized, .slotsAhead) struct UnreadCountsTests {
    @Test func theBadgeCountsConversationsNotLoadedYetAndFollowsChangesToThem() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let alice = ConversationFeedTests.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let dana = ConversationFeedTests.client(cluster, "dana-badge", baseURL: cluster.instances[1].baseURL)
            // Twelve conversations, each with (n % 4) unread messages for dana; the
            // first page of her list (3) holds only the most recently active.
            var ids: [UUID] = []
            var expected: Int64 = 0
            for n in 0..<12 {
                let id = try await cluster.conversation("alice", members: ["dana-badge"])
                try await cluster.send(n % 4, to: id, as: "alice")
                ids.append(id)
                expected += Int64(n % 4)
            }
            let withAny = Int64((0..<12).count { $0 % 4 > 0 })
            // Her own message is never unread to her.
            _ = try await dana.send("mine", to: ids[0])
            let counts = try await dana.unreadCounts()
            #expect(counts == UnreadCounts(unreadMessages: expected, unreadConversations: withAny))
            // Alice's: dana's one message, in one conversation.
            #expect(try await alice.unreadCounts() == UnreadCounts(unreadMessages: 1, unreadConversations: 1))

            let model = await InboxModel(feed: dana.inboxFeed(pageSize: 3))
            let log = await ModelTests.ChangeLog { _ = (model.unreadCount, model.unreadConversations, model.conversations) }
            // What the model holds beside what the server counts now, when a wait times out.
            let state: () async -> String = {
                let held = await MainActor.run {
                    "the model: \(model.unreadCount) in \(model.unreadConversations), live \(model.isLive), "
                        + "rows \(model.conversations.map { "\($0.id.uuidString.prefix(8)) \($0.unreadCount)" })"
                }
                let server = (try? await dana.unreadCounts()).map { "\($0.unreadMessages) in \($0.unreadConversations)" }
                return held + "; the server: " + (server ?? "no answer")
            }
            await model.start()
            try await until("the first page, and the total over all twelve") {
                await MainActor.run {
                    model.isLive && model.hasMore && model.unreadCount == expected
                        && model.unreadConversations == withAny
                }
            } describe: { await state() }
            #expect(await model.conversations.count < 12, "only the first page is loaded")
            let loadedSum = await model.conversations.reduce(0) { $0 + $1.unreadCount }
            #expect(loadedSum < expected, "the loaded rows alone would undercount")

            // A message in a conversation far below the loaded page, one in a
            // loaded one, then a read marker moved in one not loaded: the
            // badge follows each, exactly.
            let quiet = ids[4]  // 0 unread so far, low in the list
            _ = try await alice.send("to the quiet one", to: quiet)
            try await until("one more, in a conversation that had none") {
                await MainActor.run {
                    model.unreadCount == expected + 1 && model.unreadConversations == withAny + 1
                }
            } describe: { await state() }
            // The quiet one is the most active now, and loaded once its
            // fetch is answered: the top row then. (Read before, the top
            // row could still be one without unread messages, which the
            // next send would count as one more conversation with some.)
            try await until("the quiet one at the top") {
                await MainActor.run { model.conversations.first?.id == quiet }
            } describe: { await state() }
            let top = quiet
            _ = try await alice.send("to the top one", to: top)
            try await until("one more at the top") {
                await MainActor.run {
                    model.unreadCount == expected + 2 && model.unreadConversations == withAny + 1
                }
            } describe: { await state() }
            let deep = ids[3]  // 3 unread
            let lastSeq = try await dana.conversation(deep).lastSeq
            _ = try await dana.markRead(lastSeq, in: deep)
            try await until("three fewer after a read far down the list") {
                await MainActor.run {
                    model.unreadCount == expected - 1 && model.unreadConversations == withAny
                }
            } describe: { await state() }
            #expect(await model.hasMore, "still without every page")
            let server = try await dana.unreadCounts()
            #expect(await MainActor.run { (model.unreadCount, model.unreadConversations) } == (server.unreadMessages, server.unreadConversations))

            // Loaded to the end, the list counts itself and agrees.
            while await model.hasMore {
                await model.loadMore()
                try await Task.sleep(for: .milliseconds(50))
            }
            try await until("every page loaded") {
                await MainActor.run { model.conversations.count == 12 && model.unreadCount == server.unreadMessages }
            }
            await model.stop()
            #expect(await log.offMain == 0, "a property changed off the main thread")
        }
    }

    /// The inbox value alone: when it asks for the totals, and how it moves them.
    @Test func theInboxAsksForTheTotalsOnlyWhileItsAnswerMayBeOutOfDate() {
        let (a, b, c, d) = (UUID(), UUID(), UUID(), UUID())
        var inbox = InboxTests.subscribed()
        let first = inbox.apply(
            .pageLoaded(
                InboxTests.list(
                    [InboxTests.conversation(a, version: 5, unread: 2, activity: 50),
                     InboxTests.conversation(b, version: 5, unread: 1, activity: 40)], next: "p2"),
                for: InboxPageRequest(cursor: nil, pass: 0)))
        #expect(first.effects == [.loadUnreadCounts], "more pages: the list cannot count itself")
        #expect(inbox.unreadCount == 3, "before the answer, the rows held")
        inbox.apply(.unreadCountsLoaded(UnreadCounts(unreadMessages: 10, unreadConversations: 4)))
        #expect(inbox.unreadCount == 10 && inbox.unreadConversations == 4)

        // A change of a counted row moves the totals by itself.
        let counted = inbox.apply(.frame(InboxTests.activity(a, version: 6, unread: 3, activity: 60, cursor: "2")))
        #expect(counted.effects.isEmpty)
        #expect(inbox.unreadCount == 11 && inbox.unreadConversations == 4)
        inbox.apply(.frame(.inboxRead(conversationId: b, userId: "alice", seq: 5, unreadCount: 0, unreadMentions: 0, cursor: "3")))
        #expect(inbox.unreadCount == 10 && inbox.unreadConversations == 3)

        // One the answer did not take: asked again, and while that runs, any
        // change means one more question once it answers.
        let other = inbox.apply(.frame(InboxTests.activity(c, version: 9, unread: 4, activity: 70, cursor: "4")))
        #expect(other.effects.contains(.loadUnreadCounts))
        let meanwhile = inbox.apply(.frame(InboxTests.activity(a, version: 7, unread: 4, activity: 80, cursor: "5")))
        #expect(!meanwhile.effects.contains(.loadUnreadCounts), "one question at a time")
        let answered = inbox.apply(.unreadCountsLoaded(UnreadCounts(unreadMessages: 14, unreadConversations: 4)))
        #expect(answered.effects == [.loadUnreadCounts], "a change came while it ran")
        #expect(inbox.unreadCount == 14)
        let quiet = inbox.apply(.unreadCountsLoaded(UnreadCounts(unreadMessages: 15, unreadConversations: 4)))
        #expect(quiet.effects.isEmpty && inbox.unreadCount == 15)
        // Removed from a counted conversation: its unread no longer counts.
        inbox.apply(.frame(.inboxMemberRemoved(conversationId: a, cursor: "6")))
        #expect(inbox.unreadCount == 11 && inbox.unreadConversations == 3)
        // A failed question is asked again.
        #expect(inbox.apply(.frame(InboxTests.activity(d, version: 1, unread: 1, activity: 90, cursor: "7"))).effects.contains(.loadUnreadCounts))
        #expect(inbox.apply(.unreadCountsFailed).effects == [.loadUnreadCounts])

        // Every page loaded: the list counts itself, and asks nothing more.
        var whole = InboxTests.subscribed()
        let all = whole.apply(
            .pageLoaded(
                InboxTests.list([InboxTests.conversation(a, version: 5, unread: 2, activity: 50)], next: nil),
                for: InboxPageRequest(cursor: nil, pass: 0)))
        #expect(all.effects.isEmpty && whole.unreadCount == 2 && whole.unreadConversations == 1)
    }

    @Test func theCountsNeedAValidToken() async throws {
        try await LiveCluster.run { cluster in
            let stranger = ScrollbackClient(baseURL: cluster.instances[0].baseURL, token: { "not-a-token" })
            do {
                _ = try await stranger.unreadCounts()
                Issue.record("counts answered without a valid token")
            } catch let error as ScrollbackError {
                guard case .unauthorized = error else {
                    Issue.record("expected 401, got \(error)")
                    return
                }
            }
        }
    }
}
