import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct MessageLifecycleStoreTests {
    @Test func editAndDeletePermissionMatrix() async throws {
        try await TestDatabase.withStore { store in
            // alice creates; bob and carol are members; mallory is not.
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob", "carol"]).id
            let fromBob = try await store.send(to: id, from: "bob", body: "bob's", clientID: nil).message
            let fromCarol = try await store.send(to: id, from: "carol", body: "carol's", clientID: nil).message
            #expect(try await store.page(of: id, for: "alice", anchor: .newest, limit: 10).version == 2)

            // Edit: the sender only.
            let edited = try await store.edit(fromBob.seq, in: id, by: "bob", body: "bob's, edited")
            #expect(edited.body == "bob's, edited" && edited.version == 3 && edited.editedAt != nil && !edited.deleted)
            #expect(edited.seq == fromBob.seq && edited.createdAt == fromBob.createdAt)
            for other: UserID in ["alice", "carol"] {
                await #expect(throws: StoreError.forbidden(.editAnotherSendersMessage)) {
                    try await store.edit(fromBob.seq, in: id, by: other, body: "hijack")
                }
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.edit(fromBob.seq, in: id, by: "mallory", body: "x")
            }
            await #expect(throws: StoreError.messageNotFound) {
                try await store.edit(99, in: id, by: "bob", body: "x")
            }

            // Delete: the sender or the creator; not another member.
            await #expect(throws: StoreError.forbidden(.deleteAnotherSendersMessage)) {
                try await store.delete(fromCarol.seq, in: id, by: "bob")
            }
            let bySender = try await store.delete(fromBob.seq, in: id, by: "bob").message
            #expect(bySender.deleted && bySender.body == "" && bySender.version == 4)
            #expect(bySender.editedAt == edited.editedAt)
            let byCreator = try await store.delete(fromCarol.seq, in: id, by: "alice").message
            #expect(byCreator.deleted && byCreator.version == 5)
            // Again: a no-op that returns the tombstone and spends no version.
            #expect(try await store.delete(fromCarol.seq, in: id, by: "carol") == .alreadyDeleted(byCreator))
            await #expect(throws: StoreError.messageDeleted) {
                try await store.edit(fromBob.seq, in: id, by: "bob", body: "resurrect")
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.delete(fromCarol.seq, in: id, by: "mallory")
            }
            // Only the five real changes took a version.
            #expect(try await store.page(of: id, for: "alice", anchor: .newest, limit: 10).version == 5)
            // The erased body is gone from storage, not only from the API.
            let stored = try await store.values(Int.self, "SELECT count(*) FROM messages WHERE body LIKE '%bob%' OR body LIKE '%carol%'").reduce(0, +)
            #expect(stored == 0)
        }
    }

    @Test func tombstonesKeepTheirPlaceInPages() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            for index in 1...6 { _ = try await store.send(to: id, from: "alice", body: "m\(index)", clientID: nil) }
            _ = try await store.delete(3, in: id, by: "alice")
            _ = try await store.delete(6, in: id, by: "alice")
            let page = try await store.page(of: id, for: "alice", anchor: .newest, limit: 4)
            #expect(page.messages.map(\.seq) == [6, 5, 4, 3])
            #expect(page.messages.map(\.deleted) == [true, false, false, true])
            #expect(page.messages.map(\.body) == ["", "m5", "m4", ""])
            #expect(page.hasOlder && !page.hasNewer && page.lastSeq == 6 && page.version == 8)
            // The conversation's preview is the newest message, tombstone or not.
            let conversation = try await store.conversation(id, for: "alice")
            #expect(conversation.lastMessage?.seq == 6 && conversation.lastMessage?.deleted == true)
        }
    }

    @Test func readMarkerNeverMovesBackwardsEvenUnderConcurrentUpdates() async throws {
        try await TestDatabase.withStore(maximumConnections: 12) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            for index in 1...50 { _ = try await store.send(to: id, from: "alice", body: "m\(index)", clientID: nil) }
            let targets = (0..<60).map { Int64(($0 * 37) % 51) }
            let results = try await withThrowingTaskGroup(of: (Int64, ReadMarker).self) { group in
                for seq in targets { group.addTask { (seq, try await store.markRead(seq, in: id, by: "bob")) } }
                return try await group.reduce(into: [(Int64, ReadMarker)]()) { $0.append($1) }
            }
            // Every answer is at least what was asked: the marker never went below a seq already set.
            for (asked, marker) in results { #expect(marker.readSeq >= asked) }
            let final = try await store.conversation(id, for: "bob")
            #expect(final.readSeq == targets.max())
            let backwards = try await store.markRead(3, in: id, by: "bob")
            #expect(backwards.readSeq == 50 && backwards.unreadCount == 0)
            await #expect(throws: StoreError.readBeyondNewest(lastSeq: 50)) {
                try await store.markRead(51, in: id, by: "bob")
            }
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.markRead(1, in: id, by: "mallory")
            }
        }
    }

    @Test func unreadCountsFollowSendsReadsAndDeletes() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: "t", members: ["bob"]).id
            for index in 1...3 { _ = try await store.send(to: id, from: "alice", body: "a\(index)", clientID: nil) }
            for index in 1...2 { _ = try await store.send(to: id, from: "bob", body: "b\(index)", clientID: nil) }
            // Own messages never count as unread.
            #expect(try await store.conversation(id, for: "alice").unreadCount == 2)
            #expect(try await store.conversation(id, for: "bob").unreadCount == 3)
            let marker = try await store.markRead(2, in: id, by: "bob")
            #expect(marker.readSeq == 2 && marker.unreadCount == 1)
            #expect(try await store.conversation(id, for: "bob").unreadCount == 1)
            _ = try await store.delete(3, in: id, by: "alice")
            #expect(try await store.conversation(id, for: "bob").unreadCount == 0)
            _ = try await store.send(to: id, from: "alice", body: "a4", clientID: nil)
            let listed = try await store.conversations(for: "bob", limit: 10, after: nil).conversations
            #expect(listed.count == 1)
            #expect(listed[0].unreadCount == 1 && listed[0].readSeq == 2)
            #expect(listed[0].lastMessage?.body == "a4" && listed[0].lastMessage?.seq == 6)
        }
    }

    @Test func aroundTimeAtBothEdges() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            #expect(try await store.seq(at: Date(), in: id, for: "alice") == nil)
            var times: [Date] = []
            for index in 1...5 {
                times.append(try await store.send(to: id, from: "alice", body: "m\(index)", clientID: nil).message.createdAt)
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(try await store.seq(at: times[0].addingTimeInterval(-3600), in: id, for: "alice") == 1)
            #expect(try await store.seq(at: times[2], in: id, for: "alice") == 3)
            #expect(try await store.seq(at: times[2].addingTimeInterval(0.001), in: id, for: "alice") == 4)
            // After the newest message: the newest.
            #expect(try await store.seq(at: times[4].addingTimeInterval(60), in: id, for: "alice") == 5)
            await #expect(throws: StoreError.conversationNotFound) {
                try await store.seq(at: Date(), in: id, for: "mallory")
            }
        }
    }

    @Test func changesComeOldestFirstOncePerMessageInTheirLatestState() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            for index in 1...4 { _ = try await store.send(to: id, from: "alice", body: "m\(index)", clientID: nil) }
            _ = try await store.edit(2, in: id, by: "alice", body: "m2 edited")  // version 5
            _ = try await store.delete(1, in: id, by: "alice")  // version 6
            _ = try await store.edit(2, in: id, by: "alice", body: "m2 again")  // version 7
            let all = try await store.changes(in: id, for: "alice", since: 0, limit: 100)
            #expect(all.messages.map(\.seq) == [3, 4, 1, 2])
            #expect(all.messages.map(\.version) == [3, 4, 6, 7])
            #expect(all.messages.last?.body == "m2 again" && !all.hasMore && all.version == 7)
            let paged1 = try await store.changes(in: id, for: "alice", since: 3, limit: 2)
            #expect(paged1.messages.map(\.seq) == [4, 1] && paged1.hasMore && paged1.version == 6)
            let paged2 = try await store.changes(in: id, for: "alice", since: paged1.version, limit: 2)
            #expect(paged2.messages.map(\.seq) == [2] && !paged2.hasMore && paged2.version == 7)
            let none = try await store.changes(in: id, for: "alice", since: 7, limit: 2)
            #expect(none.messages.isEmpty && !none.hasMore && none.version == 7)
        }
    }
}
