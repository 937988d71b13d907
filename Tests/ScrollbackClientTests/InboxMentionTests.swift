import Foundation
import ScrollbackClient
import ScrollbackModels
import Testing

/// `Inbox` keeps each row's unread mentions from the frames that carry them.
@Suite struct InboxMentionTests {
    let a = InboxTests.ids[0]
    let b = InboxTests.ids[1]

    static func line(_ id: UUID, version: Int64, readSeq: Int64, mentions: Int64, activity: Int64) -> ServerFrame {
        .conversationActivity(
            InboxActivity(
                conversationId: id, lastSeq: version, version: version, activity: activity, readSeq: readSeq,
                unreadCount: version - readSeq, unreadMentions: mentions, lastMessage: nil),
            cursor: "\(version)")
    }

    @Test func activityAndReadFramesSetUnreadMentionsPerRow() {
        var first = InboxTests.conversation(a, version: 1, activity: 5)
        first.unreadMentions = 1
        var inbox = InboxTests.loaded([first, InboxTests.conversation(b, version: 1, activity: 4)])
        #expect(inbox[a]?.unreadMentions == 1 && inbox.unreadMentions == 1)

        let update = inbox.apply(.frame(Self.line(b, version: 2, readSeq: 0, mentions: 2, activity: 6)))
        #expect(inbox[b]?.unreadMentions == 2 && inbox.unreadMentions == 3)
        #expect(update.change == InboxChange(moved: [InboxChange.Move(from: 1, to: 0)], updated: [0]))

        inbox.apply(
            .frame(.inboxRead(conversationId: b, userId: "alice", seq: 2, unreadCount: 0, unreadMentions: 0, cursor: "9")))
        #expect(inbox[b]?.unreadMentions == 0 && inbox.unreadMentions == 1)
        // An older line (a repeat on a resume) does not bring the count back.
        inbox.apply(.frame(Self.line(b, version: 2, readSeq: 0, mentions: 2, activity: 6)))
        #expect(inbox[b]?.unreadMentions == 0)
    }

    @Test func aLineWaitingForItsFetchKeepsItsMentions() {
        var inbox = InboxTests.loaded([InboxTests.conversation(a, activity: 5)])
        let update = inbox.apply(.frame(Self.line(b, version: 3, readSeq: 0, mentions: 1, activity: 20)))
        #expect(update.effects == [.fetchConversation(b)])
        inbox.apply(
            .frame(.inboxRead(conversationId: b, userId: "alice", seq: 1, unreadCount: 2, unreadMentions: 0, cursor: "9")))
        // The fetch answered from before both frames: the frames' state wins.
        var fetched = InboxTests.conversation(b, version: 2, activity: 19)
        fetched.unreadMentions = 1
        inbox.apply(.conversationFetched(fetched))
        #expect(inbox[b]?.unreadMentions == 0 && inbox[b]?.readSeq == 1 && inbox[b]?.version == 3)
    }
}
