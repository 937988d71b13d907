import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@Suite struct ConcurrentChangeTests {
    @Test func concurrentEditsOfOneMessageAllApplyAndEachTakesAVersion() async throws {
        try await TestDatabase.withStore(maximumConnections: 10) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            _ = try await store.send(to: id, from: "alice", body: "original", clientID: nil)
            let versions = try await withThrowingTaskGroup(of: Int64.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        // Sends in between take the conversation row's lock too.
                        if index.isMultiple(of: 4) { _ = try await store.send(to: id, from: "bob", body: "x", clientID: nil) }
                        return try await store.edit(1, in: id, by: "alice", body: "edit \(index)").version
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0.append($1) }
            }
            #expect(Set(versions).count == 20)
            let page = try await store.page(of: id, for: "alice", anchor: .newest, limit: 1)
            #expect(page.version == 1 + 5 + 20)
        }
    }
}

@Suite struct ChangeRacingASendTests {
    /// A delete of the seq a concurrent send is about to take either finds no
    /// message yet (not found) or deletes it: it never fails for lack of luck.
    @Test func deletingASeqWhileItIsBeingSentNeverFailsSpuriously() async throws {
        try await TestDatabase.withStore(maximumConnections: 10) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            for round in 1...40 {
                let seq = Int64(round)
                async let sent = store.send(to: id, from: "bob", body: "r\(round)", clientID: nil)
                async let deleted: DeleteOutcome? = {
                    do { return try await store.delete(seq, in: id, by: "alice") } catch StoreError.messageNotFound { return nil }
                }()
                let (message, outcome) = try await (sent, deleted)
                #expect(message.message.seq == seq)
                if let outcome { #expect(outcome.message.deleted) }
            }
        }
    }
}

@Suite struct ConcurrentMembershipTests {
    @Test func concurrentAddsAndRemovesOfOneMemberAgreeWithEachOther() async throws {
        try await TestDatabase.withStore(maximumConnections: 10) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let added = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<30 { group.addTask { try await store.addMember("dave", to: id, by: "bob").members } }
                return try await group.reduce(into: [[String]]()) { $0.append($1) }
            }
            #expect(added.allSatisfy { $0 == ["alice", "bob", "dave"] })
            let removals = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<30 {
                    group.addTask {
                        do {
                            try await store.removeMember("dave", from: id, by: "alice")
                            return "removed"
                        } catch let error as StoreError {
                            return "\(error)"
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(removals.filter { $0 == "removed" }.count == 1)
            #expect(removals.filter { $0 != "removed" }.allSatisfy { $0 == "memberNotFound" })
        }
    }

    @Test func concurrentAddsNeverPassTheMemberLimit() async throws {
        try await TestDatabase.withStore(maximumConnections: 10) { store in
            let others = (1..<(ScrollbackStore.memberLimit - 1)).map { UserID(rawValue: "user\($0)") }
            let id = try await store.createConversation(creator: "alice", title: nil, members: others).id
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        do {
                            _ = try await store.addMember(UserID(rawValue: "late\(index)"), to: id, by: "alice")
                            return true
                        } catch StoreError.conversationFull {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try await store.conversation(id, for: "alice").members.count == ScrollbackStore.memberLimit)
        }
    }
}
