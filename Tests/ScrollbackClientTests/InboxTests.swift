import Foundation
import PropertyBased
import ScrollbackClient
import ScrollbackModels
import Testing

/// The inbox as a pure value: each merge rule, with the effects it asks for.
@Suite struct InboxTests {
    @Test func theListIsAskedForOnlyOnceTheInboxIsSubscribed() {
        var inbox = Inbox()
        #expect(inbox.apply(.connected).effects == [.subscribe(after: nil)])
        #expect(!inbox.isLive)
        let subscribed = inbox.apply(.frame(.inboxSubscribed(cursor: "10")))
        #expect(subscribed.effects == [.loadPage(InboxPageRequest(cursor: nil, pass: 0))])
        #expect(inbox.isLive && inbox.cursor == "10" && inbox.isLoadingPage)
        // Subscribed again (a second device's frame, a repeat): no second request.
        #expect(inbox.apply(.frame(.inboxSubscribed(cursor: "10"))).effects.isEmpty)
    }

    @Test func conversationsAreOrderedByActivityNewestFirst() {
        var inbox = Self.loaded([Self.conversation(a, activity: 5), Self.conversation(b, activity: 9), Self.conversation(c, activity: 7)])
        #expect(inbox.conversations.map(\.id) == [b, c, a])
        #expect(!inbox.hasMore && inbox.isLoaded)
        // A message in the oldest moves it to the top.
        let update = inbox.apply(.frame(Self.activity(a, version: 1, activity: 12, cursor: "11")))
        #expect(inbox.conversations.map(\.id) == [a, b, c])
        #expect(update.change == InboxChange(moved: [.init(from: 2, to: 0)], updated: [0]))
        #expect(inbox.cursor == "11")
    }

    @Test func theHigherVersionWinsThenTheHigherReadMarker() {
        var inbox = Self.loaded([Self.conversation(a, version: 3, readSeq: 1, activity: 5)])
        // Older: ignored, whatever its read marker.
        var update = inbox.apply(.frame(Self.activity(a, version: 2, readSeq: 4, activity: 5)))
        #expect(update.change.isEmpty && inbox[a]?.version == 3 && inbox[a]?.readSeq == 1)
        // Same version, higher marker: taken.
        inbox.apply(.frame(Self.activity(a, version: 3, readSeq: 2, unread: 0, activity: 5)))
        #expect(inbox[a]?.readSeq == 2 && inbox[a]?.unreadCount == 0)
        // Higher version: taken, even with a lower marker.
        update = inbox.apply(.frame(Self.activity(a, version: 4, readSeq: 1, unread: 3, activity: 6, body: "new")))
        #expect(inbox[a]?.version == 4 && inbox[a]?.readSeq == 1 && inbox[a]?.lastMessage?.body == "new")
        #expect(update.change == InboxChange(updated: [0]))
        // The whole conversation from before it (a repeat on a resume): its
        // line loses, its title and members are taken.
        var older = Self.conversation(a, version: 3, readSeq: 2, activity: 5)
        older.title = "renamed"
        older.members = ["alice", "bob", "carol"]
        inbox.apply(.frame(.memberAdded(older, cursor: "12")))
        #expect(inbox[a]?.version == 4 && inbox[a]?.lastMessage?.body == "new")
        #expect(inbox[a]?.title == "renamed" && inbox[a]?.members == ["alice", "bob", "carol"])
    }

    /// `conversation_updated` with a cursor changes a row's details; an
    /// older or repeated one, or the conversation subscription's (no
    /// cursor), changes nothing; and a page read before the frame does not
    /// bring the old title back.
    @Test func detailsTakeTheNewerFrameAndOutliveAnOlderPage() {
        var inbox = Self.loaded([Self.conversation(a, version: 2, activity: 5), Self.conversation(b, activity: 4)])
        func told(_ title: String?, version: Int64, cursor: String?) -> ServerFrame {
            .conversationUpdated(
                ConversationDetails(
                    conversationId: a, title: title, description: "about \(title ?? "none")", slowModeSeconds: 10,
                    detailsVersion: version),
                cursor: cursor)
        }
        let update = inbox.apply(.frame(told("Lunch", version: 2, cursor: "11")))
        #expect(inbox[a]?.title == "Lunch" && inbox[a]?.description == "about Lunch" && inbox[a]?.slowModeSeconds == 10)
        #expect(update.change == InboxChange(updated: [0]) && inbox.cursor == "11")
        #expect(inbox[a]?.version == 2, "the line stays as it was")
        #expect(inbox.apply(.frame(told("Older", version: 1, cursor: "12"))).change.isEmpty)
        #expect(inbox.apply(.frame(told("Same", version: 2, cursor: "12"))).change.isEmpty)
        #expect(inbox.apply(.frame(told("Not mine", version: 3, cursor: nil))).change.isEmpty)
        #expect(inbox[a]?.title == "Lunch")
        // The list again, read before the frame.
        inbox.apply(.frame(.inboxResyncRequired(cursor: "13")))
        inbox.apply(.frame(told("Brunch", version: 3, cursor: "14")))
        inbox.apply(
            .pageLoaded(
                Self.list([Self.conversation(a, version: 2, activity: 5), Self.conversation(b, activity: 4)], next: nil),
                for: InboxPageRequest(cursor: nil, pass: 1)))
        #expect(inbox[a]?.title == "Brunch")
        // Removed and added back: the conversation as it is then.
        inbox.apply(.frame(.inboxMemberRemoved(conversationId: a, cursor: "15")))
        var added = Self.conversation(a, version: 4, activity: 9)
        added.title = "Dinner"
        inbox.apply(.frame(.memberAdded(added, cursor: "16")))
        #expect(inbox[a]?.title == "Dinner")
    }

    @Test func aReadMarkerOnlyMovesForwardSoARepeatedReadFrameUndoesNothing() {
        var inbox = Self.loaded([Self.conversation(a, version: 2, readSeq: 0, unread: 2, activity: 5)])
        inbox.apply(.frame(.inboxRead(conversationId: a, userId: "alice", seq: 2, unreadCount: 0, cursor: "11")))
        #expect(inbox[a]?.readSeq == 2 && inbox[a]?.unreadCount == 0 && inbox.cursor == "11")
        inbox.apply(.frame(Self.activity(a, version: 3, readSeq: 2, unread: 1, activity: 6)))
        // The read frame again (a resume may repeat): the newer unread count stays.
        let update = inbox.apply(.frame(.inboxRead(conversationId: a, userId: "alice", seq: 2, unreadCount: 0, cursor: "12")))
        #expect(update.change.isEmpty && inbox[a]?.unreadCount == 1 && inbox.cursor == "12")
    }

    @Test func activityOfAConversationNotInTheListFetchesItAndShowsTheNewerLine() {
        var inbox = Self.loaded([Self.conversation(a, activity: 5)])
        let update = inbox.apply(.frame(Self.activity(b, version: 7, unread: 1, activity: 20, body: "hello")))
        #expect(update.effects == [.fetchConversation(b)])
        #expect(inbox[b] == nil, "a line without its title and members is not shown")
        // Not asked twice while the fetch runs.
        #expect(inbox.apply(.frame(Self.activity(b, version: 8, unread: 2, activity: 21, body: "again"))).effects.isEmpty)
        // The fetch answered from before the last frame: the frame's line wins.
        var fetched = Self.conversation(b, version: 7, unread: 1, activity: 20)
        fetched.title = "Plans"
        let shown = inbox.apply(.conversationFetched(fetched))
        #expect(shown.change == InboxChange(inserted: [0]))
        #expect(inbox[b]?.title == "Plans" && inbox[b]?.version == 8 && inbox[b]?.lastMessage?.body == "again")
        #expect(inbox.conversations.map(\.id) == [b, a])
    }

    @Test func aFetchThatFailsIsAskedAgainAndOneNoLongerVisibleIsForgotten() {
        var inbox = Self.loaded([Self.conversation(a, activity: 5)])
        inbox.apply(.frame(Self.activity(b, version: 1, activity: 20)))
        #expect(inbox.apply(.conversationFetchFailed(b)).effects == [.fetchConversation(b)])
        #expect(inbox.apply(.conversationNotVisible(b)).effects.isEmpty)
        // Forgotten: a late answer of an earlier fetch shows nothing.
        inbox.apply(.conversationFetched(Self.conversation(b, version: 1, activity: 20)))
        #expect(inbox[b] == nil)
    }

    @Test func activityBelowTheLoadedPagesWaitsForItsPage() {
        var inbox = Self.subscribed()
        let first = InboxPageRequest(cursor: nil, pass: 0)
        inbox.apply(.pageLoaded(Self.list([Self.conversation(a, activity: 50), Self.conversation(b, activity: 40)], next: "p2"), for: first))
        #expect(inbox.hasMore && !inbox.isLoadingPage)
        // An edit in an old conversation: its activity does not move, so it
        // stays below the loaded pages; its page brings it.
        let edit = inbox.apply(.frame(Self.activity(c, version: 6, activity: 10, body: "edited")))
        #expect(edit.effects.isEmpty && inbox[c] == nil)
        let next = InboxPageRequest(cursor: "p2", pass: 0)
        #expect(inbox.apply(.moreRequested).effects == [.loadPage(next)])
        #expect(inbox.apply(.moreRequested).effects.isEmpty, "one page at a time")
        let page = inbox.apply(.pageLoaded(Self.list([Self.conversation(c, version: 5, activity: 10)], next: nil), for: next))
        #expect(page.change == InboxChange(inserted: [2]))
        #expect(inbox[c]?.version == 6 && inbox[c]?.lastMessage?.body == "edited")
        #expect(!inbox.hasMore)
        #expect(inbox.apply(.moreRequested).effects.isEmpty)
    }

    @Test func activityChangedRestartsFromTheTopMergesByIdAndPagesBackToWhereItWas() {
        var inbox = Self.subscribed()
        inbox.apply(.pageLoaded(Self.list([Self.conversation(a, activity: 50)], next: "p2"), for: InboxPageRequest(cursor: nil, pass: 0)))
        inbox.apply(.moreRequested)
        let second = InboxPageRequest(cursor: "p2", pass: 0)
        let changed = inbox.apply(
            .pageLoaded(Self.list([Self.conversation(b, activity: 40)], next: "p3", activityChanged: true), for: second))
        #expect(changed.effects == [.loadPage(InboxPageRequest(cursor: nil, pass: 0))])
        #expect(inbox[b] != nil, "what the page listed is merged all the same")
        // The top again: c jumped up; a is listed again (merged by id, no duplicate).
        let top = inbox.apply(
            .pageLoaded(
                Self.list([Self.conversation(c, version: 1, activity: 60), Self.conversation(a, activity: 50)], next: "q2"),
                for: InboxPageRequest(cursor: nil, pass: 0)))
        #expect(inbox.conversations.map(\.id) == [c, a, b])
        // The restarted pass has not reached where the first had got to (50): it pages on by itself.
        #expect(top.effects == [.loadPage(InboxPageRequest(cursor: "q2", pass: 0))])
        let caughtUp = inbox.apply(
            .pageLoaded(Self.list([Self.conversation(b, activity: 40)], next: "q3"), for: InboxPageRequest(cursor: "q2", pass: 0)))
        #expect(caughtUp.effects.isEmpty, "past where it was, it waits for the user to scroll")
        #expect(inbox.apply(.moreRequested).effects == [.loadPage(InboxPageRequest(cursor: "q3", pass: 0))])
    }

    /// `member_added` shows a conversation at once only where the loaded
    /// pages reach: one further down (added to a quiet conversation, or a
    /// repeat of an addition from before the cursor) comes with its page,
    /// so the list stays a prefix of the whole list.
    @Test func anAdditionBelowTheLoadedPagesWaitsForItsPageAndOneAboveShowsAtOnce() {
        var inbox = Self.subscribed()
        // Before the first page: nothing is shown yet.
        inbox.apply(.frame(.memberAdded(Self.conversation(c, version: 2, activity: 10), cursor: "11")))
        #expect(inbox.conversations.isEmpty)
        let first = InboxPageRequest(cursor: nil, pass: 0)
        inbox.apply(.pageLoaded(Self.list([Self.conversation(a, activity: 50), Self.conversation(b, activity: 40)], next: "p2"), for: first))
        #expect(inbox.conversations.map(\.id) == [a, b], "c is further down")
        let below = inbox.apply(.frame(.memberAdded(Self.conversation(d, version: 3, activity: 20), cursor: "12")))
        #expect(below.change.isEmpty && below.effects.isEmpty && inbox[d] == nil)
        let above = inbox.apply(.frame(.memberAdded(Self.conversation(e, version: 1, activity: 60), cursor: "13")))
        #expect(above.change == InboxChange(inserted: [0]) && inbox.conversations.map(\.id) == [e, a, b])
        // Their page brings them, with the newer state the frames told of.
        let next = InboxPageRequest(cursor: "p2", pass: 0)
        #expect(inbox.apply(.moreRequested).effects == [.loadPage(next)])
        inbox.apply(.pageLoaded(
            Self.list([Self.conversation(d, version: 1, activity: 20), Self.conversation(c, version: 1, activity: 10)], next: nil),
            for: next))
        #expect(inbox.conversations.map(\.id) == [e, a, b, d, c])
        #expect(inbox[d]?.version == 3 && inbox[c]?.version == 2)
    }

    @Test func aRemovedConversationIsNotShownAgainUntilTheUserIsAddedBack() {
        var inbox = Self.subscribed()
        let request = InboxPageRequest(cursor: nil, pass: 0)
        let removal = inbox.apply(.frame(.inboxMemberRemoved(conversationId: a, cursor: "11")))
        #expect(removal.change.isEmpty)
        // The first page was fetched before the removal: a is not shown.
        inbox.apply(.pageLoaded(Self.list([Self.conversation(a, activity: 50), Self.conversation(b, activity: 40)], next: nil), for: request))
        #expect(inbox.conversations.map(\.id) == [b])
        let removed = inbox.apply(.frame(.inboxMemberRemoved(conversationId: b, cursor: "12")))
        #expect(removed.change == InboxChange(removed: [0]) && inbox.conversations.isEmpty)
        // Late frames, fetches and pages of it show nothing and fetch nothing.
        #expect(inbox.apply(.frame(Self.activity(b, version: 9, activity: 70))).effects.isEmpty)
        inbox.apply(.frame(.inboxRead(conversationId: b, userId: "alice", seq: 3, unreadCount: 0, cursor: "13")))
        inbox.apply(.conversationFetched(Self.conversation(b, activity: 70)))
        #expect(inbox.conversations.isEmpty)
        // Added back: shown again, and its activity counts again.
        let added = inbox.apply(.frame(.memberAdded(Self.conversation(b, version: 9, activity: 70), cursor: "14")))
        #expect(added.change == InboxChange(inserted: [0]) && inbox[b]?.version == 9)
        inbox.apply(.frame(Self.activity(b, version: 10, activity: 71)))
        #expect(inbox[b]?.version == 10)
    }

    @Test func aResyncLoadsTheListAgainAndDropsWhatTheNewPassDoesNotList() {
        var inbox = Self.loaded([
            Self.conversation(a, activity: 50), Self.conversation(b, activity: 40), Self.conversation(c, activity: 30),
        ])
        inbox.apply(.frame(.inboxMemberRemoved(conversationId: d, cursor: "11")))
        let resync = inbox.apply(.frame(.inboxResyncRequired(cursor: "99")))
        let reload = InboxPageRequest(cursor: nil, pass: 1)
        // The totals too: the new pass starts without every page.
        #expect(resync.effects == [.loadPage(reload), .loadUnreadCounts] && inbox.cursor == "99")
        #expect(inbox.conversations.count == 3, "what is shown stays until the new pass says otherwise")
        // A page of the old pass answers late: ignored.
        inbox.apply(.pageLoaded(Self.list([Self.conversation(e, activity: 45)], next: nil), for: InboxPageRequest(cursor: "old", pass: 0)))
        #expect(inbox[e] == nil)
        // The new pass's first page reaches down to 35: b (40) was not listed,
        // so it is gone; c (30) is below, still to be confirmed, so the pass
        // pages on by itself. d was re-added while the stream was behind.
        let first = inbox.apply(
            .pageLoaded(
                Self.list([Self.conversation(d, activity: 60), Self.conversation(a, version: 2, activity: 55), Self.conversation(e, activity: 35)], next: "r2"),
                for: reload))
        #expect(inbox.conversations.map(\.id) == [d, a, e, c])
        #expect(first.effects == [.loadPage(InboxPageRequest(cursor: "r2", pass: 1))])
        // The end of the list without c: c is gone too.
        let last = inbox.apply(.pageLoaded(Self.list([], next: nil), for: InboxPageRequest(cursor: "r2", pass: 1)))
        #expect(last.change == InboxChange(removed: [3]) && last.effects.isEmpty)
        #expect(inbox.conversations.map(\.id) == [d, a, e] && !inbox.hasMore)
    }

    @Test func aDropResubscribesFromTheLastInboxFrame() {
        var inbox = Self.loaded([Self.conversation(a, activity: 5)])
        inbox.apply(.frame(Self.activity(a, version: 1, activity: 6, cursor: "21")))
        inbox.apply(.frame(.inboxRead(conversationId: a, userId: "alice", seq: 1, unreadCount: 0, cursor: "22")))
        inbox.apply(.connectionDropped)
        #expect(!inbox.isLive)
        #expect(inbox.apply(.connected).effects == [.subscribe(after: "22")])
        // Resumed: the list is not loaded again.
        #expect(inbox.apply(.frame(.inboxSubscribed(cursor: "22"))).effects.isEmpty)
        #expect(inbox.isLive)
    }

    @Test func aFailedPageIsAskedForAgainOnlyWhenTheInboxNeedsItByItself() {
        var inbox = Self.subscribed()
        let first = InboxPageRequest(cursor: nil, pass: 0)
        #expect(inbox.apply(.pageFailed(first)).effects == [.loadPage(first)], "the first page is needed")
        inbox.apply(.pageLoaded(Self.list([Self.conversation(a, activity: 5)], next: "p2"), for: first))
        let next = InboxPageRequest(cursor: "p2", pass: 0)
        inbox.apply(.moreRequested)
        #expect(inbox.apply(.pageFailed(next)).effects.isEmpty, "the user scrolls again")
        #expect(!inbox.isLoadingPage)
        #expect(inbox.apply(.moreRequested).effects == [.loadPage(next)])
    }

    @Test func theChangeHasFewMovesAndIndicesAUICollectionCanApply() {
        var inbox = Self.loaded((0..<5).map { Self.conversation(ids[$0], activity: Int64(10 - $0)) })
        // ids[3] becomes the newest, ids[1] leaves, a new one arrives below.
        inbox.apply(.frame(.inboxMemberRemoved(conversationId: ids[1], cursor: "30")))
        let update = inbox.apply(.frame(Self.activity(ids[3], version: 1, activity: 20)))
        #expect(update.change == InboxChange(moved: [.init(from: 2, to: 0)], updated: [0]))
        let added = inbox.apply(.frame(.memberAdded(Self.conversation(ids[5], activity: 1), cursor: "31")))
        #expect(added.change == InboxChange(inserted: [4]))
        #expect(inbox.conversations.map(\.id) == [ids[3], ids[0], ids[2], ids[4], ids[5]])
    }

    /// Random frames over a few conversations: each change, applied to
    /// the rows before it as a list view applies a batch, gives the rows after.
    @Test(arguments: [UInt64(1), 2, 3])
    func everyChangeTurnsTheRowsBeforeIntoTheRowsAfter(seed: UInt64) {
        var random = Xoshiro(seed: (seed, 3, 5, 7))
        var inbox = Self.loaded([])
        var activity: Int64 = 100
        var version: [UUID: Int64] = [:]
        for step in 0..<300 {
            let id = ids[Int(random.next() % UInt64(ids.count))]
            let before = inbox.conversations.map(\.id)
            let frame: ServerFrame
            switch random.next() % 6 {
            case 0:
                frame = .inboxMemberRemoved(conversationId: id, cursor: "\(step)")
            case 1:
                activity += 1
                frame = .memberAdded(Self.conversation(id, version: version[id] ?? 0, activity: activity), cursor: "\(step)")
            case 2:
                frame = .inboxRead(conversationId: id, userId: "alice", seq: Int64(step), unreadCount: 0, cursor: "\(step)")
            default:
                // A message (moves it up) or an edit (keeps its place).
                version[id, default: 0] += 1
                if random.next() % 3 != 0 { activity += 1 }
                let at = inbox[id]?.activity ?? activity
                frame = Self.activity(id, version: version[id]!, activity: random.next() % 3 != 0 ? activity : at, cursor: "\(step)")
            }
            var actions = [InboxAction.frame(frame)]
            var rows = before
            while !actions.isEmpty {
                let action = actions.removeFirst()
                let update = inbox.apply(action)
                let after = inbox.conversations.map(\.id)
                #expect(Self.replaying(update.change, on: rows, toward: after) == after, "seed \(seed), step \(step): \(action)")
                #expect(update.change.updated.allSatisfy(after.indices.contains))
                rows = after
                // The fetch a line without its conversation asks for.
                for case .fetchConversation(let wanted) in update.effects {
                    actions.append(.conversationFetched(Self.conversation(wanted, activity: 0)))
                }
            }
        }
    }

    // MARK: Helpers

    /// The rows a list shows after applying `change` to `rows` as
    /// `performBatchUpdates` does: removals and moves' sources by their
    /// indices before, insertions and moves' destinations by their indices
    /// after (inserted rows are read from `newer`); nil when the indices do
    /// not fit together.
    static func replaying(_ change: InboxChange, on rows: [UUID], toward newer: [UUID]) -> [UUID]? {
        var result = [UUID?](repeating: nil, count: newer.count)
        let gone = Set(change.removed).union(change.moved.map(\.from))
        for index in change.inserted {
            guard newer.indices.contains(index), result[index] == nil else { return nil }
            result[index] = newer[index]
        }
        for move in change.moved {
            guard rows.indices.contains(move.from), newer.indices.contains(move.to), result[move.to] == nil else { return nil }
            result[move.to] = rows[move.from]
        }
        var staying = rows.enumerated().filter { !gone.contains($0.offset) }.map(\.element).makeIterator()
        for index in result.indices where result[index] == nil { result[index] = staying.next() }
        guard staying.next() == nil else { return nil }
        return result.compactMap { $0 }.count == newer.count ? result.compactMap { $0 } : nil
    }

    static let ids = (0..<8).map { _ in UUID() }
    var a: UUID { Self.ids[0] }
    var b: UUID { Self.ids[1] }
    var c: UUID { Self.ids[2] }
    var d: UUID { Self.ids[3] }
    var e: UUID { Self.ids[4] }
    var ids: [UUID] { Self.ids }

    static func conversation(
        _ id: UUID, version: Int64 = 0, readSeq: Int64 = 0, unread: Int64 = 0, activity: Int64
    ) -> Conversation {
        Conversation(
            id: id, title: "t", createdBy: "bob", createdAt: Date(timeIntervalSince1970: 0), lastSeq: version,
            members: ["alice", "bob"], readSeq: readSeq, unreadCount: unread, lastMessage: nil, version: version,
            activity: activity)
    }

    static func activity(
        _ id: UUID, version: Int64, readSeq: Int64 = 0, unread: Int64 = 0, activity: Int64, body: String = "m",
        cursor: String = "1"
    ) -> ServerFrame {
        let message = Message(
            conversationId: id, seq: version, sender: "bob", body: body, clientId: nil,
            createdAt: Date(timeIntervalSince1970: 0), version: version)
        return .conversationActivity(
            InboxActivity(
                conversationId: id, lastSeq: version, version: version, activity: activity, readSeq: readSeq,
                unreadCount: unread, lastMessage: message),
            cursor: cursor)
    }

    static func list(_ conversations: [Conversation], next: String?, activityChanged: Bool = false) -> ConversationList {
        ConversationList(conversations: conversations, nextCursor: next, activityChanged: activityChanged)
    }

    /// Subscribed, the first page asked for.
    static func subscribed() -> Inbox {
        var inbox = Inbox()
        inbox.apply(.connected)
        inbox.apply(.frame(.inboxSubscribed(cursor: "10")))
        return inbox
    }

    /// Subscribed, with the whole list loaded in one page.
    static func loaded(_ conversations: [Conversation]) -> Inbox {
        var inbox = subscribed()
        inbox.apply(.pageLoaded(list(conversations, next: nil), for: InboxPageRequest(cursor: nil, pass: 0)))
        return inbox
    }
}
