import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct ConversationStoreTests {
    @Test func creatorIsAlwaysAMemberAndMembersAreDeduplicated() async throws {
        try await TestDatabase.withStore { store in
            let conversation = try await store.createConversation(
                creator: "alice", title: "Lunch", members: ["bob", "carol", "bob"])
            #expect(conversation.members == ["alice", "bob", "carol"])
            #expect(conversation.createdBy == "alice")
            #expect(conversation.lastSeq == 0)
            #expect(conversation.title == "Lunch")
            #expect(conversation.role == .owner)
            #expect(try await store.conversation(conversation.id, for: "alice") == conversation)
            // Each member sees their own role.
            var asCarol = conversation
            asCarol.role = .member
            #expect(try await store.conversation(conversation.id, for: "carol") == asCarol)
        }
    }

    @Test func nonMembersSeeTheSameNotFoundAsForAMissingConversation() async throws {
        try await TestDatabase.withStore { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.conversation(conversation.id, for: "mallory")
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.conversation(UUID(), for: "alice")
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.send(to: conversation.id, from: "mallory", body: "hi", clientID: nil)
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.page(of: conversation.id, for: "mallory", anchor: .newest, limit: 10)
            }
            // Nothing was stored by the refused send.
            #expect(try await store.conversation(conversation.id, for: "alice").lastSeq == 0)
        }
    }

    @Test func listIsMostRecentlyActiveFirstAndPagesWithTheCursor() async throws {
        try await TestDatabase.withStore { store in
            var ids: [UUID] = []
            for index in 0..<7 {
                ids.append(try await store.createConversation(creator: "alice", title: "c\(index)", members: []).id)
            }
            _ = try await store.createConversation(creator: "bob", title: "not alice's", members: [])
            // Activity moves a conversation to the top.
            _ = try await store.send(to: ids[2], from: "alice", body: "bump", clientID: nil)
            let expected = [ids[2], ids[6], ids[5], ids[4], ids[3], ids[1], ids[0]]

            var seen: [UUID] = []
            var position: ConversationListPosition? = nil
            repeat {
                let page = try await store.conversations(for: "alice", limit: 3, after: position)
                #expect(page.conversations.count <= 3)
                #expect(!page.activityChanged)
                seen += page.conversations.map(\.id)
                position = page.next
            } while position != nil
            #expect(seen == expected)
        }
    }

    /// A conversation not listed yet that becomes active between two pages
    /// jumps above the cursor; the next page says so, and a pass restarted
    /// from the top lists it. One already listed that becomes active only
    /// moves: nothing is missed, nothing is flagged.
    @Test func aConversationThatJumpsAboveTheCursorIsNeverLost() async throws {
        try await TestDatabase.withStore { store in
            var ids: [UUID] = []
            for index in 0..<9 {
                ids.append(try await store.createConversation(creator: "alice", title: "c\(index)", members: []).id)
            }
            let first = try await store.conversations(for: "alice", limit: 3, after: nil)
            #expect(first.conversations.map(\.id) == [ids[8], ids[7], ids[6]])
            #expect(!first.activityChanged)

            // Already passed: moves to the top, nothing to report.
            _ = try await store.send(to: ids[7], from: "alice", body: "already listed", clientID: nil)
            let second = try await store.conversations(for: "alice", limit: 3, after: first.next)
            #expect(second.conversations.map(\.id) == [ids[5], ids[4], ids[3]])
            #expect(!second.activityChanged)

            // Not listed yet: jumps above the cursor, where paging on never finds it.
            _ = try await store.send(to: ids[1], from: "alice", body: "jumps", clientID: nil)
            let third = try await store.conversations(for: "alice", limit: 3, after: second.next)
            #expect(third.conversations.map(\.id) == [ids[2], ids[0]])
            #expect(third.activityChanged)
            #expect(third.next == nil)

            // Joining a conversation mid-pass is a change too.
            let joined = try await store.createConversation(creator: "bob", title: "joined", members: [])
            let fourthStart = try await store.conversations(for: "alice", limit: 2, after: nil)
            _ = try await store.addMember("alice", to: joined.id, by: "bob")
            let fourth = try await store.conversations(for: "alice", limit: 2, after: fourthStart.next)
            #expect(fourth.activityChanged)

            // Restarting from the top lists every conversation exactly once.
            var seen: [UUID] = []
            var position: ConversationListPosition? = nil
            repeat {
                let page = try await store.conversations(for: "alice", limit: 4, after: position)
                #expect(!page.activityChanged)
                seen += page.conversations.map(\.id)
                position = page.next
            } while position != nil
            #expect(seen.count == 10)
            #expect(Set(seen) == Set(ids + [joined.id]))
        }
    }

    @Test func membersCanBeAddedByMembersAndRemovedByThemselvesOrTheCreator() async throws {
        try await TestDatabase.withStore { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
            let withDave = try await store.addMember("dave", to: conversation.id, by: "bob")
            #expect(withDave.members == ["alice", "bob", "dave"])
            // Adding again changes nothing.
            #expect(try await store.addMember("dave", to: conversation.id, by: "alice").members == withDave.members)
            // An outsider cannot add anyone.
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.addMember("eve", to: conversation.id, by: "mallory")
            }
            // bob may not remove dave; dave may leave; the creator may remove bob.
            await #expect(throws: StoreError.forbidden(.removeAnotherMember)) {
                try await store.removeMember("dave", from: conversation.id, by: "bob")
            }
            try await store.removeMember("dave", from: conversation.id, by: "dave")
            try await store.removeMember("bob", from: conversation.id, by: "alice")
            await #expect(throws: StoreError.memberNotFound) {
                try await store.removeMember("zed", from: conversation.id, by: "alice")
            }
            #expect(try await store.conversation(conversation.id, for: "alice").members == ["alice"])
            // A removed member no longer sees the conversation, history included.
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.page(of: conversation.id, for: "bob", anchor: .newest, limit: 10)
            }
        }
    }

    @Test func aConversationStopsAcceptingMembersAtTheLimit() async throws {
        try await TestDatabase.withStore { store in
            let others = (1..<ScrollbackStore.memberLimit).map { UserID(rawValue: "user\($0)") }
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: others)
            #expect(conversation.members.count == ScrollbackStore.memberLimit)
            await #expect(throws: StoreError.conversationFull(limit: ScrollbackStore.memberLimit)) {
                try await store.addMember("one-too-many", to: conversation.id, by: "alice")
            }
        }
    }
}
