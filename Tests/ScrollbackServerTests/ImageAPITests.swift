import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Avatars and conversation images kept by the server, on a real instance
/// and PostgreSQL: sent, checked, shown with their size, served to those
/// who may see them only, replaced, cleared, erased.
@Suite struct ImageAPITests {
    static let blurhash = "LEHV6nWB2yk8pyo0adR*.7kCMdnj"

    /// A PUT of raw `bytes` as `user` (or with `token`).
    static func put(
        _ bytes: [UInt8], _ path: String, as user: String, in cluster: LiveCluster, type: String = "image/png"
    ) async throws -> LiveCluster.HTTPReply {
        var request = HTTPClientRequest(url: cluster.instances[0].baseURL + path)
        request.method = .PUT
        request.headers.add(name: "Authorization", value: "Bearer \(try await cluster.token(user))")
        request.headers.add(name: "Content-Type", value: type)
        request.body = .bytes(ByteBuffer(bytes: bytes))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return LiveCluster.HTTPReply(status: Int(response.status.code), headers: response.headers, body: Data(buffer: body))
    }

    static func profile(_ reply: LiveCluster.HTTPReply) throws -> UserProfile { try reply.decode(UserEnvelope.self).user }

    /// An export holds the uploaded avatar's bytes, right after the user,
    /// counted in its `end`; a user without one has no avatar record.
    @Test func anExportHoldsTheUploadedAvatarsBytes() async throws {
        try await LiveCluster.run { cluster in
            _ = try await cluster.conversation("alice", members: ["bob"])
            let png = UploadAPITests.png(width: 64, height: 48)
            let set = try await Self.put(png, "/v1/users/me/avatar?blurhash=\(Self.blurhash)", as: "alice", in: cluster)
            #expect(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            func export(_ user: String) async throws -> [UserExportRecord] {
                let reply = try await cluster.request(.GET, "/v1/admin/users/\(user)/export", token: server)
                #expect(reply.status == 200)
                return try String(decoding: reply.body, as: UTF8.self).split(separator: "\n").map {
                    try ScrollbackJSON.decoder().decode(UserExportRecord.self, from: Data($0.utf8))
                }
            }
            let records = try await export("alice")
            guard records.count > 2, case .user(let user) = records[0], case .avatar(let image) = records[1] else {
                Issue.record("no user then avatar: \(records.prefix(2))")
                return
            }
            #expect(image.bytes == png && image.contentType == "image/png")
            #expect(user.avatar?.url.hasSuffix("?v=" + image.sha256.prefix(16)) == true)
            if case .end(let count) = records.last { #expect(count == records.count - 1) } else { Issue.record("no end") }
            // bob has no picture: no avatar record.
            #expect(!(try await export("bob")).contains { if case .avatar = $0 { true } else { false } })
        }
    }

    @Test func anAvatarIsKeptShownWithItsSizeAndServedToCoMembersOnly() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            _ = try await cluster.conversation("carol", members: ["dave"])
            let png = UploadAPITests.png(width: 64, height: 48)
            let set = try await Self.put(png, "/v1/users/me/avatar?blurhash=\(Self.blurhash)", as: "alice", in: cluster)
            #expect(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
            let avatar = try #require(try Self.profile(set).avatar)
            #expect(avatar.url.hasPrefix("/v1/users/alice/avatar?v="))
            #expect(avatar.width == 64 && avatar.height == 48 && avatar.blurhash == Self.blurhash)

            // A co-member loads it; the page names it; a cached copy is 304.
            let got = try await cluster.request(.GET, avatar.url, as: "bob")
            #expect(got.status == 200 && Array(got.body) == png)
            #expect(got.headers.first(name: "Content-Type") == "image/png")
            #expect(got.headers.first(name: "X-Content-Type-Options") == "nosniff")
            let tag = try #require(got.headers.first(name: "ETag"))
            #expect(tag == UploadAPITests.etag(of: png))
            let token = try await cluster.token("bob")
            #expect(try await cluster.request(.GET, avatar.url, token: token, headers: [("If-None-Match", tag)]).status == 304)
            #expect(try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: "alice", body: #"{"body": "hi"}"#).status == 201)
            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "bob").decode(MessagePage.self)
            #expect(page.users["alice"]?.avatar == avatar)

            // A stranger, and a user with none, get the same 404 as an unknown id.
            let stranger = try await cluster.request(.GET, "/v1/users/alice/avatar", as: "carol")
            let unknown = try await cluster.request(.GET, "/v1/users/nobody-at-all/avatar", as: "carol")
            #expect(stranger.status == 404 && stranger.code == .userNotFound)
            #expect(stranger.body == unknown.body)
            #expect(try await cluster.request(.GET, "/v1/users/me/avatar", as: "alice").status == 200)

            // Bad pictures are 422 (or 413) and change nothing.
            let before = try await cluster.request(.GET, "/v1/users/me", as: "alice").body
            let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>"#.utf8)
            for (bytes, path, status) in [
                (Array("not an image at all".utf8), "/v1/users/me/avatar", 422),
                (svg, "/v1/users/me/avatar", 422),
                ([], "/v1/users/me/avatar", 422),
                (UploadAPITests.png(width: 0, height: 10), "/v1/users/me/avatar", 422),
                (png, "/v1/users/me/avatar?blurhash=nope", 422),
                (UploadAPITests.png(width: 10, height: 10, padding: APILimits.maxImageBytes), "/v1/users/me/avatar", 413),
            ] {
                let reply = try await Self.put(bytes, path, as: "alice", in: cluster)
                #expect(reply.status == status, "\(path) \(bytes.count) bytes: \(String(decoding: reply.body, as: UTF8.self))")
                if status == 422 { #expect(reply.code == .invalidImage) }
            }
            #expect(try await cluster.request(.GET, "/v1/users/me", as: "alice").body == before)
            #expect(Array(try await cluster.request(.GET, avatar.url, as: "bob").body) == png)

            // A new picture has a new URL; cleared, nothing is served.
            let jpeg = UploadAPITests.jpeg(width: 30, height: 20)
            let replaced = try #require(try Self.profile(try await Self.put(jpeg, "/v1/users/me/avatar", as: "alice", in: cluster)).avatar)
            #expect(replaced.url != avatar.url && replaced.width == 30 && replaced.blurhash == nil)
            #expect(Array(try await cluster.request(.GET, replaced.url, as: "bob").body) == jpeg)
            let cleared = try await cluster.request(.PATCH, "/v1/users/me", as: "alice", body: #"{"avatar": null}"#)
            #expect(try Self.profile(cleared).avatar == nil)
            #expect(try await cluster.request(.GET, replaced.url, as: "bob").status == 404)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM images").first == 0)

            // An erasure takes the avatar with the profile.
            _ = try await Self.put(png, "/v1/users/me/avatar", as: "alice", in: cluster)
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            #expect(try await cluster.request(.GET, "/v1/admin/users/alice/avatar", token: server).status == 200)
            #expect(try await cluster.request(.DELETE, "/v1/admin/users/alice", token: server).status == 200)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM images").first == 0)
            #expect(try await cluster.request(.GET, "/v1/users/alice/avatar", as: "bob").status == 404)
        }
    }

    /// Twelve pictures sent at once by one user: each answered 200, and the
    /// profile ends naming the picture the server serves.
    @Test func avatarsSentAtOnceEndConsistent() async throws {
        try await LiveCluster.run { cluster in
            _ = try await cluster.conversation("alice", members: ["bob"])
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<12 {
                    group.addTask {
                        try await Self.put(
                            UploadAPITests.png(width: UInt32(10 + n), height: 10), "/v1/users/me/avatar", as: "alice",
                            in: cluster
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 12))
            let avatar = try #require(try Self.profile(try await cluster.request(.GET, "/v1/users/alice", as: "bob")).avatar)
            let served = try await cluster.request(.GET, avatar.url, as: "bob")
            #expect(served.status == 200)
            let width = Int(served.body[16]) << 24 | Int(served.body[17]) << 16 | Int(served.body[18]) << 8 | Int(served.body[19])
            #expect(width == avatar.width)
            #expect(avatar.url.hasSuffix(String(UploadAPITests.etag(of: Array(served.body)).dropFirst().prefix(16))))
        }
    }

    @Test func aConversationImageIsSetByItsOwnerOrAnAdminShownInTheListAndServedToMembers() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let jpeg = UploadAPITests.jpeg(width: 120, height: 80)
            let path = "/v1/conversations/\(id.uuidString.lowercased())/image"
            let operatorPath = "/v1/admin/conversations/\(id.uuidString.lowercased())/image"
            let refused = try await Self.put(jpeg, path, as: "bob", in: cluster)
            #expect(refused.status == 403 && refused.code == .forbidden)
            #expect(try await Self.put(jpeg, path, as: "carol", in: cluster).status == 404)

            let set = try await Self.put(jpeg, path + "?blurhash=\(Self.blurhash)", as: "alice", in: cluster)
            #expect(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
            let image = try #require(try set.decode(Conversation.self).image)
            #expect(image.url.hasPrefix(path + "?v="), "\(image.url)")
            #expect(image.width == 120 && image.height == 80)
            let list = try await cluster.request(.GET, "/v1/conversations", as: "bob").decode(ConversationList.self)
            #expect(list.conversations.first { $0.id == id }?.image == image)
            let got = try await cluster.request(.GET, image.url, as: "bob")
            #expect(got.status == 200 && Array(got.body) == jpeg && got.headers.first(name: "Content-Type") == "image/jpeg")
            let stranger = try await cluster.request(.GET, path, as: "carol")
            #expect(stranger.status == 404 && stranger.code == .conversationNotFound)
            let bad = try await Self.put(Array("<html></html>".utf8), path, as: "alice", in: cluster)
            #expect(bad.status == 422 && bad.code == .invalidImage)

            // The operator's URL replaces the kept picture; bad URLs are 422.
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            let url = #"{"image": {"url": "https://cdn.example/room.png", "width": 200, "height": 200}}"#
            let operatorSet = try await cluster.request(.PUT, operatorPath, token: server, body: url)
            #expect(operatorSet.status == 200, "\(String(decoding: operatorSet.body, as: UTF8.self)) \(operatorSet.headers)")
            #expect(try operatorSet.decode(ConversationImage.self).image?.url == "https://cdn.example/room.png")
            #expect(try await cluster.request(.GET, path, as: "bob").status == 404)
            #expect(try await cluster.request(.GET, "/v1/conversations/\(id)", as: "bob").decode(Conversation.self)
                .image?.url == "https://cdn.example/room.png")
            let badURL = try await cluster.request(
                .PUT, operatorPath, token: server, body: #"{"image": {"url": "http://cdn.example/a.png"}}"#)
            #expect(badURL.status == 422)
            let missing = try await cluster.request(.PUT, operatorPath, token: server, body: "{}")
            #expect(missing.status == 400 && missing.code == .invalidField)
            let unknown = try await cluster.request(
                .PUT, "/v1/admin/conversations/\(UUID())/image", token: server, body: url)
            #expect(unknown.status == 404)

            // Removed by an admin.
            #expect(try await cluster.request(
                .PATCH, "/v1/conversations/\(id)/members/bob", as: "alice", body: #"{"role": "admin"}"#).status == 200)
            let removed = try await cluster.request(.DELETE, path, as: "bob")
            #expect(removed.status == 200)
            #expect(try removed.decode(Conversation.self).image == nil)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM images").first == 0)
        }
    }
}
