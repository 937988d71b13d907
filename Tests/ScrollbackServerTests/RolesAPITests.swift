import Foundation
import NIOHTTP1
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Roles, bans and slow mode over HTTP and the socket, on real instances:
/// every role and every action answers as the table in docs/api.md says,
/// cell by cell; bans hold against racing adds; slow mode holds across
/// instances under a burst while admins send freely.
@Suite struct RolesAPITests {
    // MARK: The table

    /// Who acts in a cell.
    enum Actor: String, CaseIterable {
        case owner, admin, member, removed, banned, stranger
    }

    /// One conversation per cell, with every part an action needs: the
    /// owner, an admin and a member who act, a member and an admin acted
    /// on, a removed member, a banned user, an admin the owner banned, a
    /// stranger, and a message of the member acted on (seq 1). Names are the
    /// cell's own.
    struct Scene {
        let id: UUID
        let prefix: String
        func name(_ part: String) -> String { "\(prefix)-\(part)" }
        func actor(_ actor: Actor) -> String { name(actor.rawValue) }
        var targetMember: String { name("target") }
        var targetAdmin: String { name("target-admin") }
        var bannedAdmin: String { name("banned-admin") }

        static func make(_ cluster: LiveCluster, _ cell: Int) async throws -> Scene {
            let scene = Scene(id: UUID(), prefix: "c\(cell)-\(UUID().uuidString.prefix(6).lowercased())")
            let store = cluster.store
            let owner = UserID(rawValue: scene.actor(.owner))
            let members = [scene.actor(.admin), scene.actor(.member), scene.targetMember, scene.targetAdmin,
                           scene.actor(.removed), scene.actor(.banned), scene.bannedAdmin].map(UserID.init(rawValue:))
            let id = try await store.createConversation(creator: owner, title: nil, members: members).id
            for admin in [scene.actor(.admin), scene.targetAdmin, scene.bannedAdmin] {
                try await store.setRole(.admin, of: UserID(rawValue: admin), in: id, by: owner)
            }
            try await store.removeMember(UserID(rawValue: scene.actor(.removed)), from: id, by: owner)
            try await store.removeMember(UserID(rawValue: scene.actor(.banned)), from: id, by: owner, ban: true)
            try await store.removeMember(UserID(rawValue: scene.bannedAdmin), from: id, by: owner, ban: true)
            _ = try await store.send(to: id, from: UserID(rawValue: scene.targetMember), body: "hello", clientID: nil)
            return Scene(id: id, prefix: scene.prefix)
        }
    }

    /// What an action answered: allowed, refused (403 `forbidden`), not
    /// visible (404 as for no conversation), or anything else (which no
    /// cell expects).
    enum Outcome: String, Equatable {
        case yes, no, notVisible = "404", unexpected
    }

    static func outcome(_ reply: LiveCluster.HTTPReply) -> Outcome {
        switch reply.status {
        case 200..<300: .yes
        case 403 where reply.code == .forbidden: .no
        case 404 where reply.code == .conversationNotFound: .notVisible
        default: .unexpected
        }
    }

    typealias Action = @Sendable (LiveCluster, Scene, String) async throws -> (Outcome, String)

    /// Each row of the documented table, as requests.
    static let actions: [String: Action] = [
        "add a member": { cluster, scene, actor in
            try await run(cluster, .POST, scene, "/members", actor, #"{"user_id": "\#(scene.name("newcomer"))"}"#)
        },
        "remove a member": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/members/\(scene.targetMember)", actor)
        },
        "remove an admin": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/members/\(scene.targetAdmin)", actor)
        },
        "ban a member": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/members/\(scene.targetMember)?ban=true", actor)
        },
        "ban an admin": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/members/\(scene.targetAdmin)?ban=true", actor)
        },
        "list bans": { cluster, scene, actor in
            try await run(cluster, .GET, scene, "/bans", actor)
        },
        "lift a member's ban": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/bans/\(scene.actor(.banned))", actor)
        },
        "lift an admin's ban": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/bans/\(scene.bannedAdmin)", actor)
        },
        "ban a banned admin again": { cluster, scene, actor in
            // Which would replace the ban's end: as lifting it.
            try await run(cluster, .DELETE, scene, "/members/\(scene.bannedAdmin)?ban=true", actor)
        },
        "make a member an admin": { cluster, scene, actor in
            try await run(cluster, .PATCH, scene, "/members/\(scene.targetMember)", actor, #"{"role": "admin"}"#)
        },
        "hand ownership over": { cluster, scene, actor in
            try await run(cluster, .PATCH, scene, "/members/\(scene.targetMember)", actor, #"{"role": "owner"}"#)
        },
        "delete another's message": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/messages/1", actor)
        },
        "set the title": { cluster, scene, actor in
            try await run(cluster, .PATCH, scene, "", actor, #"{"title": "renamed"}"#)
        },
        "set slow mode": { cluster, scene, actor in
            try await run(cluster, .PATCH, scene, "", actor, #"{"slow_mode_seconds": 10}"#)
        },
        "send in slow mode without waiting": { cluster, scene, actor in
            _ = try await cluster.store.updateConversation(
                scene.id, title: nil, slowModeSeconds: 60, by: UserID(rawValue: scene.actor(.owner)))
            let first = try await run(cluster, .POST, scene, "/messages", actor, #"{"body": "one"}"#)
            guard first.0 == .yes else { return first }
            let second = try await cluster.request(
                .POST, "/v1/conversations/\(scene.id)/messages", as: actor, body: #"{"body": "two"}"#)
            if second.status == 429 { return (second.code == .slowMode ? .no : .unexpected, "429 \(second.code?.rawValue ?? "")") }
            return (outcome(second), "\(second.status)")
        },
        "leave": { cluster, scene, actor in
            try await run(cluster, .DELETE, scene, "/members/\(actor)", actor)
        },
    ]

    static func run(
        _ cluster: LiveCluster, _ method: HTTPMethod, _ scene: Scene, _ path: String, _ actor: String,
        _ body: String? = nil
    ) async throws -> (Outcome, String) {
        let reply = try await cluster.request(method, "/v1/conversations/\(scene.id)\(path)", as: actor, body: body)
        return (outcome(reply), "\(reply.status) \(reply.code?.rawValue ?? "")")
    }

    /// The roles table of docs/api.md: each action's row, by role.
    static func documentedTable() throws -> [String: [MemberRole: String]] {
        let page = try String(contentsOfFile: "docs/api.md", encoding: .utf8)
        let section = try #require(page.components(separatedBy: "## Roles, bans and slow mode").dropFirst().first)
        var table: [String: [MemberRole: String]] = [:]
        var header: [String] = []
        for line in section.split(separator: "\n") {
            guard line.hasPrefix("|") else {
                if !header.isEmpty { break }
                continue
            }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            if header.isEmpty {
                header = cells
                continue
            }
            guard !cells[0].hasPrefix("---") else { continue }
            var row: [MemberRole: String] = [:]
            for (index, name) in header.enumerated().dropFirst() {
                row[try #require(MemberRole(rawValue: name))] = cells[index]
            }
            table[cells[0]] = row
        }
        #expect(header == ["action", "owner", "admin", "member"])
        return table
    }

    /// Every cell of the table, for every role, and 404 for the removed,
    /// the banned and strangers; and the same answers from `MemberRole.may`,
    /// the table the kit reads.
    @Test func everyRoleAndActionAnswersAsTheDocumentedTableSays() async throws {
        let table = try Self.documentedTable()
        #expect(Set(table.keys) == Set(Self.actions.keys), "the documented rows and the tested actions differ")
        try await LiveCluster.run { cluster in
            var cell = 0
            var mismatches: [String] = []
            for (label, action) in Self.actions.sorted(by: { $0.key < $1.key }) {
                for actor in Actor.allCases {
                    cell += 1
                    let scene = try await Scene.make(cluster, cell)
                    let expected: Outcome
                    if let role = MemberRole(rawValue: actor.rawValue) {
                        // "yes", or "no" (the owner's leave: only once handed over, and others remain here).
                        expected = table[label]?[role] == "yes" ? .yes : .no
                    } else {
                        expected = .notVisible
                    }
                    let (got, detail) = try await action(cluster, scene, scene.actor(actor))
                    if got != expected { mismatches.append("\(label) as \(actor): expected \(expected), got \(detail)") }
                }
            }
            #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "\n"))")
        }
    }

    @Test func theKitsTableIsTheDocumentedOne() throws {
        let table = try Self.documentedTable()
        let rows: [String: (MemberRole.Action, MemberRole?)] = [
            "add a member": (.addMember, nil), "remove a member": (.removeMember, .member),
            "remove an admin": (.removeMember, .admin), "ban a member": (.ban, .member), "ban an admin": (.ban, .admin),
            "list bans": (.listBans, nil), "lift a member's ban": (.ban, .member),
            "lift an admin's ban": (.ban, .admin), "ban a banned admin again": (.ban, .admin), "make a member an admin": (.changeRole, .member),
            "hand ownership over": (.changeRole, .member), "delete another's message": (.deleteOthersMessage, nil),
            "set the title": (.setTitle, nil), "set slow mode": (.setSlowMode, nil),
            "send in slow mode without waiting": (.skipSlowMode, nil),
        ]
        for (label, (action, target)) in rows {
            for role in MemberRole.allCases {
                #expect((table[label]?[role] == "yes") == role.may(action, on: target), "\(label) as \(role)")
            }
        }
    }

    // MARK: Ownership, bans, slow mode

    @Test func ownershipPassesInOneStepAndSubscribersHearItInOrder() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            let carol = try await cluster.connect("carol", to: 1)
            defer { carol.close() }
            try await cluster.subscribe(carol, to: id)
            // Alice cannot leave while others remain.
            let leave = try await cluster.request(.DELETE, "/v1/conversations/\(id)/members/alice", as: "alice")
            #expect(leave.status == 403 && leave.code == .forbidden)

            let handed = try await cluster.request(
                .PATCH, "/v1/conversations/\(id)/members/bob", as: "alice", body: #"{"role": "owner"}"#)
            #expect(handed.status == 200)
            #expect(
                try handed.decode(MemberList.self).members == [
                    .init(userId: "alice", role: .admin), .init(userId: "bob", role: .owner),
                    .init(userId: "carol", role: .member),
                ])
            #expect(try await carol.next() == .memberUpdated(conversationId: id, userId: "alice", role: .admin))
            #expect(try await carol.next() == .memberUpdated(conversationId: id, userId: "bob", role: .owner))
            #expect(try await cluster.store.conversation(id, for: "bob").role == .owner)

            // Alice, an admin now, may leave; bob, the owner, may not demote himself.
            let demote = try await cluster.request(
                .PATCH, "/v1/conversations/\(id)/members/bob", as: "bob", body: #"{"role": "member"}"#)
            #expect(demote.status == 403)
            #expect(try await cluster.request(.DELETE, "/v1/conversations/\(id)/members/alice", as: "alice").status == 204)
            // The last member leaves, owner or not.
            _ = try await cluster.request(.DELETE, "/v1/conversations/\(id)/members/carol", as: "bob")
            #expect(try await cluster.request(.DELETE, "/v1/conversations/\(id)/members/bob", as: "bob").status == 204)
        }
    }

    /// The owner hands ownership to two members at once, on two instances,
    /// ten times over: one handover answers 200, the other 403 (the owner
    /// it was asked of is an admin by then), never 500, and the
    /// conversation has one owner, the member of the handover that won.
    @Test func twoHandoversAtOnceGiveOneOwnerAndA403() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            for round in 0..<10 {
                let id = try await cluster.conversation("alice", members: ["bob", "carol"])
                async let toBob = cluster.request(
                    .PATCH, "/v1/conversations/\(id)/members/bob", as: "alice", body: #"{"role": "owner"}"#, on: round % 2)
                async let toCarol = cluster.request(
                    .PATCH, "/v1/conversations/\(id)/members/carol", as: "alice", body: #"{"role": "owner"}"#,
                    on: (round + 1) % 2)
                let (bob, carol) = try await (toBob, toCarol)
                #expect(Set([bob.status, carol.status]) == [200, 403], "round \(round): \(bob.status) \(carol.status)")
                let winner = bob.status == 200 ? "bob" : "carol"
                let owners = try await cluster.store.members(of: id, for: "alice").filter { $0.role == .owner }
                #expect(owners.map(\.userId) == [winner], "round \(round): \(owners)")
            }
        }
    }

    /// A ban and an add of the same user, at once, many times: the user
    /// always ends out of the conversation and banned, and the add is
    /// answered either as done (before the ban) or `member_banned`.
    @Test func aBanRacingAnAddAlwaysLeavesTheUserOut() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            try await cluster.store.setRole(.admin, of: "bob", in: id, by: "alice")
            for round in 0..<20 {
                let target = "mallory\(round)"
                async let ban = cluster.request(
                    .DELETE, "/v1/conversations/\(id)/members/\(target)?ban=true", as: "bob", on: round % 2)
                async let add = cluster.request(
                    .POST, "/v1/conversations/\(id)/members", as: "carol", body: #"{"user_id": "\#(target)"}"#,
                    on: (round + 1) % 2)
                let (banned, added) = try await (ban, add)
                #expect(banned.status == 204)
                #expect(added.status == 200 || (added.status == 403 && added.code == .memberBanned), "\(added.status)")
                let members = try await cluster.store.members(of: id, for: "alice").map(\.userId)
                #expect(!members.contains(target))
                #expect(try await cluster.store.bans(of: id, for: "alice").map(\.userId).contains(target))
            }
            // Lifted, the user can be added again; a ban that ends lets them back by itself.
            #expect(try await cluster.request(.DELETE, "/v1/conversations/\(id)/bans/mallory0", as: "bob").status == 204)
            let back = try await cluster.request(
                .POST, "/v1/conversations/\(id)/members", as: "carol", body: #"{"user_id": "mallory0"}"#)
            #expect(back.status == 200)
            let soon = ScrollbackJSON.formatTimestamp(Date().addingTimeInterval(1))
            #expect(
                try await cluster.request(
                    .DELETE, "/v1/conversations/\(id)/members/mallory0?ban=true&until=\(soon)", as: "alice"
                ).status == 204)
            let early = try await cluster.request(
                .POST, "/v1/conversations/\(id)/members", as: "carol", body: #"{"user_id": "mallory0"}"#)
            #expect(early.status == 403 && early.code == .memberBanned)
            try await Task.sleep(for: .milliseconds(1500))
            let later = try await cluster.request(
                .POST, "/v1/conversations/\(id)/members", as: "carol", body: #"{"user_id": "mallory0"}"#)
            #expect(later.status == 200)
        }
    }

    /// A member's burst spread over two instances stores one message, the
    /// rest answered 429 `slow_mode` with Retry-After; an admin's burst is
    /// stored whole; a retry of the stored send is answered as a replay;
    /// the socket's refusal carries `retry_after`; once the period passes
    /// the member sends again.
    @Test func slowModeHoldsAMembersBurstOnEveryInstanceAndLetsAdminsThrough() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            try await cluster.store.setRole(.admin, of: "carol", in: id, by: "alice")
            let set = try await cluster.request(
                .PATCH, "/v1/conversations/\(id)", as: "carol", body: #"{"slow_mode_seconds": 3}"#)
            #expect(set.status == 200)
            let slowMode = try set.decode(Conversation.self).slowModeSeconds
            #expect(slowMode == 3)

            let burst = try await withThrowingTaskGroup(of: (String, LiveCluster.HTTPReply).self) { group in
                for n in 0..<12 {
                    let user = n % 2 == 0 ? "bob" : "carol"
                    group.addTask {
                        let reply = try await cluster.request(
                            .POST, "/v1/conversations/\(id)/messages", as: user,
                            body: #"{"body": "burst \#(n)", "client_id": "b-\#(n)"}"#, on: n % 4 < 2 ? 0 : 1)
                        return (user, reply)
                    }
                }
                return try await group.reduce(into: [(String, LiveCluster.HTTPReply)]()) { $0.append($1) }
            }
            let bob = burst.filter { $0.0 == "bob" }.map(\.1)
            let carol = burst.filter { $0.0 == "carol" }.map(\.1)
            #expect(bob.filter { $0.status == 201 }.count == 1, "\(bob.map(\.status))")
            #expect(bob.filter { $0.status == 429 && $0.code == .slowMode }.count == 5)
            for refused in bob where refused.status == 429 {
                let wait = Int(refused.headers.first(name: "Retry-After") ?? "") ?? 0
                #expect((1...6).contains(wait), "Retry-After \(wait)")
            }
            #expect(carol.allSatisfy { $0.status == 201 })

            // A retry of the stored send is its replay, not a refusal.
            let stored = try #require(bob.first { $0.status == 201 }).decode(MessageEnvelope.self).message
            let retry = try await cluster.request(
                .POST, "/v1/conversations/\(id)/messages", as: "bob",
                body: #"{"body": "\#(stored.body)", "client_id": "\#(stored.clientId ?? "")"}"#, on: 1)
            #expect(retry.status == 200)

            // The socket's refusal.
            let socket = try await cluster.connect("bob", to: 1)
            defer { socket.close() }
            try socket.send(.send(conversationId: id, body: "by socket", clientId: "s-1"))
            let refusal = try await socket.next { $0.isError }
            guard case .error(let code, _, let ref, let retryAfter) = refusal else { throw StreamClientError.noFrame }
            #expect(code == .slowMode && ref == "s-1" && (retryAfter ?? 0) >= 1)

            try await Task.sleep(for: .seconds(3.2))
            let after = try await cluster.request(
                .POST, "/v1/conversations/\(id)/messages", as: "bob", body: #"{"body": "later"}"#)
            #expect(after.status == 201)
            // Off again.
            _ = try await cluster.request(.PATCH, "/v1/conversations/\(id)", as: "alice", body: #"{"slow_mode_seconds": 0}"#)
            let free = try await cluster.request(
                .POST, "/v1/conversations/\(id)/messages", as: "bob", body: #"{"body": "free"}"#)
            #expect(free.status == 201)
        }
    }

    /// Bad input: a clear 4xx naming what to fix, and nothing changed.
    @Test func badInputIsRefusedWithWhatToFix() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let path = "/v1/conversations/\(id)"
            let cases: [(HTTPMethod, String, String?, Int, APIErrorCode)] = [
                (.PATCH, path, #"{"slow_mode_seconds": 21601}"#, 422, .invalidSlowMode),
                (.PATCH, path, #"{"slow_mode_seconds": -1}"#, 422, .invalidSlowMode),
                (.PATCH, path, #"{}"#, 422, .invalidField),
                (.PATCH, path, #"{"title": ""}"#, 422, .invalidTitle),
                (.PATCH, path + "/members/bob", #"{"role": "god"}"#, 422, .invalidRole),
                (.PATCH, path + "/members/bob", #"{"role": 3}"#, 400, .invalidField),
                (.DELETE, path + "/members/bob?ban=maybe", nil, 400, .invalidParameter),
                (.DELETE, path + "/members/bob?ban=true&until=2020-01-01T00:00:00Z", nil, 422, .invalidBan),
                (.DELETE, path + "/members/bob?ban=true&until=tomorrow", nil, 422, .invalidBan),
                (.DELETE, path + "/members/bob?until=2099-01-01T00:00:00Z", nil, 422, .invalidBan),
                (.PATCH, path + "/members/nobody", #"{"role": "admin"}"#, 404, .memberNotFound),
            ]
            for (method, target, body, status, code) in cases {
                let reply = try await cluster.request(method, target, as: "alice", body: body)
                #expect(reply.status == status && reply.code == code, "\(method) \(target) \(body ?? ""): \(reply.status)")
                let message = try reply.decode(APIErrorBody.self).error.message
                #expect(!message.isEmpty)
            }
            let after = try await cluster.store.conversation(id, for: "alice")
            #expect(after.slowModeSeconds == 0 && after.title == nil && after.members == ["alice", "bob"])
            #expect(try await cluster.store.members(of: id, for: "alice").map(\.role) == [.owner, .member])
        }
    }
}
