import Foundation
import NIOHTTP1
import NIOWebSocket
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
    /// of it through `changes` (his tombstones are `(erased)`'s), and a
    /// second erasure is 404.
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
                // His are tombstones of `(erased)`: nothing of them names him.
                #expect(!all.contains { $0.sender == "bob" }, "a message still names bob")
                let bobs = all.filter { $0.sender == UserID.erased.rawValue }
                #expect(bobs.count >= 10)
                #expect(bobs.allSatisfy { $0.deleted && $0.body.isEmpty && $0.reactions.isEmpty }, "a message of bob kept its body")
                #expect(all.filter { $0.sender != UserID.erased.rawValue }.allSatisfy { !$0.deleted })
            }
            let lunch = try await cluster.store.page(of: id, for: "alice", anchor: .around(seq), limit: 1, minVersion: 0)
            #expect(lunch.messages.first { $0.seq == seq }?.reactions.map(\.count) == [1])
            #expect(try await cluster.store.members(of: owned, for: "carol").map { "\($0.userId):\($0.role.rawValue)" } == ["carol:member", "dave:owner"])
            #expect(try await cluster.store.members(of: id, for: "alice").map(\.userId) == ["alice", "carol"])
            let changes = try await cluster.store.changes(in: id, for: "alice", since: before, limit: 2000)
            #expect(changes.messages.filter { $0.sender == UserID.erased.rawValue }.count >= 1100)

            let again = try await cluster.request(.DELETE, "/v1/admin/users/bob", token: server)
            #expect(again.status == 404 && again.code == .userNotFound)
            #expect(try await cluster.request(.DELETE, "/v1/admin/users/nobody", token: server).code == .userNotFound)
            #expect(try await cluster.request(.DELETE, "/v1/admin/users/alice", as: "alice").status == 403)
        }
    }

    /// Every row that says bob was somewhere, gone: bob left one
    /// conversation, created another, replied in alice's thread, banned
    /// mallory, was reported and reacted, has a device, and has a live socket
    /// on the other instance while he is erased. After the erasure the
    /// socket is closed (4401), no table names him (his tombstones are
    /// `(erased)`'s), nothing brings him back when the socket's presence
    /// is written, the export and a second erasure are 404, and the same id
    /// signing in later is a new user whose export holds nothing of his.
    @Test func anErasureLeavesNoRowThatNamesTheUserAndNothingBringsThemBack() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let server = try await cluster.tokens.serverToken(named: "dpo", ttl: 600)
            let talk = try await cluster.conversation("alice", members: ["bob", "carol"])
            let left = try await cluster.conversation("carol", members: ["bob"])
            let his = try await cluster.conversation("bob", members: ["alice", "mallory"])
            func post(_ path: String, as user: String, _ body: String) async throws -> LiveCluster.HTTPReply {
                try await cluster.request(.POST, path, as: user, body: body)
            }
            let root = try await post("/v1/conversations/\(talk)/messages", as: "alice", #"{"body": "plans?"}"#)
            let rootSeq = try root.decode(MessageEnvelope.self).message.seq
            #expect(try await post("/v1/conversations/\(talk)/messages", as: "bob", #"{"body": "yes", "reply_to": \#(rootSeq), "client_id": "b-1"}"#).status == 201)
            #expect(try await post("/v1/conversations/\(left)/messages", as: "bob", #"{"body": "bye"}"#).status == 201)
            #expect(try await cluster.request(.DELETE, "/v1/conversations/\(left)/members/bob", as: "bob").status == 204)
            #expect(try await cluster.request(.PUT, "/v1/conversations/\(talk)/messages/\(rootSeq)/reactions/👍", as: "bob").status == 200)
            #expect(try await cluster.request(.DELETE, "/v1/conversations/\(his)/members/mallory?ban=true", as: "bob").status == 204)
            #expect(try await cluster.request(.PUT, "/v1/devices/phone", as: "bob", body: #"{"platform": "fcm", "token": "bob-token"}"#).status < 300)
            #expect(try await cluster.request(.PUT, "/v1/blocks/carol", as: "bob").status == 200)
            #expect(try await post("/v1/reports", as: "alice", #"{"user_id": "bob", "reason": "spam"}"#).status == 201)

            let socket = try await cluster.connect("bob", to: 1)
            defer { socket.close() }
            try await cluster.subscribe(socket, to: talk)

            let erased = try await cluster.request(.DELETE, "/v1/admin/users/bob", token: server, on: 0)
            #expect(erased.status == 200)
            let close = try await socket.closed()
            #expect(close?.closeCode == WebSocketErrorCode(codeNumber: StreamCloseCode.unauthorized), "\(String(describing: close))")

            // The socket's close is written as presence (a flush a moment
            // later): it must not make a user of bob again.
            try await Task.sleep(for: .seconds(2))
            let store = cluster.store
            for (table, condition) in [
                ("users", "id = 'bob'"), ("members", "user_id = 'bob'"), ("member_removals", "user_id = 'bob'"),
                ("presence", "user_id = 'bob'"), ("devices", "user_id = 'bob'"),
                ("blocks", "blocker = 'bob' OR blocked = 'bob'"), ("bans", "user_id = 'bob' OR banned_by = 'bob'"),
                ("reports", "reporter = 'bob' OR user_id = 'bob' OR message_sender = 'bob'"),
                ("messages", "sender = 'bob' OR 'bob' = ANY(thread_participants)"), ("reactions", "user_id = 'bob'"),
                ("mentions", "user_id = 'bob'"), ("conversations", "created_by = 'bob'"), ("uploads", "uploader = 'bob'"),
            ] {
                let count = try await store.values(Int64.self, "SELECT count(*) FROM \(unescaped: table) WHERE \(unescaped: condition)")
                #expect(count == [0], "\(table) still names bob")
            }
            let tombstones = try await store.values(
                Int64.self, "SELECT count(*) FROM messages WHERE sender = '(erased)' AND deleted AND client_id IS NULL")
            #expect(tombstones == [2])
            #expect(try await store.values(String.self, "SELECT created_by FROM conversations WHERE id = \(his)") == ["(erased)"])
            #expect(try await store.values(String.self, "SELECT banned_by FROM bans WHERE conversation_id = \(his)") == ["(erased)"])
            #expect(try await cluster.request(.GET, "/v1/admin/users/bob/export", token: server).code == .userNotFound)
            #expect(try await cluster.request(.DELETE, "/v1/admin/users/bob", token: server).code == .userNotFound)

            // The id again, on either instance: a new user with nothing of the old one.
            for instance in [0, 1] {
                #expect(try await cluster.request(.GET, "/v1/conversations", as: "bob", on: instance).status == 200)
            }
            let export = try Self.lines(try await cluster.request(.GET, "/v1/admin/users/bob/export", token: server))
            #expect(export.map(\.type) == ["user", "end"], "\(export)")
        }
    }

    /// A member others added, who never called the service, is exported
    /// and erased like anyone else; a reply's quote of another user's words
    /// is not in the export (their seq and sender are).
    @Test func aMemberWhoNeverCalledIsExportedAndErasedAndAnExportHoldsNoOneElsesWords() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "dpo", ttl: 600)
            let id = try await cluster.conversation("alice", members: ["quiet"])
            let export = try Self.lines(try await cluster.request(.GET, "/v1/admin/users/quiet/export", token: server))
            #expect(export.map(\.type) == ["user", "membership", "end"], "\(export)")
            if case .user(let user) = export.first { #expect(user.createdAt == nil) }

            let hers = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "alice", body: #"{"body": "alice's private words"}"#)
            let seq = try hers.decode(MessageEnvelope.self).message.seq
            #expect(try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "quiet", body: #"{"body": "mine", "reply_to": \#(seq)}"#).status == 201)
            let reply = try await cluster.request(.GET, "/v1/admin/users/quiet/export", token: server)
            let text = String(decoding: reply.body, as: UTF8.self)
            #expect(!text.contains("private words"), "\(text)")
            let quoted = try Self.lines(reply).compactMap { if case .message(let m) = $0 { m.replyTo } else { nil } }
            #expect(quoted == [ReplyPreview(seq: seq, sender: "alice", excerpt: nil, deleted: false)])

            let erasure = try await cluster.request(.DELETE, "/v1/admin/users/quiet", token: server)
            #expect(erasure.status == 200)
            #expect(try erasure.decode(UserErasure.self).conversations == 1)
            #expect(try await cluster.store.members(of: id, for: "alice").map(\.userId) == ["alice"])
        }
    }
}
