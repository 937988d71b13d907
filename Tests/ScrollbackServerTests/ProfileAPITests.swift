import Foundation
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Profiles on real instances: set, read by co-members only, named by
/// pages, searched, told live across instances.
@Suite struct ProfileAPITests {
    static func json(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func rename(_ user: String, _ name: String, in cluster: LiveCluster, on index: Int = 0) async throws
        -> UserProfile
    {
        let reply = try await cluster.request(
            .PATCH, "/v1/users/me", as: user, body: try json(["display_name": name]), on: index)
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        return try reply.decode(UserEnvelope.self).user
    }

    /// 50 messages from 10 senders, one a reply: the page names each sender
    /// once, with the name each set, from the database and from the cache.
    @Test func aPageOfFiftyMessagesFromTenSendersNamesEachSenderOnce() async throws {
        try await LiveCluster.run { cluster in
            let senders = (0..<10).map { "sender\($0)" }
            let id = try await cluster.conversation("reader", members: senders)
            for (n, sender) in senders.enumerated() {
                _ = try await Self.rename(sender, "Sender Number \(n)", in: cluster)
            }
            for n in 0..<50 {
                let body = n == 49 ? #"{"body": "answer", "reply_to": 1}"# : #"{"body": "message \#(n)"}"#
                let sent = try await cluster.request(
                    .POST, "/v1/conversations/\(id)/messages", as: senders[n % 10], body: body)
                #expect(sent.status == 201)
            }
            for _ in 0..<2 {  // the second from the page cache
                let reply = try await cluster.request(.GET, "/v1/conversations/\(id)/messages?limit=50", as: "reader")
                let page = try reply.decode(MessagePage.self)
                #expect(page.messages.count == 50)
                #expect(Set(page.users.profiles.keys) == Set(senders))
                for (n, sender) in senders.enumerated() {
                    #expect(page.users[sender]?.displayName == "Sender Number \(n)")
                    #expect((page.users[sender]?.version ?? 0) > 0)
                }
                // Each once: the object has one key per user.
                let raw = try #require(
                    try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
                #expect((raw["users"] as? [String: Any])?.count == 10)
            }
            // Layout hints answer the same profiles.
            let hinted = try await cluster.request(
                .GET, "/v1/conversations/\(id)/messages?limit=50&viewport_height=800&viewport_width=390", as: "reader")
            #expect(Set(try hinted.decode(MessagePage.self).users.profiles.keys) == Set(senders))
        }
    }

    /// A thread page names the root's sender, each reply's and each sender
    /// a reply quotes; a change set names each changed message's senders;
    /// a rename shows in the next of each, the cached page's too.
    @Test func threadPagesAndChangeSetsNameTheirSenders() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob", "carol", "dave"])
            for (user, name) in [("alice", "Alice"), ("bob", "Bob"), ("carol", "Carol"), ("dave", "Dave")] {
                _ = try await Self.rename(user, name, in: cluster)
            }
            func send(_ user: String, _ body: String) async throws -> Message {
                let reply = try await cluster.request(.POST, "/v1/conversations/\(id)/messages", as: user, body: body)
                #expect(reply.status == 201, "\(String(decoding: reply.body, as: UTF8.self))")
                return try reply.decode(MessageEnvelope.self).message
            }
            let root = try await send("alice", #"{"body": "lunch?"}"#)
            let bobs = try await send("bob", #"{"body": "noon", "reply_to": \#(root.seq)}"#)
            _ = try await send("carol", #"{"body": "with bob", "reply_to": \#(bobs.seq)}"#)
            let outside = try await send("dave", #"{"body": "not in the thread"}"#)

            func thread() async throws -> ThreadPage {
                let reply = try await cluster.request(
                    .GET, "/v1/conversations/\(id)/messages/\(root.seq)/thread", as: "dave")
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
                let raw = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
                #expect((raw["users"] as? [String: Any])?.count == 3, "each once")
                return try reply.decode(ThreadPage.self)
            }
            var page = try await thread()
            #expect(page.messages.count == 2)
            #expect(Set(page.users.profiles.keys) == ["alice", "bob", "carol"], "the root's, the replies', the quoted")
            #expect(page.users["carol"]?.displayName == "Carol")

            func changes(since version: Int64) async throws -> ChangeSet {
                let reply = try await cluster.request(
                    .GET, "/v1/conversations/\(id)/changes?since_version=\(version)", as: "alice")
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
                return try reply.decode(ChangeSet.self)
            }
            var changed = try await changes(since: root.version)
            #expect(changed.messages.map(\.seq).contains(outside.seq))
            #expect(Set(changed.users.profiles.keys) == ["alice", "bob", "carol", "dave"])
            changed = try await changes(since: outside.version)
            #expect(changed.messages.isEmpty && changed.users.isEmpty, "nothing changed, no one named")

            _ = try await Self.rename("bob", "Robert", in: cluster)
            page = try await thread()
            #expect(page.users["bob"]?.displayName == "Robert")
            let edited = try await cluster.request(
                .PATCH, "/v1/conversations/\(id)/messages/\(bobs.seq)", as: "bob", body: #"{"body": "twelve"}"#)
            #expect(edited.status == 200)
            changed = try await changes(since: outside.version)
            #expect(changed.messages.map(\.seq) == [bobs.seq])
            #expect(Set(changed.users.profiles.keys) == ["bob", "alice"], "the edited message's sender and the one it quotes")
            #expect(changed.users["bob"]?.displayName == "Robert")
        }
    }

    /// Bob watches on instance 1; Alice renames herself through instance 0:
    /// the frame reaches Bob within a second, and his next page (cached on
    /// instance 1 before the change) shows the new name.
    @Test func aProfileChangedOnOneInstanceReachesASocketOnAnotherAndTheNextPage() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            _ = try await Self.rename("alice", "Alice Old", in: cluster)
            let sent = try await cluster.request(
                .POST, "/v1/conversations/\(id)/messages", as: "alice", body: #"{"body": "hi"}"#)
            #expect(sent.status == 201)
            let before = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "bob", on: 1)
            #expect(try before.decode(MessagePage.self).users["alice"]?.displayName == "Alice Old")

            let socket = try await cluster.connect("bob", to: 1)
            defer { socket.close() }
            try await cluster.subscribe(socket, to: id)
            let stranger = try await cluster.connect("stranger", to: 1)
            defer { stranger.close() }
            try await Task.sleep(for: .milliseconds(200))  // the stranger's socket has authenticated

            let start = ContinuousClock.now
            let renamed = try await Self.rename("alice", "Alice New", in: cluster, on: 0)
            let frame = try await socket.next(
                where: { if case .userUpdated = $0 { true } else { false } }, timeout: .seconds(1))
            let elapsed = ContinuousClock.now - start
            guard case .userUpdated(let profile) = frame else { Issue.record("no user_updated"); return }
            #expect(profile.id == "alice" && profile.displayName == "Alice New")
            #expect(profile.version == renamed.version)
            #expect(elapsed < .seconds(1))
            // No one else's business.
            let strangerFrames = await stranger.drain(for: .milliseconds(300))
            #expect(!strangerFrames.contains { if case .userUpdated = $0 { true } else { false } })

            let after = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "bob", on: 1)
            #expect(try after.decode(MessagePage.self).users["alice"]?.displayName == "Alice New")
        }
    }

    /// Search finds a co-member by a prefix of any word of their name or id,
    /// folded, paged by cursor; never a stranger; the operator finds anyone.
    @Test func searchFindsACoMemberByAPrefixOfTheirSecondNameAndNeverAStranger() async throws {
        try await LiveCluster.run { cluster in
            _ = try await cluster.conversation("alice", members: ["bob", "dora"])
            _ = try await Self.rename("bob", "Robert Zimmermann", in: cluster)
            _ = try await Self.rename("dora", "Dóra Zimová", in: cluster)
            _ = try await Self.rename("eve", "Zimba Stranger", in: cluster)  // shares nothing with alice
            _ = try await Self.rename("alice", "Alice Zimmer", in: cluster)

            func search(_ q: String, as user: String = "alice", extra: String = "") async throws -> UserList {
                let query = q.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
                let reply = try await cluster.request(.GET, "/v1/users?q=\(query)\(extra)", as: user)
                #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
                return try reply.decode(UserList.self)
            }
            #expect(try await search("zim").users.map(\.id) == ["dora", "bob"])  // by name: "dóra ..." < "robert ..."
            #expect(try await search("ZIMO").users.map(\.id) == ["dora"])  // folded: case and diacritics
            #expect(try await search("rob").users.map(\.id) == ["bob"])
            #expect(try await search("robert zim").users.map(\.id) == ["bob"])
            #expect(try await search("bo").users.map(\.id) == ["bob"])  // by id
            #expect(try await search("stranger").users.isEmpty)
            #expect(try await search("eve").users.isEmpty)
            #expect(try await search("alice").users.isEmpty)  // not oneself

            let first = try await search("zim", extra: "&limit=1")
            #expect(first.users.map(\.id) == ["dora"])
            let cursor = try #require(first.nextCursor)
            let second = try await search("zim", extra: "&limit=1&cursor=\(cursor)")
            #expect(second.users.map(\.id) == ["bob"])
            #expect(second.nextCursor == nil)

            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            let all = try await cluster.request(.GET, "/v1/admin/users?q=zim", token: server)
            #expect(try all.decode(UserList.self).users.map(\.id) == ["alice", "dora", "bob", "eve"])
        }
    }

    /// A stranger's profile is 404 exactly as an unknown id is; a list by
    /// ids leaves strangers out; bad queries are 400.
    @Test func profilesAreReadByCoMembersOnlyAndBadQueriesAre400() async throws {
        try await LiveCluster.run { cluster in
            _ = try await cluster.conversation("alice", members: ["bob", "never,signed\\in"])
            _ = try await Self.rename("bob", "Bob", in: cluster)
            _ = try await Self.rename("eve", "Eve", in: cluster)

            let bob = try await cluster.request(.GET, "/v1/users/bob", as: "alice")
            #expect(bob.status == 200)
            #expect(try bob.decode(UserEnvelope.self).user.displayName == "Bob")
            let eve = try await cluster.request(.GET, "/v1/users/eve", as: "alice")
            let unknown = try await cluster.request(.GET, "/v1/users/nobody-at-all", as: "alice")
            #expect(eve.status == 404 && unknown.status == 404)
            #expect(eve.body == unknown.body)
            #expect(try await cluster.request(.GET, "/v1/users/me", as: "eve").decode(UserEnvelope.self).user.displayName == "Eve")

            let listed = try await cluster.request(
                .GET, "/v1/users?ids=eve,bob,nobody,never%5C,signed%5C%5Cin,alice", as: "alice")
            #expect(listed.status == 200)
            #expect(try listed.decode(UserList.self).users.map(\.id) == ["bob", "never,signed\\in", "alice"])

            let many = (0...100).map { "u\($0)" }.joined(separator: ",")
            for path in [
                "/v1/users?ids=\(many)", "/v1/users?ids=", "/v1/users?q=", "/v1/users?q=\(String(repeating: "a", count: 101))",
                "/v1/users?q=%20%20", "/v1/users", "/v1/users?q=a&ids=b", "/v1/users?q=a&cursor=garbage",
                "/v1/users?q=a&limit=51",
            ] {
                let reply = try await cluster.request(.GET, path, as: "alice")
                #expect(reply.status == 400, "\(path): \(reply.status)")
                #expect(reply.code == .invalidParameter, "\(path)")
            }
            let control = try await cluster.request(.GET, "/v1/users?q=b%00o", as: "alice")
            #expect(control.status == 200)
            #expect(try control.decode(UserList.self).users.isEmpty)
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            #expect(try await cluster.request(.GET, "/v1/admin/users/eve", token: server).status == 200)
            #expect(try await cluster.request(.GET, "/v1/admin/users/nobody-at-all", token: server).status == 404)
        }
    }

    /// Names that are empty, too long, invisible or hold controls are 422
    /// and change nothing; an avatar is the operator's to set; twenty
    /// renames at once each take a version of their own, and the profile
    /// ends as the last of them.
    @Test func badNamesAre422AndConcurrentRenamesEndConsistent() async throws {
        try await LiveCluster.run { cluster in
            _ = try await Self.rename("alice", "Alice", in: cluster)
            for bad in ["", String(repeating: "é", count: 101), "\u{200B}\u{3164}", "a\u{0007}b", "line\nbreak"] {
                let reply = try await cluster.request(
                    .PATCH, "/v1/users/me", as: "alice", body: try Self.json(["display_name": bad]))
                #expect(reply.status == 422, "\(bad.debugDescription)")
                #expect(reply.code == .invalidProfile)
            }
            let avatar = try await cluster.request(
                .PATCH, "/v1/users/me", as: "alice", body: #"{"avatar": {"url": "https://cdn.example/a.png"}}"#)
            #expect(avatar.status == 422 && avatar.code == .invalidProfile)
            let notObject = try await cluster.request(.PATCH, "/v1/users/me", as: "alice", body: #"{"display_name": 5}"#)
            #expect(notObject.status == 400 || notObject.status == 422)
            let me = try await cluster.request(.GET, "/v1/users/me", as: "alice").decode(UserEnvelope.self).user
            #expect(me.displayName == "Alice")

            let answers = try await withThrowingTaskGroup(of: UserProfile.self) { group in
                for n in 0..<20 { group.addTask { try await Self.rename("alice", "Alice \(n)", in: cluster) } }
                return try await group.reduce(into: [UserProfile]()) { $0.append($1) }
            }
            #expect(Set(answers.map(\.version)).count == 20)
            let last = try #require(answers.max { $0.version < $1.version })
            let now = try await cluster.request(.GET, "/v1/users/me", as: "alice").decode(UserEnvelope.self).user
            #expect(now == last)

            // Left out: unchanged; null: cleared (the id shows).
            let untouched = try await cluster.request(.PATCH, "/v1/users/me", as: "alice", body: "{}")
            #expect(try untouched.decode(UserEnvelope.self).user == last)
            let cleared = try await cluster.request(.PATCH, "/v1/users/me", as: "alice", body: #"{"display_name": null}"#)
            let clearedProfile = try cleared.decode(UserEnvelope.self).user
            #expect(clearedProfile.displayName == nil && clearedProfile.version > last.version)
        }
    }

    /// The operator sets a profile with an avatar on their own CDN (audited);
    /// a URL that is not https is 422.
    @Test func theOperatorSetsAProfileWithAnAvatarURL() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            let body = #"{"display_name": "Carol C", "avatar": {"url": "https://cdn.example/carol.jpg", "width": 256, "height": 256, "blurhash": "LEHV6nWB2yk8pyo0adR*.7kCMdnj"}}"#
            let set = try await cluster.request(.PUT, "/v1/admin/users/carol/profile", token: server, body: body)
            #expect(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
            let profile = try set.decode(UserEnvelope.self).user
            #expect(profile.displayName == "Carol C")
            #expect(profile.avatar == ProfileImage(url: "https://cdn.example/carol.jpg", width: 256, height: 256, blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj"))
            #expect(try await cluster.request(.GET, "/v1/users/me", as: "carol").decode(UserEnvelope.self).user == profile)

            for bad in [
                #"{"avatar": {"url": "http://cdn.example/a.jpg"}}"#, #"{"avatar": {"url": "not a url"}}"#,
                #"{"avatar": {"url": "https://cdn.example/a.jpg", "width": 0}}"#,
                #"{"avatar": {"url": "https://cdn.example/a.jpg", "blurhash": "nope"}}"#,
            ] {
                let reply = try await cluster.request(.PUT, "/v1/admin/users/carol/profile", token: server, body: bad)
                #expect(reply.status == 422 && reply.code == .invalidProfile, "\(bad)")
            }
            let audit = try await cluster.request(.GET, "/v1/admin/audit", token: server)
            #expect(String(decoding: audit.body, as: UTF8.self).contains("/v1/admin/users/carol/profile"))
        }
    }

    /// The identity provider's `name` and `picture` show while the user set
    /// nothing; a name they set wins, and a change of the claims then shows
    /// nothing new; cleared, the claims show again.
    @Test func tokenClaimsFillAProfileTheUserHasNotSet() async throws {
        try await TestDatabase.withStore { store in
            let user: UserID = "oidc-user"
            try await store.ensureUser(user, token: TokenProfile(name: "Ann Provider", picture: "https://idp.example/a.png"))
            var shown = try #require(try await store.profiles(of: [user], visibleTo: user).first)
            #expect(shown.displayName == "Ann Provider" && shown.avatar?.url == "https://idp.example/a.png")
            let filled = shown.version
            #expect(filled > 0)
            shown = try await store.updateProfile(of: user, UpdateProfileRequest(displayName: .set("Annie")))
            #expect(shown.displayName == "Annie" && shown.avatar?.url == "https://idp.example/a.png")
            try await store.ensureUser(user, token: TokenProfile(name: "Ann Renamed", picture: "https://idp.example/a.png"))
            let unchanged = try #require(try await store.profiles(of: [user], visibleTo: user).first)
            #expect(unchanged == shown)
            let (found, _) = try await store.searchUsers("renamed", visibleTo: nil, after: nil, limit: 10)
            #expect(found.isEmpty)  // words of the shown name only
            shown = try await store.updateProfile(of: user, UpdateProfileRequest(displayName: .cleared))
            #expect(shown.displayName == "Ann Renamed" && shown.version > unchanged.version)
            #expect(try await store.searchUsers("renamed", visibleTo: nil, after: nil, limit: 10).users.map(\.id) == ["oidc-user"])
        }
    }

    /// The conversation list names each row's last sender and the other
    /// member of a one-to-one; the members list each member. An export holds
    /// the profile; an erasure wipes it, and the pages then name the user
    /// with nothing but their id.
    @Test func listsAndMembersNameProfilesAndAnErasureWipesThem() async throws {
        try await LiveCluster.run { cluster in
            let group = try await cluster.conversation("alice", members: ["bob", "carol"])
            let pair = try await cluster.request(
                .POST, "/v1/conversations", as: "alice", body: #"{"members": ["dave"], "distinct": true}"#)
            #expect(pair.status == 201)
            for (user, name) in [("alice", "Alice"), ("bob", "Bob"), ("carol", "Carol"), ("dave", "Dave")] {
                _ = try await Self.rename(user, name, in: cluster)
            }
            #expect(try await cluster.request(
                .POST, "/v1/conversations/\(group)/messages", as: "bob", body: #"{"body": "hi"}"#).status == 201)
            let list = try await cluster.request(.GET, "/v1/conversations", as: "alice").decode(ConversationList.self)
            #expect(list.conversations.count == 2)
            #expect(Set(list.users.profiles.keys) == ["bob", "dave"])  // bob sent last; dave is the other of the pair
            #expect(list.users["dave"]?.displayName == "Dave")
            let members = try await cluster.request(.GET, "/v1/conversations/\(group)/members", as: "carol")
                .decode(MemberList.self)
            #expect(Set(members.users.profiles.keys) == ["alice", "bob", "carol"])
            #expect(members.users["alice"]?.displayName == "Alice")

            let server = try await cluster.tokens.serverToken(named: "ops", ttl: 600)
            let export = try await cluster.request(.GET, "/v1/admin/users/bob/export", token: server)
            let first = try #require(String(decoding: export.body, as: UTF8.self).split(separator: "\n").first)
            let record = try ScrollbackJSON.decoder().decode(UserExportRecord.self, from: Data(first.utf8))
            guard case .user(let exported) = record else { Issue.record("no user record first"); return }
            #expect(exported.displayName == "Bob")

            #expect(try await cluster.request(.DELETE, "/v1/admin/users/bob", token: server).status == 200)
            let page = try await cluster.request(.GET, "/v1/conversations/\(group)/messages", as: "alice")
                .decode(MessagePage.self)
            #expect(page.users["bob"]?.displayName == nil)
            let (found, _) = try await cluster.store.searchUsers("bob", visibleTo: nil, after: nil, limit: 10)
            #expect(found.isEmpty)
        }
    }
}
