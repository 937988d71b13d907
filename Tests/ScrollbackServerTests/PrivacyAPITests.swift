import Foundation
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// A user's export and erasure through the admin routes, on real
/// instances and a real PostgreSQL.
@Suite struct PrivacyAPITests {
    static func lines(_ reply: LiveCluster.HTTPReply) throws -> [UserExportRecord] {
        try String(decoding: reply.body, as: UTF8.self).split(separator: "\n").map {
            try ScrollbackJSON.decoder().decode(UserExportRecord.self, from: Data($0.utf8))
        }
    }

    /// Everything about bob, in batches past the first: the user, each
    /// conversation (one he left), his 1,203 messages in seq order, his
    /// reaction, device (no token), report and block, and the `end` line.
    @Test func anExportStreamsEverythingAboutAUser() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "dpo", ttl: 600)
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.insertMessages(1200, into: id, from: "bob")
            let left = try await cluster.conversation("carol", members: ["bob"])
            for body in ["one", "two", "three"] {
                #expect(try await cluster.request(.POST, "/v1/conversations/\(left)/messages", as: "bob", body: #"{"body": "\#(body)"}"#).status == 201)
            }
            #expect(try await cluster.request(.DELETE, "/v1/conversations/\(left)/members/bob", as: "bob").status == 204)
            let hers = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "alice", body: #"{"body": "hi"}"#)
            let seq = try hers.decode(MessageEnvelope.self).message.seq
            #expect(try await cluster.request(.PUT, "/v1/conversations/\(id)/messages/\(seq)/reactions/👍", as: "bob").status == 200)
            #expect(try await cluster.request(.PUT, "/v1/devices/phone", as: "bob", body: #"{"platform": "apns", "token": "secret-apns-token"}"#).status < 300)
            #expect(try await cluster.request(.POST, "/v1/reports", as: "bob", body: #"{"conversation_id": "\#(id)", "seq": \#(seq), "reason": "spam"}"#).status == 201)
            #expect(try await cluster.request(.PUT, "/v1/blocks/mallory", as: "bob").status == 200)

            let reply = try await cluster.request(.GET, "/v1/admin/users/bob/export", token: server)
            #expect(reply.status == 200 && reply.headers.first(name: "Content-Type") == "application/x-ndjson")
            #expect(!String(decoding: reply.body, as: UTF8.self).contains("secret-apns-token"))
            let records = try Self.lines(reply)
            #expect(records.first.map { if case .user(let user) = $0 { user.id == "bob" } else { false } } == true)
            #expect(records.last == .end(records: records.count - 1))
            let memberships = records.compactMap { if case .membership(let m) = $0 { m } else { nil } }
            #expect(Set(memberships.map(\.conversationId)) == [id, left])
            #expect(memberships.first { $0.conversationId == left }?.left == true)
            #expect(memberships.first { $0.conversationId == id }.map { $0.role == .member && !$0.left } == true)
            let messages = records.compactMap { if case .message(let m) = $0 { m } else { nil } }
            #expect(messages.filter { $0.conversationId == id }.map(\.seq) == Array(1...1200))
            #expect(messages.filter { $0.conversationId == left }.map(\.body) == ["one", "two", "three"])
            #expect(messages.allSatisfy { $0.sender == "bob" })
            let others = records.filter {
                switch $0 {
                case .reaction, .device, .report, .block: true
                default: false
                }
            }
            #expect(others.map(\.type) == ["reaction", "device", "report", "block"])

            #expect(try await cluster.request(.GET, "/v1/admin/users/nobody/export", token: server).code == .userNotFound)
            #expect(try await cluster.request(.GET, "/v1/admin/users/bob/export", as: "bob").status == 403)
        }
    }

    /// Bob is erased while he keeps sending from two instances: once the
    /// erasure answers, none of his messages has a body, every seq of both
    /// conversations is still there (dense), the others' messages and
    /// reactions are as they were, his reactions are gone from their
    /// counts, the conversation he owned has a new owner, open windows learn
    /// of it through `changes`, and a second erasure is 404.
    @Test func anErasureRacingSendsLeavesDenseTombstones() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let server = try await cluster.tokens.serverToken(named: "dpo", ttl: 600)
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            try await cluster.insertMessages(1100, into: id, from: "bob")
            let owned = try await cluster.conversation("bob", members: ["carol", "dave"])
            try await cluster.insertMessages(10, into: owned, from: "bob")
            _ = try await cluster.store.setRole(.admin, of: "dave", in: owned, by: "bob")
            let hers = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "alice", body: #"{"body": "lunch?"}"#)
            let seq = try hers.decode(MessageEnvelope.self).message.seq
            for user in ["bob", "carol"] {
                #expect(try await cluster.request(.PUT, "/v1/conversations/\(id)/messages/\(seq)/reactions/👍", as: user).status == 200)
            }
            #expect(try await cluster.request(.PUT, "/v1/devices/phone", as: "bob", body: #"{"platform": "fcm", "token": "t-1"}"#).status < 300)
            let before = try await cluster.store.page(of: id, for: "alice", anchor: .newest, limit: 1, minVersion: 0).version

            let sending = Task {
                var accepted = 0
                for n in 0..<400 {
                    let target = n % 2 == 0 ? id : owned
                    let reply = try await cluster.request(
                        .POST, "/v1/conversations/\(target)/messages", as: "bob", body: #"{"body": "still here \#(n)"}"#, on: n % 2)
                    if reply.status == 201 { accepted += 1 } else if reply.status == 404 { break }
                }
                return accepted
            }
            try await Task.sleep(for: .milliseconds(150))
            let erased = try await cluster.request(.DELETE, "/v1/admin/users/bob", token: server, on: 1)
            #expect(erased.status == 200)
            let accepted = try await sending.value
            let erasure = try erased.decode(UserErasure.self)
            #expect(erasure.conversations == 2 && erasure.devices == 1 && erasure.reactions == 1)
            #expect(erasure.messages >= 1110 && erasure.messages <= 1110 + accepted + 1, "\(erasure.messages), \(accepted) accepted")

            for conversation in [id, owned] {
                let reader: UserID = "carol"
                var all: [Message] = []
                var anchor = PageAnchor.newest
                while true {
                    let page = try await cluster.store.page(of: conversation, for: reader, anchor: anchor, limit: 200, minVersion: 0)
                    all += page.messages
                    guard page.hasOlder, let oldest = page.messages.last?.seq else { break }
                    anchor = .before(oldest)
                }
                let seqs = all.map(\.seq).sorted()
                #expect(seqs.count >= 10 && seqs == (0..<seqs.count).map { Int64($0) + 1 }, "the seqs of \(conversation) are not dense")
                let bobs = all.filter { $0.sender == "bob" }
                #expect(bobs.allSatisfy { $0.deleted && $0.body.isEmpty && $0.reactions.isEmpty }, "a message of bob kept its body")
                #expect(all.filter { $0.sender != "bob" }.allSatisfy { !$0.deleted })
            }
            let lunch = try await cluster.store.page(of: id, for: "alice", anchor: .around(seq), limit: 1, minVersion: 0)
            #expect(lunch.messages.first { $0.seq == seq }?.reactions.map(\.count) == [1])
            #expect(try await cluster.store.members(of: owned, for: "carol").map { "\($0.userId):\($0.role.rawValue)" } == ["carol:member", "dave:owner"])
            #expect(try await cluster.store.members(of: id, for: "alice").map(\.userId) == ["alice", "carol"])
            let changes = try await cluster.store.changes(in: id, for: "alice", since: before, limit: 2000)
            #expect(changes.messages.filter { $0.sender == "bob" }.count >= 1100)

            let again = try await cluster.request(.DELETE, "/v1/admin/users/bob", token: server)
            #expect(again.status == 404 && again.code == .userNotFound)
            #expect(try await cluster.request(.DELETE, "/v1/admin/users/nobody", token: server).code == .userNotFound)
            #expect(try await cluster.request(.DELETE, "/v1/admin/users/alice", as: "alice").status == 403)
        }
    }
}
