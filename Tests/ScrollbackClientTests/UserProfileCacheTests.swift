import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import Testing

@testable import ScrollbackClient

/// The kit's profiles: one cache per client that never goes back to a
/// lower version, fed by every answer that names users and by
/// `user_updated`; the models' rows named from it; the offline store
/// keeping the profiles with the windows and the list.
@Suite struct UserProfileCacheTests {
    static func profile(_ id: String, _ name: String?, version: Int64) -> UserProfile {
        UserProfile(id: id, displayName: name, version: version)
    }

    // MARK: The cache on its own

    @Test func theCacheKeepsTheHigherVersionOfEachUser() async {
        let cache = ProfileCache()
        let updates = cache.updates
        #expect(cache.learn([Self.profile("alice", "Alice", version: 2)]).map(\.version) == [2])
        #expect(cache.learn([Self.profile("alice", "Old Alice", version: 1)]).isEmpty, "a lower version is refused")
        #expect(cache.learn([Self.profile("alice", "Same version", version: 2)]).isEmpty, "so is the same one")
        #expect(cache["alice"]?.displayName == "Alice")
        cache.learn(ProfileSet([Self.profile("alice", "Alice Liddell", version: 3), Self.profile("bob", nil, version: 0)]))
        #expect(cache["alice"]?.displayName == "Alice Liddell")
        #expect(cache.profile(of: "bob").shownName == "bob")
        #expect(cache.profile(of: "nobody") == .bare("nobody"), "an unknown user is their id")
        #expect(Set(cache.profiles(of: ["alice", "nobody"]).keys) == ["alice"])

        var batches: [[UserProfile]] = []
        for await batch in updates {
            batches.append(batch)
            if batches.count == 2 { break }
        }
        #expect(batches[0].map(\.displayName) == ["Alice"], "only what changed the cache is handed on")
        #expect(Set(batches[1].map(\.id)) == ["alice", "bob"])
    }

    /// Past its limit the cache lets go of the profiles least recently
    /// learned or read, down to nine tenths of the limit; what a screen
    /// reads stays.
    @Test func theCacheHoldsAtMostItsLimitAndLetsTheLeastRecentlyUsedGo() {
        let cache = ProfileCache(limit: 100)
        for n in 0..<100 { cache.learn([Self.profile("u\(n)", "User \(n)", version: 1)]) }
        #expect(cache.count == 100)
        // Read now (a row on screen): the oldest learned, kept all the same.
        #expect(cache.profiles(of: (0..<5).map { "u\($0)" }).count == 5)
        #expect(cache["u5"] != nil)
        cache.learn([Self.profile("u100", "User 100", version: 1)])
        #expect(cache.count == 90, "down to nine tenths of the limit")
        #expect((0...5).allSatisfy { cache["u\($0)"] != nil }, "read just before: kept")
        #expect(cache["u100"] != nil, "just learned: kept")
        #expect((6...16).allSatisfy { cache["u\($0)"] == nil }, "the eleven least recently used went")
        #expect(cache["u17"] != nil)
        // One let go is learned again from the next page that names them.
        cache.learn([Self.profile("u6", "User 6", version: 1)])
        #expect(cache.profile(of: "u6").displayName == "User 6")
        for n in 200..<1_200 { cache.learn([Self.profile("u\(n)", nil, version: 1)]) }
        #expect(cache.count <= 100)
    }

    @Test func userUpdatedGoesToTheProfileCacheAndToNoSubscriber() {
        var routing = SocketRoutingTests.threeOnOneSocket()
        let renamed = Self.profile("bob", "Robert", version: 4)
        #expect(routing.handle(.socket(1, .received(.userUpdated(renamed)))) == [.learn(renamed)])
    }

    @Test func aProfileShowsANameInitialsAndABoxBeforeItsAvatarLoads() {
        #expect(Self.profile("dora", "Dóra Zimová", version: 1).initials == "DZ")
        #expect(Self.profile("dora", "Dóra Anna Zimová", version: 1).initials == "DZ", "first and last word")
        #expect(UserProfile.bare("alice").shownName == "alice")
        #expect(UserProfile.bare("alice").initials == "A")
        #expect(UserProfile.bare("bob_smith").initials == "BS")
        #expect(Self.profile("x", "!!", version: 1).initials == "?")
        var wide = Self.profile("w", "Wide", version: 1)
        #expect(wide.avatarBox(side: 40) == (40, 40), "no avatar: the placeholder's square")
        wide.avatar = ProfileImage(url: "https://cdn.example/w.png", width: 200, height: 100)
        #expect(wide.avatarBox(side: 40) == (40, 20))
        wide.avatar = ProfileImage(url: "https://cdn.example/w.png")
        #expect(wide.avatarBox(side: 40) == (40, 40), "size unknown: the square")
    }

    @Test func idsAreSentWithCommasAndBackslashesEscaped() {
        #expect(ScrollbackClient.idList(["a", "b,c", #"d\e"#]) == #"a,b\,c,d\\e"#)
    }

    // MARK: The offline store

    @Test func theOfflineStoreKeepsAWindowsProfilesAndANewerVersionReplacesAnOlder() throws {
        let path = OfflineStoreTests.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let id = UUID()
        let messages = (1...3).map { OfflineStoreTests.message($0, in: id) }
        do {
            let store = try OfflineStore(path: path)
            try store.save(
                WindowChanges(
                    conversationId: id, messages: messages, segments: [1...3], version: 3, lastSeq: 3, hasOlder: false,
                    users: [Self.profile("alice", "Alice", version: 5)]))
            try store.save(
                WindowChanges(
                    conversationId: id, messages: [], segments: [1...3], version: 3, lastSeq: 3, hasOlder: false,
                    users: [Self.profile("alice", "Stale Alice", version: 4)]))
        }
        let store = try OfflineStore(path: path)
        let window = try #require(try store.openWindow(of: id))
        #expect(window.users["alice"]?.displayName == "Alice", "an older version does not replace a newer")
        #expect(window.page.users == window.users, "the page read from the window names its users")
        try store.save(
            WindowChanges(
                conversationId: id, messages: [], segments: [1...3], version: 3, lastSeq: 3, hasOlder: false,
                users: [Self.profile("alice", "Alice Liddell", version: 6)]))
        #expect(try store.openWindow(of: id)?.users["alice"]?.displayName == "Alice Liddell")
        try store.forget(id)
        try store.save(
            WindowChanges(conversationId: id, messages: messages, segments: [1...3], version: 3, lastSeq: 3, hasOlder: false))
        #expect(try store.openWindow(of: id)?.users.isEmpty == true, "forgetting a window forgets its profiles")
    }

    @Test func theOfflineStoreKeepsTheListsProfiles() throws {
        let store = try OfflineStore.inMemory()
        let row = Conversation(
            id: UUID(), title: nil, createdBy: "alice", createdAt: Date(timeIntervalSince1970: 1_800_000_000), lastSeq: 0,
            members: ["alice", "bob"])
        try store.saveInbox(
            [row], users: ProfileSet([Self.profile("alice", "Alice", version: 2), Self.profile("carol", "Carol", version: 1)]))
        #expect(try store.inboxUsers()["alice"]?.displayName == "Alice")
        try store.saveInbox([row], users: ProfileSet([Self.profile("alice", "Stale", version: 1)]))
        #expect(try store.inboxUsers()["alice"]?.displayName == "Alice", "an older version does not replace a newer")
        #expect(try store.inboxUsers()["carol"] == nil, "a user the rows no longer name goes")
        try store.saveInbox([row])
        #expect(try store.inboxUsers().count == 1, "rows saved without profiles leave them")
        #expect(try store.inboxRows() == [row])
    }

    // MARK: Against a server

    /// A conversation of alice and bob with three messages of alice's,
    /// alice named "Alice Liddell".
    static func aliceAndBob(_ cluster: LiveCluster) async throws -> (alice: ScrollbackClient, bob: ScrollbackClient, id: UUID) {
        let alice = ConversationFeedTests.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
        let bob = ConversationFeedTests.client(cluster, "bob", baseURL: cluster.instances[0].baseURL)
        let id = try await cluster.conversation("alice", members: ["bob"])
        let named = try await alice.updateProfile(displayName: .set("Alice Liddell"))
        #expect(named.displayName == "Alice Liddell")
        try await cluster.send(3, to: id, as: "alice")
        return (alice, bob, id)
    }

    @Test func theKitsCallsReadAndSearchProfilesAndFillTheCache() async throws {
        try await LiveCluster.run { cluster in
            let (alice, bob, _) = try await Self.aliceAndBob(cluster)
            #expect(alice.profiles["alice"]?.displayName == "Alice Liddell", "the caller's own update is cached")
            #expect(try await alice.me().displayName == "Alice Liddell")
            #expect(bob.profiles["alice"] == nil)
            #expect(try await bob.user("alice").displayName == "Alice Liddell")
            #expect(bob.profiles["alice"]?.displayName == "Alice Liddell")
            #expect(try await bob.users(["alice", "stranger", "bob"]).map(\.id) == ["alice", "bob"])
            await #expect(throws: ScrollbackError.self) { try await bob.user("stranger") }
            let first = try await bob.searchUsers("lid", limit: 1)
            #expect(first.users.map(\.id) == ["alice"])
            if let cursor = first.nextCursor {
                #expect(try await bob.searchUsers("lid", limit: 1, cursor: cursor).users.isEmpty)
            }
            let named = try #require(alice.profiles["alice"]?.version)
            let cleared = try await alice.updateProfile(displayName: .cleared)
            #expect(cleared.displayName == nil && cleared.version > named)
            #expect(alice.profiles["alice"]?.displayName == nil, "the newer version replaced the named one")
        }
    }

    /// The kit uploads an avatar and a conversation image and loads both;
    /// a file that is no picture is refused with the server's reason.
    @Test func theKitUploadsAndLoadsAvatarsAndConversationImages() async throws {
        try await LiveCluster.run { cluster in
            let (alice, bob, id) = try await Self.aliceAndBob(cluster)
            var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
            png += [0, 0, 0, 40, 0, 0, 0, 30, 8, 6, 0, 0, 0, 0, 0, 0, 0] + Array(repeating: 7, count: 64)
            let profile = try await alice.uploadAvatar(Data(png), blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj")
            let avatar = try #require(profile.avatar)
            #expect(avatar.width == 40 && avatar.height == 30 && avatar.url.hasPrefix("/v1/users/alice/avatar?v="))
            #expect(alice.profiles["alice"]?.avatar == avatar, "the caller's own upload is cached")
            let seen = try #require(try await bob.user("alice").avatar)
            #expect(Array(try await bob.picture(seen)) == png)

            let conversation = try await alice.setConversationImage(Data(png), in: id)
            let image = try #require(conversation.image)
            #expect(Array(try await bob.picture(image)) == png)
            do {
                try await alice.uploadAvatar(Data("not a picture".utf8))
                Issue.record("a text file was taken as an avatar")
            } catch let error as ScrollbackError {
                #expect(error.code == .invalidImage)
            }
            #expect(try await alice.removeConversationImage(in: id).image == nil)
            await #expect(throws: ScrollbackError.self) { try await bob.picture(image) }
        }
    }

    @Test func aRenameReachesTheRowsOfBothModels() async throws {
        try await LiveCluster.run { cluster in
            let (alice, bob, id) = try await Self.aliceAndBob(cluster)
            let conversation = await ConversationModel(feed: ConversationFeed(client: bob, conversation: id, userId: "bob"))
            let inbox = await InboxModel(feed: bob.inboxFeed(), userId: "bob")
            await conversation.start()
            await inbox.start()
            try await until("both models name alice from the page and the list") {
                await MainActor.run {
                    conversation.connection == .live && inbox.isLive && conversation.items.count == 3
                        && Self.named(conversation, "Alice Liddell") && Self.peerNamed(inbox, "Alice Liddell")
                        && inbox.conversations.first.flatMap { inbox.lastSender(of: $0) }?.id == "alice"
                }
            }
            let before = try #require(bob.profiles["alice"]?.version)

            let renamed = try await alice.updateProfile(displayName: .set("Alice L."))
            try await until("user_updated renames alice on bob's rows") {
                await MainActor.run { Self.named(conversation, "Alice L.") && Self.peerNamed(inbox, "Alice L.") }
            }
            #expect(bob.profiles["alice"]?.version == renamed.version && renamed.version > before)
            #expect(
                await MainActor.run { conversation.lastDiff.updated == Array(conversation.items.indices) },
                "alice's rows are listed as updated")
            #expect(
                await MainActor.run {
                    inbox.profiles["alice"]?.displayName == "Alice L."
                        && inbox.conversations.first.flatMap { inbox.lastSender(of: $0) }?.displayName == "Alice L."
                })

            // A page read later cannot bring the older name back.
            bob.profiles.learn([UserProfile(id: "alice", displayName: "Alice Liddell", version: before)])
            #expect(bob.profiles["alice"]?.displayName == "Alice L.")
            #expect(await MainActor.run { Self.named(conversation, "Alice L.") })
            await conversation.stop()
            await inbox.stop()
        }
    }

    /// Every row of the model shows its sender as `name`.
    @MainActor static func named(_ model: ConversationModel, _ name: String) -> Bool {
        !model.items.isEmpty && model.items.allSatisfy { model.sender(of: $0)?.displayName == name }
    }

    /// The first row of the list shows its one-to-one peer as `name`.
    @MainActor static func peerNamed(_ model: InboxModel, _ name: String) -> Bool {
        model.conversations.first.flatMap { model.peer(of: $0) }?.displayName == name
    }

    @Test func anAppOpenedOfflineNamesTheUsersItKept() async throws {
        let path = OfflineStoreTests.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try OfflineStore(path: path)
        let id = try await Self.fillStore(store)

        // A new launch (a new client, its cache empty), the server unreachable.
        let offline = ScrollbackClient(
            baseURL: "http://127.0.0.1:\(OfflineFeedTests.nowhere)",
            retry: RetryPolicy(maxAttempts: 1, initialDelay: .milliseconds(50), maxDelay: .milliseconds(100)),
            token: { "unused" })
        #expect(offline.profiles["alice"] == nil)
        let conversation = await ConversationModel(
            feed: ConversationFeed(client: offline, conversation: id, userId: "bob", storage: store))
        let inbox = await InboxModel(feed: offline.inboxFeed(storage: store), userId: "bob")
        await conversation.start()
        await inbox.start()
        try await until("the kept rows named offline") {
            await MainActor.run {
                conversation.items.count == 3 && Self.named(conversation, "Alice Liddell")
                    && Self.peerNamed(inbox, "Alice Liddell")
            }
        }
        #expect(offline.profiles["alice"]?.displayName == "Alice Liddell")
        await conversation.stop()
        await inbox.stop()
    }

    /// Bob's feeds, online, write the window and the list to `store`.
    static func fillStore(_ store: OfflineStore) async throws -> UUID {
        let found = NIOLockedValueBox<UUID?>(nil)
        try await LiveCluster.run { cluster in
            let (_, bob, id) = try await Self.aliceAndBob(cluster)
            found.withLockedValue { $0 = id }
            let feed = ConversationFeed(client: bob, conversation: id, userId: "bob", storage: store)
            let inbox = bob.inboxFeed(storage: store)
            feed.start()
            inbox.start()
            try await until("the window and the list kept with alice's profile") {
                try store.openWindow(of: id)?.users["alice"]?.displayName == "Alice Liddell"
                    && store.inboxUsers()["alice"]?.displayName == "Alice Liddell" && store.inboxRows().count == 1
            }
            feed.stop()
            inbox.stop()
        }
        return try #require(found.withLockedValue { $0 })
    }
}
