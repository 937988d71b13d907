import Foundation
import NIOHTTP1
import NIOWebSocket
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The operator's API on real instances: server tokens, the audit log,
/// system messages and the moderation queue.
@Suite struct OperatorAPITests {
    static let onBehalfOf = "On-Behalf-Of"

    /// A server token acts on behalf of any user on their routes and calls
    /// the admin routes; a user's token is refused there, cannot claim the
    /// server scope, and a server token opens no live stream. Every server
    /// call is in the audit log, newest first, paged by keyset.
    @Test func serverTokensActForAnyUserAndEveryCallIsAudited() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)

            let asUser = try await cluster.request(.GET, "/v1/admin/audit", as: "alice")
            #expect(asUser.status == 403 && asUser.code == .serverTokenRequired)
            let noUser = try await cluster.request(.GET, "/v1/conversations", token: server)
            #expect(noUser.status == 400 && noUser.code == .onBehalfOfRequired)
            let badUser = try await cluster.request(.GET, "/v1/conversations", token: server, headers: [(Self.onBehalfOf, "no/one")])
            #expect(badUser.status == 400 && badUser.code == .onBehalfOfRequired)

            // An order was placed: the product's backend opens the buyer's
            // conversation with the seller, as the buyer.
            let opened = try await cluster.request(
                .POST, "/v1/conversations", token: server, headers: [(Self.onBehalfOf, "buyer")],
                body: #"{"members": ["seller"], "distinct": true}"#, on: 1)
            #expect(opened.status == 201)
            let id = try opened.decode(Conversation.self).id
            let members = try await cluster.store.members(of: id, for: "seller")
            #expect(members.map(\.userId) == ["buyer", "seller"] && members.first?.role == .owner)
            // With the buyer's rights, no more: a stranger's conversation is not theirs.
            let strangers = try await cluster.conversation("carol", members: ["dave"])
            let refused = try await cluster.request(
                .GET, "/v1/conversations/\(strangers)/messages", token: server, headers: [(Self.onBehalfOf, "buyer")])
            #expect(refused.status == 404)

            // A user token with `scope: server` written into it is not signed.
            let user = try await cluster.token("alice")
            let parts = user.split(separator: ".").map(String.init)
            var payload = try #require(try JSONSerialization.jsonObject(with: Self.base64URL(parts[1])) as? [String: Any])
            payload["scope"] = "server"
            let forged = [parts[0], Self.base64URL(try JSONSerialization.data(withJSONObject: payload)), parts[2]].joined(separator: ".")
            #expect(try await cluster.request(.GET, "/v1/admin/audit", token: forged).status == 401)

            // A server token opens no live stream.
            let socket = StreamClient(port: cluster.instances[0].port)
            try await socket.waitUntilConnected()
            try socket.send(.auth(token: server))
            #expect(try await socket.next().errorCode == .unauthorized)
            #expect(try await socket.closed()?.closeCode == WebSocketErrorCode(codeNumber: StreamCloseCode.unauthorized))

            // The audit log, newest first: this listing itself (still
            // running), the refused read, the opening. Calls refused before
            // acting (no On-Behalf-Of, a user's token) are not server calls.
            let log = try await cluster.request(.GET, "/v1/admin/audit", token: server).decode(AuditPage.self)
            #expect(log.entries.map(\.path) == ["/v1/admin/audit", "/v1/conversations/\(strangers)/messages", "/v1/conversations"])
            #expect(log.entries.map(\.status) == [nil, 404, 201])
            #expect(log.entries.map(\.onBehalfOf) == [nil, "buyer", "buyer"])
            #expect(log.entries.allSatisfy { $0.actor == "ops" })
            #expect(log.entries.map(\.id) == log.entries.map(\.id).sorted(by: >))

            // Paged one at a time while more calls are made: each entry once.
            var seen: [Int64] = []
            var before: String?
            repeat {
                let path = "/v1/admin/audit?limit=1" + (before.map { "&before=\($0)" } ?? "")
                let page = try await cluster.request(.GET, path, token: server, on: seen.count % 2).decode(AuditPage.self)
                seen += page.entries.map(\.id)
                before = page.next
            } while before != nil
            #expect(seen == seen.sorted(by: >) && Set(seen).count == seen.count)
            #expect(Set(log.entries.map(\.id)).isSubset(of: Set(seen)))
            let bad = try await cluster.request(.GET, "/v1/admin/audit?before=nonsense", token: server)
            #expect(bad.status == 400 && bad.code == .invalidParameter)
        }
    }

    /// A system message takes the conversation's next seq, reaches
    /// subscribers live, counts as unread for every member, and no member
    /// can edit it; the same `client_id` sent by many at once stores it once.
    @Test func systemMessagesAreMessagesNoMemberSentOrCanEdit() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            let id = try await cluster.conversation("alice", members: ["bob"])
            _ = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "alice", body: #"{"body": "hello"}"#)
            for user in ["alice", "bob"] {
                #expect(try await cluster.request(.PUT, "/v1/conversations/\(id)/read", as: user, body: #"{"seq": 1}"#).status == 200)
            }
            let socket = try await cluster.connect("bob", to: 1)
            defer { socket.close() }
            try await cluster.subscribe(socket, to: id)

            let replies = try await withThrowingTaskGroup(of: LiveCluster.HTTPReply.self) { group in
                for n in 0..<12 {
                    group.addTask {
                        try await cluster.request(
                            .POST, "/v1/admin/conversations/\(id)/messages", token: server,
                            body: #"{"body": "Your order shipped", "client_id": "order-1-shipped"}"#, on: n % 2)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.filter { $0.status == 201 }.count == 1 && replies.filter { $0.status == 200 }.count == 11)
            let sent = try #require(try replies.first { $0.status == 201 }?.decode(MessageEnvelope.self).message)
            #expect(sent.seq == 2 && sent.isSystem && sent.sender == "" && sent.body == "Your order shipped")
            #expect(try replies.allSatisfy { try $0.decode(MessageEnvelope.self).message.seq == 2 })
            #expect(String(decoding: replies[0].body, as: UTF8.self).contains(#""kind":"system""#))

            let live = try #require(try await socket.messages(1).first)
            #expect(live.seq == 2 && live.isSystem)
            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "alice").decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == [2, 1] && page.messages[0].isSystem && !page.messages[1].isSystem)
            // Unread for both, who had read message 1.
            for (user, unread) in [("alice", 1), ("bob", 1)] {
                let list = try await cluster.request(.GET, "/v1/conversations", as: user).decode(ConversationList.self)
                #expect(list.conversations.first { $0.id == id }?.unreadCount == Int64(unread), "\(user)")
            }
            for user in ["alice", "bob"] {
                let edit = try await cluster.request(
                    .PATCH, "/v1/conversations/\(id)/messages/2", as: user, body: #"{"body": "mine now"}"#)
                #expect(edit.status == 403, "\(user)")
            }
            // The owner may still delete it, as any message.
            #expect(try await cluster.request(.DELETE, "/v1/conversations/\(id)/messages/2", as: "alice").status == 200)

            let unknown = try await cluster.request(
                .POST, "/v1/admin/conversations/\(UUID())/messages", token: server, body: #"{"body": "hi"}"#)
            #expect(unknown.status == 404 && unknown.code == .conversationNotFound)
            let empty = try await cluster.request(
                .POST, "/v1/admin/conversations/\(id)/messages", token: server, body: #"{"body": " "}"#)
            #expect(empty.status == 422 && empty.code == .invalidMessageBody)
            let asMember = try await cluster.request(
                .POST, "/v1/admin/conversations/\(id)/messages", as: "alice", body: #"{"body": "I am the system"}"#)
            #expect(asMember.status == 403 && asMember.code == .serverTokenRequired)
            let stored = try await cluster.store.page(of: id, for: "alice", anchor: .newest, limit: 10, minVersion: 0)
            #expect(stored.messages.map(\.seq) == [2, 1])
        }
    }

    /// The queue lists open reports newest first by keyset, each with the
    /// message as it was reported; resolving applies the action as the
    /// system (the owner's rights), many resolutions of one report at once
    /// resolve it once, and another action later is refused.
    @Test func theModerationQueueResolvesReportsWithTheirActions() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let server = try await cluster.tokens.serverToken(named: "mod", ttl: 600)
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            let spam = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "bob", body: #"{"body": "buy now"}"#)
            let seq = try spam.decode(MessageEnvelope.self).message.seq
            var filed: [Report] = []
            for (user, body) in [
                ("alice", #"{"conversation_id": "\#(id)", "seq": \#(seq), "reason": "spam"}"#),
                ("carol", #"{"user_id": "bob", "reason": "harassment", "note": "again"}"#),
                ("carol", #"{"conversation_id": "\#(id)", "seq": \#(seq), "reason": "spam"}"#),
            ] {
                filed.append(try await cluster.request(.POST, "/v1/reports", as: user, body: body).decode(Report.self))
            }
            // Edited after the reports: the queue shows it as reported.
            _ = try await cluster.request(.PATCH, "/v1/conversations/\(id)/messages/\(seq)", as: "bob", body: #"{"body": "hello"}"#)

            var listed: [ModerationReport] = []
            var before: String?
            repeat {
                let path = "/v1/admin/reports?limit=1" + (before.map { "&before=\($0)" } ?? "")
                let page = try await cluster.request(.GET, path, token: server).decode(ModerationReportPage.self)
                listed += page.reports
                before = page.next
            } while before != nil
            #expect(listed.map(\.report.id) == filed.reversed().map(\.id))
            #expect(listed.map(\.reporter) == ["carol", "carol", "alice"])
            #expect(listed[0].message == ReportedMessage(sender: "bob", body: "buy now", version: listed[0].message?.version ?? -1))
            #expect(listed[1].message == nil && listed.allSatisfy { $0.resolution == nil && $0.report.status == .open })

            // Twelve moderators resolve the same report at once: one resolution.
            let path = "/v1/admin/reports/\(filed[0].id)/resolve"
            let answers = try await withThrowingTaskGroup(of: LiveCluster.HTTPReply.self) { group in
                for n in 0..<12 {
                    group.addTask {
                        try await cluster.request(.POST, path, token: server, body: #"{"action": "delete_message"}"#, on: n % 2)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.status == 200 }, "\(answers.map(\.status))")
            let resolved = try answers[0].decode(ModerationReport.self)
            #expect(resolved.report.status == .resolved && resolved.resolution?.action == .deleteMessage)
            #expect(resolved.resolution?.resolvedBy == "mod" && resolved.resolution?.conversationId == id)
            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "carol").decode(MessagePage.self)
            #expect(page.messages.first { $0.seq == seq }?.deleted == true)
            let otherwise = try await cluster.request(.POST, path, token: server, body: #"{"action": "ban_user"}"#)
            #expect(otherwise.status == 409 && otherwise.code == .reportAlreadyResolved)

            // The report of a user: banning needs the conversation.
            let userReport = "/v1/admin/reports/\(filed[1].id)/resolve"
            let unnamed = try await cluster.request(.POST, userReport, token: server, body: #"{"action": "ban_user"}"#)
            #expect(unnamed.status == 422 && unnamed.code == .invalidResolution)
            let noMessage = try await cluster.request(.POST, userReport, token: server, body: #"{"action": "delete_message"}"#)
            #expect(noMessage.status == 422 && noMessage.code == .invalidResolution)
            let unknownAction = try await cluster.request(.POST, userReport, token: server, body: #"{"action": "nuke"}"#)
            #expect(unknownAction.status == 422 && unknownAction.code == .invalidResolution)
            let banned = try await cluster.request(
                .POST, userReport, token: server,
                body: #"{"action": "ban_user", "conversation_id": "\#(id)", "note": "third strike"}"#)
            #expect(banned.status == 200)
            #expect(try await cluster.store.members(of: id, for: "alice").map(\.userId) == ["alice", "carol"])
            #expect(try await cluster.request(.POST, "/v1/conversations/\(id)/members", as: "alice", body: #"{"user_id": "bob"}"#).code == .memberBanned)
            let gone = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "bob", body: #"{"body": "hi"}"#)
            #expect(gone.status == 404)

            #expect(try await cluster.request(.POST, "/v1/admin/reports/\(UUID())/resolve", token: server, body: #"{"action": "none"}"#).code == .reportNotFound)
            let open = try await cluster.request(.GET, "/v1/admin/reports", token: server).decode(ModerationReportPage.self)
            #expect(open.reports.map(\.report.id) == [filed[2].id])
            let done = try await cluster.request(.GET, "/v1/admin/reports?status=resolved", token: server).decode(ModerationReportPage.self)
            #expect(Set(done.reports.map(\.report.id)) == [filed[0].id, filed[1].id])
            #expect(done.reports.first { $0.report.id == filed[1].id }?.resolution?.note == "third strike")
            #expect(try await cluster.request(.GET, "/v1/admin/reports?status=closed", token: server).status == 400)

            // Moderators resolving one report at once with different actions:
            // only the action that claimed it is applied.
            let carols = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "carol", body: #"{"body": "borderline"}"#)
            let carolsSeq = try carols.decode(MessageEnvelope.self).message.seq
            let contested = try await cluster.request(
                .POST, "/v1/reports", as: "alice", body: #"{"conversation_id": "\#(id)", "seq": \#(carolsSeq), "reason": "other"}"#
            ).decode(Report.self)
            let raced = try await withThrowingTaskGroup(of: LiveCluster.HTTPReply.self) { group in
                for n in 0..<12 {
                    group.addTask {
                        try await cluster.request(
                            .POST, "/v1/admin/reports/\(contested.id)/resolve", token: server,
                            body: n % 2 == 0 ? #"{"action": "delete_message"}"# : #"{"action": "ban_user"}"#, on: n % 2)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let winner = try #require(try raced.first { $0.status == 200 }?.decode(ModerationReport.self).resolution?.action)
            #expect(raced.filter { $0.status == 200 }.count == 6 && raced.filter { $0.status == 409 }.count == 6, "\(raced.map(\.status))")
            let carolStays = try await cluster.store.members(of: id, for: "alice").contains { $0.userId == "carol" }
            let carolsMessage = try await cluster.store.page(of: id, for: "alice", anchor: .around(carolsSeq), limit: 1, minVersion: 0)
                .messages.first { $0.seq == carolsSeq }
            if winner == .deleteMessage {
                #expect(carolStays && carolsMessage?.deleted == true, "the ban was applied too")
            } else {
                #expect(!carolStays && carolsMessage?.deleted == false, "the deletion was applied too")
            }

            // Each resolution is in the audit log with its action.
            let log = try await cluster.request(.GET, "/v1/admin/audit?limit=100", token: server).decode(AuditPage.self)
            let resolutions = log.entries.filter { $0.path.hasSuffix("/resolve") && $0.status == 200 }
            #expect(resolutions.count == 13 + 6)
            let userReportResolution = resolutions.first { $0.path.lowercased().contains(filed[1].id.uuidString.lowercased()) }
            #expect(userReportResolution?.detail == ["report_id": filed[1].id.uuidString.lowercased(), "action": "ban_user"])
        }
    }

    static func base64URL(_ text: String) -> Data {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64) ?? Data()
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
