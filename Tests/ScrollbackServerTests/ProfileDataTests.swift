import Foundation
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// A profile's `data` (the app's own JSON about a user) through every
/// surface that carries a profile, and profiles brought in by an import.
@Suite struct ProfileDataTests {
    static func profile(_ reply: LiveCluster.HTTPReply) throws -> UserProfile { try reply.decode(UserEnvelope.self).user }

    /// Set by the user, read by a co-member, named by a page and a live
    /// frame, exported; refused when bad (nothing changes); removed by null.
    @Test func profileDataRoundTripsThroughEverySurfaceAndBadDataIs422() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let socket = try await cluster.connect("bob")
            defer { socket.close() }
            try await cluster.subscribe(socket, to: id)

            let set = try await cluster.request(
                .PATCH, "/v1/users/me", as: "alice",
                body: #"{"display_name": "Alice", "data": {"tier": "gold", "seats": 3, "tags": ["a", {"b": true}]}}"#)
            #expect(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
            let expected = try CustomData([
                "tier": .string("gold"), "seats": .integer(3),
                "tags": .array([.string("a"), .object(["b": .bool(true)])]),
            ])
            let mine = try Self.profile(set)
            #expect(mine.data == expected && mine.displayName == "Alice")

            // The frame that tells bob carries the data.
            let frame = try await socket.next(
                where: { if case .userUpdated(let profile) = $0 { profile.id == "alice" } else { false } },
                timeout: .seconds(5))
            guard case .userUpdated(let told) = frame else {
                Issue.record("no user_updated")
                return
            }
            #expect(told.data == expected && told.version == mine.version)

            #expect(try Self.profile(try await cluster.request(.GET, "/v1/users/alice", as: "bob")).data == expected)
            #expect(try await cluster.request(
                .POST, "/v1/conversations/\(id)/messages", as: "alice", body: #"{"body": "hi"}"#).status == 201)
            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "bob")
                .decode(MessagePage.self)
            #expect(page.users["alice"]?.data == expected)

            // Changing only the data is a change: a new version.
            let changed = try Self.profile(
                try await cluster.request(.PATCH, "/v1/users/me", as: "alice", body: #"{"data": {"tier": "free"}}"#))
            #expect(changed.version > mine.version && changed.displayName == "Alice")
            #expect(changed.data == (try CustomData(["tier": .string("free")])))

            let deep = #"{"data": {"a": {"b": {"c": {"d": {"e": 1}}}}}}"#
            let large = #"{"data": {"x": ""# + String(repeating: "y", count: 5_000) + #""}}"#
            for bad in [#"{"data": [1, 2]}"#, #"{"data": "text"}"#, deep, large] {
                let reply = try await cluster.request(.PATCH, "/v1/users/me", as: "alice", body: bad)
                #expect(reply.status == 422 && reply.code == .invalidData, "\(bad.prefix(60))")
            }
            #expect(try Self.profile(try await cluster.request(.GET, "/v1/users/me", as: "alice")) == changed)

            // The operator sets the profile as a whole, data included, and an export holds it.
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            let put = try await cluster.request(
                .PUT, "/v1/admin/users/alice/profile", token: server,
                body: #"{"display_name": "Alice A", "data": {"crm_id": 42}}"#)
            #expect(put.status == 200)
            #expect(try Self.profile(put).data == (try CustomData(["crm_id": .integer(42)])))
            let export = try await cluster.request(.GET, "/v1/admin/users/alice/export", token: server)
            let first = try #require(String(decoding: export.body, as: UTF8.self).split(separator: "\n").first)
            guard case .user(let exported) = try ScrollbackJSON.decoder().decode(UserExportRecord.self, from: Data(first.utf8))
            else {
                Issue.record("no user record first")
                return
            }
            #expect(exported.data == (try CustomData(["crm_id": .integer(42)])) && exported.displayName == "Alice A")

            let cleared = try Self.profile(
                try await cluster.request(.PATCH, "/v1/users/me", as: "alice", body: #"{"data": null}"#))
            #expect(cleared.data == nil && cleared.displayName == "Alice A")
        }
    }

    /// `user` lines set profiles as a whole: shown to co-members, found by
    /// search (by a word of the name, and by the id of a user the import
    /// recorded), unchanged by the same file again; a bad line is a problem
    /// with its number and nothing is stored.
    @Test func anImportTakesProfiles() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            let id = UUID()
            let start = Date(timeIntervalSince1970: 1_600_000_000)
            let avatar = ProfileImage(url: "https://cdn.example/imp.png", width: 64, height: 64)
            let lines: [ImportLine] = [
                .conversation(id, createdBy: "imported-owner", title: "Old chat", createdAt: start),
                .member("imported-owner", of: id, role: .owner), .member("zed.moved", of: id),
                .message("m1", in: id, sender: "zed.moved", body: "from before", createdAt: start),
                .user("zed.moved", displayName: "Zed Émigré", avatar: avatar, data: try CustomData(["legacy": .integer(7)])),
                .user("imported-owner", displayName: "Old Owner"),
            ]
            let file = try ImportAPITests.ndjson(lines)
            let reply = try await cluster.request(.POST, "/v1/admin/import", token: server, body: file)
            #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
            #expect(try reply.decode(ImportReport.self).users == 2)

            let zed = try Self.profile(
                try await cluster.request(.GET, "/v1/users/zed.moved", as: "imported-owner"))
            #expect(zed.displayName == "Zed Émigré" && zed.avatar == avatar && zed.version > 0)
            #expect(zed.data == (try CustomData(["legacy": .integer(7)])))
            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "imported-owner")
                .decode(MessagePage.self)
            #expect(page.users["zed.moved"]?.displayName == "Zed Émigré")

            func search(_ q: String) async throws -> [String] {
                try await cluster.request(.GET, "/v1/users?q=\(q)", as: "imported-owner").decode(UserList.self)
                    .users.map(\.id)
            }
            #expect(try await search("emig") == ["zed.moved"])  // a second name, without its accent
            #expect(try await search("moved") == ["zed.moved"])  // a word of the id
            #expect(try await search("zed") == ["zed.moved"])

            let again = try await cluster.request(.POST, "/v1/admin/import", token: server, body: file)
            #expect(try again.decode(ImportReport.self).users == 0)
            #expect(try Self.profile(
                try await cluster.request(.GET, "/v1/users/zed.moved", as: "imported-owner")).version == zed.version)

            var bad = ImportLine.user("zed.moved", displayName: String(repeating: "n", count: 101))
            bad.data = try CustomData(["legacy": .integer(8)])
            let refused = try await cluster.request(
                .POST, "/v1/admin/import", token: server,
                body: try ImportAPITests.ndjson([.user("imported-owner", displayName: "Renamed"), bad]))
            #expect(refused.status == 422)
            let report = try refused.decode(ImportReport.self)
            #expect(report.problems.map(\.line) == [2] && report.users == 0)
            #expect(try Self.profile(
                try await cluster.request(.GET, "/v1/users/imported-owner", as: "zed.moved")).displayName == "Old Owner")
        }
    }
}
