import Foundation
import NIOHTTP1
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// One-to-one conversations, blocks and reports on real instances.
@Suite struct SafetyAPITests {
    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// Both sides tap "message" 50 times at once, on two instances: one
    /// conversation, created once, answered to all.
    @Test func fiftyDistinctCreationsFromBothSidesOnTwoInstancesGiveOneConversation() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let replies = try await withThrowingTaskGroup(of: LiveCluster.HTTPReply.self) { group in
                for n in 0..<50 {
                    let (caller, other) = n % 2 == 0 ? ("alice", "bob") : ("bob", "alice")
                    group.addTask {
                        try await cluster.request(
                            .POST, "/v1/conversations", as: caller, body: #"{"members": ["\#(other)"], "distinct": true}"#,
                            on: n % 4 < 2 ? 0 : 1)
                    }
                }
                return try await group.reduce(into: [LiveCluster.HTTPReply]()) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == 201 }.count == 1, "\(replies.map(\.status))")
            #expect(replies.allSatisfy { $0.status == 200 || $0.status == 201 })
            let ids = Set(try replies.map { try $0.decode(Conversation.self).id })
            #expect(ids.count == 1)
            let id = try #require(ids.first)
            #expect(try await cluster.store.members(of: id, for: "alice").map(\.userId) == ["alice", "bob"])
            let listed = try await cluster.store.conversations(for: "bob", limit: 50, after: nil).conversations
            #expect(listed.map(\.id) == [id])

            // Its members change: it is no longer "the" conversation of alice and bob.
            _ = try await cluster.store.addMember("carol", to: id, by: "alice")
            let again = try await cluster.request(
                .POST, "/v1/conversations", as: "alice", body: #"{"members": ["bob"], "distinct": true}"#)
            #expect(again.status == 201)
            #expect(try again.decode(Conversation.self).id != id)
            // A plain creation is never distinct: two taps, two conversations.
            let first = try await cluster.request(.POST, "/v1/conversations", as: "dave", body: #"{"members": ["erin"]}"#)
            let second = try await cluster.request(.POST, "/v1/conversations", as: "dave", body: #"{"members": ["erin"]}"#)
            #expect(try first.decode(Conversation.self).id != second.decode(Conversation.self).id)
            let tooMany = (1...20).map { "\"u\($0)\"" }.joined(separator: ", ")
            let large = try await cluster.request(
                .POST, "/v1/conversations", as: "alice", body: #"{"members": [\#(tooMany)], "distinct": true}"#)
            #expect(large.status == 422 && large.code == .tooManyMembers)
        }
    }

    /// Alice blocks bob: in the conversation they share with carol, bob's
    /// messages reach alice flagged, on her pages and her live frames on
    /// another instance than the block's, and reach carol unflagged; bob can
    /// no longer start a conversation with alice nor add her to one; his
    /// mentions of alice are not hers and he never pushes to her. Lifted,
    /// nothing is flagged.
    @Test func aBlockFlagsTheBlockersViewOnlyAndKeepsTheBlockedAway() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            let aliceSocket = try await cluster.connect("alice", to: 1)
            defer { aliceSocket.close() }
            try await cluster.subscribe(aliceSocket, to: id)
            let carolSocket = try await cluster.connect("carol", to: 1)
            defer { carolSocket.close() }
            try await cluster.subscribe(carolSocket, to: id)

            let blocked = try await cluster.request(.PUT, "/v1/blocks/bob", as: "alice", on: 0)
            #expect(blocked.status == 200)
            #expect(try blocked.decode(BlockedUser.self).userId == "bob")
            #expect(try await cluster.request(.GET, "/v1/blocks", as: "alice").decode(BlockList.self).blocks.map(\.userId) == ["bob"])
            // Instance 1 hears of the block through the change feed.
            try await Task.sleep(for: .milliseconds(500))

            let sent = try await cluster.request(
                .POST, "/v1/conversations/\(id)/messages", as: "bob", body: #"{"body": "@alice @carol hi"}"#, on: 0)
            #expect(sent.status == 201)
            let seq = try sent.decode(MessageEnvelope.self).message.seq
            let toAlice = try #require(try await aliceSocket.next { $0.newMessage != nil }.newMessage)
            let toCarol = try #require(try await carolSocket.next { $0.newMessage != nil }.newMessage)
            #expect(toAlice.seq == seq && toAlice.blockedSender)
            #expect(toCarol.seq == seq && !toCarol.blockedSender)

            let alicePage = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "alice", on: 1)
            let carolPage = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "carol", on: 1)
            #expect(try alicePage.decode(MessagePage.self).messages.first { $0.seq == seq }?.blockedSender == true)
            #expect(!String(decoding: carolPage.body, as: UTF8.self).contains("blocked_sender"))
            let aliceChanges = try await cluster.request(
                .GET, "/v1/conversations/\(id)/changes?since_version=0", as: "alice")
            #expect(try aliceChanges.decode(ChangeSet.self).messages.first { $0.seq == seq }?.blockedSender == true)

            // Mentions: carol's counts, alice's does not.
            #expect(try await cluster.store.conversation(id, for: "alice").unreadMentions == 0)
            #expect(try await cluster.store.conversation(id, for: "carol").unreadMentions == 1)
            #expect(try await cluster.store.mentions(of: "alice", before: nil, limit: 10).mentions.isEmpty)
            // Pushes: carol would get one, alice not.
            for user in ["alice", "carol"] {
                _ = try await cluster.store.registerDevice(
                    "phone", of: UserID(rawValue: user), platform: .apns, token: String(repeating: "ab", count: 32) + user,
                    limit: 20)
            }
            let recipients = try await cluster.store.pushRecipients(
                of: seq, in: id, sender: "bob", excluding: [], evenOnline: true)
            #expect(recipients.map(\.user.rawValue).sorted() == ["carol"])

            // Bob cannot put alice in a new conversation, whichever way.
            let refusals: [(HTTPMethod, String, String)] = [
                (.POST, "/v1/conversations", #"{"members": ["alice"]}"#),
                (.POST, "/v1/conversations", #"{"members": ["alice"], "distinct": true}"#),
                (.POST, "/v1/conversations", #"{"members": ["carol", "alice"]}"#),
            ]
            for (method, path, body) in refusals {
                let reply = try await cluster.request(method, path, as: "bob", body: body)
                #expect(reply.status == 403 && reply.code == .forbidden, "\(body): \(reply.status)")
            }
            let bobAndCarol = try await cluster.request(.POST, "/v1/conversations", as: "bob", body: #"{"members": ["carol"]}"#)
            let other = try bobAndCarol.decode(Conversation.self).id
            let add = try await cluster.request(
                .POST, "/v1/conversations/\(other)/members", as: "bob", body: #"{"user_id": "alice"}"#)
            #expect(add.status == 403 && add.code == .forbidden)
            // Carol may add alice; alice may start one with bob.
            #expect(try await cluster.request(
                .POST, "/v1/conversations/\(other)/members", as: "carol", body: #"{"user_id": "alice"}"#).status == 200)
            #expect(try await cluster.request(.POST, "/v1/conversations", as: "alice", body: #"{"members": ["bob"]}"#).status == 201)

            // Lifted (on instance 1 this time): nothing flagged any more.
            #expect(try await cluster.request(.DELETE, "/v1/blocks/bob", as: "alice", on: 1).status == 204)
            try await Task.sleep(for: .milliseconds(500))
            _ = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "bob", body: #"{"body": "again"}"#)
            let again = try #require(try await aliceSocket.next { $0.newMessage?.body == "again" }.newMessage)
            #expect(!again.blockedSender)
            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "alice", on: 0)
            #expect(!String(decoding: page.body, as: UTF8.self).contains("blocked_sender"))
            #expect(try await cluster.request(.GET, "/v1/blocks", as: "alice").decode(BlockList.self).blocks.isEmpty)
            let selfBlock = try await cluster.request(.PUT, "/v1/blocks/alice", as: "alice")
            #expect(selfBlock.status == 422 && selfBlock.code == .invalidUserID)
        }
    }

    /// A report keeps the message as it was reported through an edit and a
    /// deletion; reporting again is answered with the first report; what
    /// cannot be reported is refused with what to fix.
    @Test func aReportKeepsTheMessageAsItWasAndIsFiledOnce() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            let sent = try await cluster.request(
                .POST, "/v1/conversations/\(id)/messages", as: "bob", body: #"{"body": "something nasty"}"#)
            let message = try sent.decode(MessageEnvelope.self).message
            let body = try Self.json(["conversation_id": id.uuidString.lowercased(), "seq": message.seq, "reason": "harassment", "note": "again"])
            let filed = try await cluster.request(.POST, "/v1/reports", as: "alice", body: body)
            #expect(filed.status == 201)
            let report = try filed.decode(Report.self)
            #expect(report.reason == .harassment && report.seq == message.seq && report.status == .open && report.note == "again")

            _ = try await cluster.store.edit(message.seq, in: id, by: "bob", body: "something nice")
            _ = try await cluster.store.delete(message.seq, in: id, by: "bob")
            let kept = try #require(try await cluster.store.reportedMessage(report.id))
            #expect(kept.sender == "bob" && kept.body == "something nasty" && kept.version == message.version)

            let repeated = try await cluster.request(.POST, "/v1/reports", as: "alice", body: body)
            #expect(repeated.status == 200)
            #expect(try repeated.decode(Report.self).id == report.id)
            // The message is a tombstone now: nothing left to report.
            let late = try await cluster.request(.POST, "/v1/reports", as: "carol", body: body)
            #expect(late.status == 409 && late.code == .messageDeleted)
            let stranger = try await cluster.request(.POST, "/v1/reports", as: "mallory", body: body)
            #expect(stranger.status == 404 && stranger.code == .conversationNotFound)

            let user = try await cluster.request(.POST, "/v1/reports", as: "alice", body: #"{"user_id": "bob", "reason": "spam"}"#)
            #expect(user.status == 201)
            let reportedUser = try user.decode(Report.self).userId
            #expect(reportedUser == "bob")
            #expect(try await cluster.request(
                .POST, "/v1/reports", as: "alice", body: #"{"user_id": "bob", "reason": "spam"}"#).status == 200)
            let unknown = try await cluster.request(
                .POST, "/v1/reports", as: "alice", body: #"{"user_id": "mallory", "reason": "spam"}"#)
            #expect(unknown.status == 404 && unknown.code == .memberNotFound)

            let note = String(repeating: "x", count: 1001)
            let bad: [(String, Int, APIErrorCode)] = [
                (#"{"user_id": "bob", "reason": "rude"}"#, 422, .invalidReport),
                (#"{"reason": "spam"}"#, 422, .invalidReport),
                (#"{"user_id": "bob", "conversation_id": "\#(id)", "seq": 1, "reason": "spam"}"#, 422, .invalidReport),
                (#"{"conversation_id": "\#(id)", "reason": "spam"}"#, 422, .invalidReport),
                (#"{"user_id": "carol", "reason": "spam"}"#, 422, .invalidReport),
                (#"{"user_id": "bob", "reason": "spam", "note": "\#(note)"}"#, 422, .invalidReport),
                (#"{"conversation_id": "\#(id)", "seq": 99, "reason": "spam"}"#, 404, .messageNotFound),
                (#"{"user_id": "bob"}"#, 400, .invalidField),
            ]
            for (body, status, code) in bad {
                let reply = try await cluster.request(.POST, "/v1/reports", as: "carol", body: body)
                #expect(reply.status == status && reply.code == code, "\(body.prefix(80)): \(reply.status)")
            }
        }
    }
}
