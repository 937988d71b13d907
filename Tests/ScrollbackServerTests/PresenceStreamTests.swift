import Foundation
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Presence live, on real instances: a member subscribed to a conversation
/// hears when another member comes online on any instance, goes offline,
/// hides, or is lost with a killed instance; a user who shares no
/// conversation hears nothing of it.
///
/// The feed's channel is the database's, shared by the tests running at
/// once in their own schemas: each test's users have names of their own,
/// so that another test's notifications never name them.
@Suite struct PresenceStreamTests {
    /// `name` with a suffix of its own.
    static func unique(_ name: String) -> String { "\(name)-\(UUID().uuidString.prefix(8).lowercased())" }

    /// Beats every 200 ms, so a killed instance's users go offline within a second.
    static var quickBeats: LiveOptions {
        var options = LiveOptions()
        options.presenceHeartbeat = .milliseconds(200)
        return options
    }

    /// The next `presence` frame about `user` on `socket`.
    static func presence(of user: String, on socket: StreamClient) async throws -> MemberPresence {
        let frame = try await socket.next {
            if case .presence(_, let presence) = $0 { presence.userId == user } else { false }
        }
        guard case .presence(_, let presence) = frame else { throw StreamClientError.noFrame }
        return presence
    }

    /// The `presence` frames among `frames`, of `user` only when given (a
    /// subscriber may hear of its own socket too).
    static func presenceFrames(in frames: [ServerFrame], of user: String? = nil) -> [MemberPresence] {
        frames.compactMap { frame in
            guard case .presence(_, let presence) = frame, user.map({ $0 == presence.userId }) ?? true else { return nil }
            return presence
        }
    }

    @Test func membersHearOthersComeAndGoOnAnyInstanceAndStrangersHearNothing() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let (aliceName, bobName) = (Self.unique("alice"), Self.unique("bob"))
            let (malloryName, carolName) = (Self.unique("mallory"), Self.unique("carol"))
            let id = try await cluster.conversation(aliceName, members: [bobName])
            let elsewhere = try await cluster.conversation(malloryName, members: [carolName])
            let alice = try await cluster.connect(aliceName, to: 0)
            defer { alice.close() }
            try await cluster.subscribe(alice, to: id, presence: true)
            // Mallory shares no conversation with bob, and watches her own.
            let mallory = try await cluster.connect(malloryName, to: 0)
            defer { mallory.close() }
            try await cluster.subscribe(mallory, to: elsewhere, presence: true)

            // Bob's first socket is on the other instance.
            let bob = try await cluster.connect(bobName, to: 1)
            let online = try await Self.presence(of: bobName, on: alice)
            #expect(online == MemberPresence(userId: bobName, online: true, lastSeenAt: nil))

            // A second socket changes nothing anyone sees: no frame.
            let second = try await cluster.connect(bobName, to: 0)
            #expect(Self.presenceFrames(in: await alice.drain(for: .seconds(2)), of: bobName).isEmpty)

            // Offline only once the last one closes, with when.
            second.close()
            #expect(Self.presenceFrames(in: await alice.drain(for: .seconds(2)), of: bobName).isEmpty)
            bob.close()
            let offline = try await Self.presence(of: bobName, on: alice)
            #expect(!offline.online)
            let seen = try #require(offline.lastSeenAt)
            #expect(abs(seen.timeIntervalSinceNow) < 60)

            // The frame says what the HTTP read says.
            let read = try #require(try await cluster.store.presence(of: id, for: UserID(rawValue: aliceName)))
            let stored = try #require(read.first { $0.userId == bobName })
            #expect(!stored.online)
            // The wire has whole milliseconds.
            #expect(abs(try #require(stored.lastSeenAt).timeIntervalSince(seen)) < 0.001)

            // Nothing of bob ever reached mallory.
            let strangers = await mallory.drain(for: .milliseconds(500))
            #expect(!strangers.contains { "\($0)".contains(bobName) })

            // Nor can she ask: a subscription with presence to a
            // conversation she is not in is refused like any other, and
            // tells her nothing of its members.
            try mallory.send(.subscribe(conversationId: id, afterSeq: nil, presence: true))
            let refused = try await mallory.next { if case .error = $0 { true } else { false } }
            #expect(
                refused
                    == .error(
                        code: .conversationNotFound, message: APIError.conversationNotFound.message,
                        ref: id.uuidString.lowercased()))
            try await cluster.connect(bobName, to: 1).close()
            let afterRefusal = await mallory.drain(for: .seconds(1))
            #expect(!afterRefusal.contains { "\($0)".contains(bobName) || "\($0)".contains(aliceName) })
        }
    }

    @Test func hidingLooksLikeGoingOfflineAndShowingLikeComingBack() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let (aliceName, bobName) = (Self.unique("alice"), Self.unique("bob"))
            let id = try await cluster.conversation(aliceName, members: [bobName])
            let alice = try await cluster.connect(aliceName, to: 0)
            defer { alice.close() }
            try await cluster.subscribe(alice, to: id, presence: true)
            let bob = try await cluster.connect(bobName, to: 1)
            defer { bob.close() }
            #expect(try await Self.presence(of: bobName, on: alice).online)

            try await cluster.store.setPresenceHidden(true, for: UserID(rawValue: bobName))
            #expect(try await Self.presence(of: bobName, on: alice) == MemberPresence(userId: bobName, online: false, lastSeenAt: nil))
            // Hidden, a new socket tells nobody anything.
            let again = try await cluster.connect(bobName, to: 0)
            defer { again.close() }
            #expect(Self.presenceFrames(in: await alice.drain(for: .seconds(2)), of: bobName).isEmpty)

            try await cluster.store.setPresenceHidden(false, for: UserID(rawValue: bobName))
            #expect(try await Self.presence(of: bobName, on: alice) == MemberPresence(userId: bobName, online: true, lastSeenAt: nil))
        }
    }

    /// An instance that stops beating (killed: it never removes its rows)
    /// takes its users offline at its expiry, and the members who watch
    /// are told, with the time of its last beat.
    @Test func aKilledInstancesUsersGoOfflineForThoseWhoWatch() async throws {
        try await LiveCluster.run(instances: 2, options: Self.quickBeats) { cluster in
            let (aliceName, carolName) = (Self.unique("alice"), Self.unique("carol"))
            let id = try await cluster.conversation(aliceName, members: [carolName])
            let alice = try await cluster.connect(aliceName, to: 0)
            defer { alice.close() }
            try await cluster.subscribe(alice, to: id, presence: true)

            // Carol's socket is on an instance that writes once, then dies
            // (her socket's authentication recorded her, as any does).
            try await cluster.store.ensureUser(UserID(rawValue: carolName))
            let killed = UUID()
            try await cluster.store.presenceWrite(killed, ttl: .seconds(1), sockets: [(carolName, 1)], replacingAll: true)
            let beatAt = Date()
            #expect(try await Self.presence(of: carolName, on: alice).online)

            let offline = try await Self.presence(of: carolName, on: alice)
            #expect(!offline.online)
            let seen = try #require(offline.lastSeenAt)
            #expect(abs(seen.timeIntervalSince(beatAt)) < 5)
            #expect(Date().timeIntervalSince(beatAt) >= 0.9, "offline before the instance expired")
        }
    }

    /// Every subscriber that asked for presence, on any instance, is told;
    /// one that did not ask is not.
    @Test func everySubscriberOfTheConversationIsTold() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let (aliceName, bobName, daveName) = (Self.unique("alice"), Self.unique("bob"), Self.unique("dave"))
            let erinName = Self.unique("erin")
            let id = try await cluster.conversation(aliceName, members: [bobName, daveName, erinName])
            // Erin did not ask for presence.
            let erin = try await cluster.connect(erinName, to: 1)
            defer { erin.close() }
            try await cluster.subscribe(erin, to: id)
            let alice = try await cluster.connect(aliceName, to: 0)
            defer { alice.close() }
            let dave = try await cluster.connect(daveName, to: 1)
            defer { dave.close() }
            try await cluster.subscribe(alice, to: id, presence: true)
            try await cluster.subscribe(dave, to: id, presence: true)
            let bob = try await cluster.connect(bobName, to: 0)
            #expect(try await Self.presence(of: bobName, on: alice).online)
            #expect(try await Self.presence(of: bobName, on: dave).online)
            bob.close()
            #expect(try await !Self.presence(of: bobName, on: alice).online)
            #expect(try await !Self.presence(of: bobName, on: dave).online)
            #expect(Self.presenceFrames(in: await erin.drain(for: .milliseconds(500))).isEmpty)
        }
    }
}
