import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// Roles, bans and slow mode through the kit, against a real instance:
/// async calls, completion handlers, and the live stream's `memberUpdated`.
@Suite struct ModerationClientTests {
    @Test func rolesBansAndSlowModeThroughTheKit() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            let alice = ClientTests.client(cluster, "alice")
            let bob = ClientTests.client(cluster, "bob")
            #expect(try await alice.conversation(id).role == .owner)
            #expect(try await bob.conversation(id).role == .member)

            // Bob hears his promotion live.
            let events = Task {
                for try await event in bob.live(conversation: id) {
                    if case .memberUpdated(let user, let role) = event { return (user, role) }
                }
                return ("", MemberRole.member)
            }
            try await until("bob's stream is live") { try await bob.conversation(id).version >= 0 }
            try await Task.sleep(for: .milliseconds(300))
            let members = try await withCheckedThrowingContinuation { continuation in
                alice.setRole(.admin, of: "bob", in: id) { continuation.resume(with: $0) }
            }
            #expect(members.first { $0.userId == "bob" }?.role == .admin)
            let heard = try await events.value
            #expect(heard.0 == "bob" && heard.1 == .admin)
            #expect(try await bob.members(of: id).map(\.role) == [.owner, .admin, .member])
            #expect(MemberRole.admin.may(.ban, on: .member) && !MemberRole.admin.may(.ban, on: .admin))

            // Bob, an admin, sets slow mode and bans carol; alice lifts it.
            let updated = try await bob.updateConversation(id, title: .some("Lunch"), slowModeSeconds: 60)
            #expect(updated.title == "Lunch" && updated.slowModeSeconds == 60)
            try await bob.ban("carol", from: id)
            #expect(try await alice.bans(of: id).map(\.userId) == ["carol"])
            do {
                _ = try await alice.addMember("carol", to: id)
                Issue.record("a banned user was added")
            } catch let error as ScrollbackError {
                #expect(error.code == .memberBanned)
            }
            try await alice.unban("carol", from: id)
            #expect(try await alice.bans(of: id).isEmpty)
            _ = try await alice.addMember("carol", to: id)

            // Carol, a member, waits in slow mode; the refusal says for how long.
            let carol = ClientTests.client(cluster, "carol")
            _ = try await carol.send("first", to: id)
            do {
                _ = try await carol.send("second", to: id)
                Issue.record("slow mode let a second message through")
            } catch let error as ScrollbackError {
                #expect(error.code == .slowMode)
            }
            do {
                try await carol.ban("bob", from: id)
                Issue.record("a member banned an admin")
            } catch let error as ScrollbackError {
                #expect(error.code == .forbidden)
            }
        }
    }

    @Test func oneToOneBlocksAndReportsThroughTheKit() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let bob = ClientTests.client(cluster, "bob")
            let first = try await alice.distinctConversation(with: ["bob"])
            let fromBob = try await withCheckedThrowingContinuation { continuation in
                bob.distinctConversation(with: ["alice"]) { continuation.resume(with: $0) }
            }
            #expect(first.id == fromBob.id && first.members == ["alice", "bob"])

            let sent = try await bob.send("hello there", to: first.id)
            let report = try await alice.report(message: sent.message.seq, in: first.id, reason: .spam, note: "unsolicited")
            #expect(report.reason == .spam && report.seq == sent.message.seq && report.note == "unsolicited")
            #expect(try await alice.report(message: sent.message.seq, in: first.id, reason: .spam).id == report.id)
            #expect(try await alice.report(user: "bob", reason: .harassment).userId == "bob")

            try await alice.block("bob")
            #expect(try await alice.blocks().map(\.userId) == ["bob"])
            let page = try await alice.page(of: first.id, .newest, limit: 10)
            #expect(page.messages.first?.blockedSender == true)
            #expect(try await bob.page(of: first.id, .newest, limit: 10).messages.first?.blockedSender == false)
            do {
                _ = try await bob.createConversation(members: ["alice"])
                Issue.record("a blocked user started a conversation with the blocker")
            } catch let error as ScrollbackError {
                #expect(error.code == .forbidden)
            }
            try await alice.unblock("bob")
            #expect(try await alice.blocks().isEmpty)
        }
    }
}
