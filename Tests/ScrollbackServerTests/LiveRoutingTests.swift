import Foundation
import NIOCore
import PropertyBased
import ScrollbackModels
@testable import ScrollbackServer
@testable import ScrollbackStore
import Testing

/// The routing of live frames as a value: each rule of `LiveRouting` on its
/// own, then random interleavings of everything that can happen to it.
@Suite struct LiveRoutingTests {
    static let conversation = UUID(uuidString: "0A1B2C3D-0000-4000-8000-000000000001")!
    static let alice: UserID = "alice"
    static let bob: UserID = "bob"
    static let carol: UserID = "carol"
    let start = ContinuousClock.now

    // MARK: Pending subscriptions and their snapshot

    @Test func aPendingSubscriberGetsItsSnapshotThenOnlyTheNewerBufferedMessages() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.alice]))
        let marked = routing.handle(.event(.changed(conversation: c, seq: 4, version: 4)), at: start)
        #expect(marked.reads == [c])
        let request = try #require(routing.takeReads().first)
        #expect(request.afterSeq == 3)
        #expect(request.users == [Self.alice])

        routing.register(socket: 2, user: Self.bob, to: c)
        let fannedOut = routing.apply(
            Self.read(lastSeq: 5, version: 5, members: [Self.alice], added: [Self.message(4), Self.message(5)]),
            for: request)
        #expect(fannedOut.frames(to: 1) == ["message 4", "message 5"])
        #expect(fannedOut.frames(to: 2).isEmpty, "pending: buffered")

        // Its snapshot already has 4 (and 3, after its `after_seq` of 2): only 5 follows.
        let activated = routing.activate(
            socket: 2, in: c,
            snapshot: Self.read(lastSeq: 4, version: 4, members: [Self.bob], added: [Self.message(3), Self.message(4)]))
        #expect(activated.frames(to: 2) == ["subscribed 4 v4", "message 3", "message 4", "message 5"])
        #expect(activated.frames(to: 1).isEmpty)
    }

    @Test func aSnapshotOverTheBacklogLimitSaysResyncInsteadOfTheBacklog() {
        var routing = LiveRouting()
        routing.register(socket: 1, user: Self.alice, to: Self.conversation)
        var snapshot = Self.read(lastSeq: 9, version: 9, members: [Self.alice], added: [Self.message(1)])
        snapshot.truncated = true
        let effects = routing.activate(socket: 1, in: Self.conversation, snapshot: snapshot)
        #expect(effects.frames(to: 1) == ["subscribed 9 v9", "resync 9"])
    }

    @Test func changesReachOnlySubscribersWhoseSnapshotIsOlderThanThem() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 3, version: 5, members: [Self.alice]))
        _ = routing.handle(.event(.changed(conversation: c, seq: 1, version: 8)), at: start)
        let request = try #require(routing.takeReads().first)
        routing.register(socket: 2, user: Self.bob, to: c)
        let read = Self.read(
            lastSeq: 3, version: 8, members: [Self.alice],
            changed: [Self.message(1, version: 6), Self.message(2, version: 8)])
        #expect(routing.apply(read, for: request).frames(to: 1) == ["updated 1 v6", "updated 2 v8"])
        let activated = routing.activate(
            socket: 2, in: c, snapshot: Self.read(lastSeq: 3, version: 7, members: [Self.bob]))
        #expect(activated.frames(to: 2) == ["subscribed 3 v7", "updated 2 v8"])
        // A notification at or below what the hub has read asks for nothing.
        #expect(routing.handle(.event(.changed(conversation: c, seq: 2, version: 8)), at: start).reads.isEmpty)
    }

    /// The hub's reads lag behind a newer subscriber's snapshot, and a
    /// message in between is edited after that snapshot: the read brings it
    /// as a new message, which the subscriber already has, so it gets the
    /// edit as an update.
    @Test func anEditOfAMessageInANewerSnapshotReachesItsSubscriberAsAnUpdate() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.alice]))
        _ = routing.handle(.event(.changed(conversation: c, seq: 5, version: 5)), at: start)
        let request = try #require(routing.takeReads().first)
        routing.live(socket: 2, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 5, version: 5, members: [Self.bob]))
        let read = Self.read(
            lastSeq: 5, version: 6, members: [Self.alice], added: [Self.message(4), Self.message(5, version: 6)])
        let effects = routing.apply(read, for: request)
        #expect(effects.frames(to: 1) == ["message 4", "message 5 v6"])
        #expect(effects.frames(to: 2) == ["updated 5 v6"])
    }

    /// Two subscriptions wait for their snapshots while nothing has been
    /// read yet; the newer snapshot goes live first and sets where the
    /// reads start. The older one must not skip what lies between, and a
    /// read from further on, already under way, must not move past it.
    @Test func anOlderSnapshotActivatedAfterANewerOneGetsWhatLiesBetweenInOrder() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.register(socket: 1, user: Self.alice, to: c)
        routing.register(socket: 2, user: Self.bob, to: c)
        // Bob's snapshot was read at 1, then 2 to 5 were sent, then Alice's was read.
        for seq in 2...5 {
            _ = routing.handle(.event(.changed(conversation: c, seq: Int64(seq), version: Int64(seq))), at: start)
        }
        let alice = routing.activate(
            socket: 1, in: c, snapshot: Self.read(lastSeq: 5, version: 5, members: [Self.alice]))
        #expect(alice.reads == [c], "notified before there was a position: read now")
        let request = try #require(routing.takeReads().first)
        #expect(request.afterSeq == 5)
        let sixth = routing.apply(
            Self.read(lastSeq: 6, version: 6, members: [Self.alice, Self.bob], added: [Self.message(6)]), for: request)
        #expect(sixth.frames(to: 1) == ["message 6"])

        _ = routing.handle(.event(.changed(conversation: c, seq: 7, version: 7)), at: start)
        let underWay = try #require(routing.takeReads().first)

        let bob = routing.activate(socket: 2, in: c, snapshot: Self.read(lastSeq: 1, version: 1, members: [Self.bob]))
        #expect(bob.frames(to: 2) == ["subscribed 1 v1"], "not 6 ahead of 2 to 5")
        #expect(bob.reads == [c], "the reads start over from what bob has")
        let seventh = Self.read(lastSeq: 7, version: 7, members: [Self.alice, Self.bob], added: [Self.message(7)])
        #expect(routing.apply(seventh, for: underWay).sends.isEmpty, "from 6: bob would miss 2 to 6")
        let again = try #require(routing.takeReads().first)
        #expect(again.afterSeq == 1 && again.afterVersion == 1)
        let between = routing.apply(
            Self.read(
                lastSeq: 7, version: 7, members: [Self.alice, Self.bob], added: (2...7).map { Self.message($0) }),
            for: again)
        #expect(between.frames(to: 2) == (2...7).map { "message \($0)" })
        #expect(between.frames(to: 1) == ["message 7"], "alice had up to 6")
    }

    // MARK: Membership

    @Test func aRemovedMemberLosesEverySubscriptionPendingOrLiveAndNobodyElseDoes() {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.alice]))
        routing.register(socket: 2, user: Self.alice, to: c)
        routing.live(socket: 3, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.bob]))
        let removed = routing.handle(.event(.memberRemoved(conversation: c, user: Self.alice)), at: start)
        #expect(removed.frames(to: 1) == ["member_removed"])
        #expect(removed.frames(to: 2) == ["member_removed"])
        #expect(removed.frames(to: 3).isEmpty)
        #expect(Set(removed.ended) == [.init(socket: 1, conversation: c), .init(socket: 2, conversation: c)])
        #expect(routing.conversations(of: 1).isEmpty && routing.conversations(of: 2).isEmpty)
        #expect(routing.conversations(of: 3) == [c])
        // Its snapshot arriving late activates nothing; later frames go to bob only.
        #expect(
            routing.activate(socket: 2, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [])).sends.isEmpty)
        let marker = routing.handle(.event(.read(conversation: c, user: Self.bob, seq: 0)), at: start)
        #expect(marker.sends.map(\.socket) == [3])
    }

    @Test func subscribersOlderThanAReadThatAreNoLongerMembersInItAreRemoved() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.alice]))
        _ = routing.handle(.event(.changed(conversation: c, seq: 4, version: 4)), at: start)
        let request = try #require(routing.takeReads().first)
        // Bob subscribes after the read was taken: the read did not ask about him.
        routing.live(socket: 2, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 4, version: 4, members: [Self.bob]))
        let effects = routing.apply(
            Self.read(lastSeq: 4, version: 4, members: [], added: [Self.message(4)]), for: request)
        #expect(effects.frames(to: 1) == ["member_removed"])
        #expect(effects.frames(to: 2).isEmpty)
        #expect(effects.ended == [.init(socket: 1, conversation: c)])
        #expect(routing.conversations(of: 2) == [c])
    }

    /// The notification of Alice's removal was lost. A read taken while her
    /// subscription was pending, but of a newer snapshot than hers, says
    /// she left: it counts even though she went live after it was taken.
    @Test func aReadNewerThanASnapshotDecidesMembershipThoughTakenBeforeItWentLive() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(socket: 1, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.bob]))
        routing.register(socket: 2, user: Self.alice, to: c)
        _ = routing.handle(.event(.changed(conversation: c, seq: 4, version: 4)), at: start)
        let request = try #require(routing.takeReads().first)
        #expect(Set(request.users) == [Self.alice, Self.bob])
        _ = routing.activate(socket: 2, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.alice]))
        let effects = routing.apply(
            Self.read(lastSeq: 4, version: 4, members: [Self.bob], added: [Self.message(4)]), for: request)
        #expect(effects.frames(to: 2) == ["member_removed"])
        #expect(effects.frames(to: 1) == ["message 4"])
    }

    /// The same, with the read applied while she is still pending: her
    /// activation ends the subscription instead of starting it. A snapshot
    /// newer than the read (she was added again) goes live.
    @Test func aBufferedReadNewerThanTheSnapshotThatSaysTheUserLeftEndsTheSubscription() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(socket: 1, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.bob]))
        routing.register(socket: 2, user: Self.alice, to: c)
        routing.register(socket: 3, user: Self.alice, to: c)
        _ = routing.handle(.event(.changed(conversation: c, seq: 4, version: 4)), at: start)
        let request = try #require(routing.takeReads().first)
        let fannedOut = routing.apply(
            Self.read(lastSeq: 4, version: 4, members: [Self.bob], added: [Self.message(4)]), for: request)
        #expect(
            fannedOut.frames(to: 2).isEmpty && fannedOut.frames(to: 3).isEmpty, "pending: they decide on activation")
        let older = routing.activate(
            socket: 2, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.alice]))
        #expect(older.frames(to: 2) == ["member_removed"])
        #expect(older.ended == [.init(socket: 2, conversation: c)])
        let newer = routing.activate(
            socket: 3, in: c, snapshot: Self.read(lastSeq: 5, version: 5, members: [Self.alice]))
        #expect(newer.frames(to: 3) == ["subscribed 5 v5"])
        #expect(routing.conversations(of: 3) == [c])
    }

    /// A read of the very version of a snapshot cannot tell whether the user
    /// left before or after it: it asks for another read, which can.
    @Test func aReadOfTheSnapshotsOwnVersionAsksForAnotherToDecideMembership() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(socket: 1, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.bob]))
        routing.register(socket: 2, user: Self.alice, to: c)
        _ = routing.handle(.listening, at: start)
        let request = try #require(routing.takeReads().first)
        _ = routing.activate(socket: 2, in: c, snapshot: Self.read(lastSeq: 3, version: 3, members: [Self.alice]))
        let undecided = routing.apply(Self.read(lastSeq: 3, version: 3, members: [Self.bob]), for: request)
        #expect(undecided.sends.isEmpty)
        #expect(undecided.reads == [c])
        let next = try #require(routing.takeReads().first)
        let decided = routing.apply(Self.read(lastSeq: 3, version: 3, members: [Self.bob]), for: next)
        #expect(decided.frames(to: 2) == ["member_removed"])
        #expect(decided.frames(to: 1).isEmpty)
    }

    @Test func aConversationThatIsGoneEndsEverySubscription() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 1, version: 1, members: [Self.alice]))
        _ = routing.handle(.event(.changed(conversation: c, seq: 2, version: 2)), at: start)
        let request = try #require(routing.takeReads().first)
        routing.register(socket: 2, user: Self.bob, to: c)
        let effects = routing.apply(nil, for: request)
        #expect(effects.frames(to: 1) == ["member_removed"] && effects.frames(to: 2) == ["member_removed"])
        #expect(routing.subscriptionCount == 0 && routing.conversationCount == 0)
    }

    // MARK: Read markers and typing

    @Test func readMarkersReachLiveSubscribersAtOnceAndPendingOnesAfterTheirSnapshot() {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 2, version: 2, members: [Self.alice]))
        routing.register(socket: 2, user: Self.bob, to: c)
        let marker = routing.handle(.event(.read(conversation: c, user: Self.alice, seq: 2)), at: start)
        #expect(marker.frames(to: 1) == ["read alice 2"])
        #expect(marker.frames(to: 2).isEmpty)
        let activated = routing.activate(
            socket: 2, in: c, snapshot: Self.read(lastSeq: 2, version: 2, members: [Self.bob]))
        #expect(activated.frames(to: 2) == ["subscribed 2 v2", "read alice 2"])
    }

    @Test func typingIsThrottledPerConversationAndUserAndNeverEchoed() {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.alice]))
        routing.live(socket: 2, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.bob]))
        routing.register(socket: 3, user: Self.carol, to: c)
        func typing(_ user: UserID, after seconds: Double) -> LiveRouting.Effects {
            routing.handle(.event(.typing(conversation: c, user: user)), at: start + .seconds(seconds))
        }
        let first = typing(Self.alice, after: 0)
        #expect(first.sends.map(\.socket) == [2], "not to alice herself, not to a pending subscriber")
        #expect(first.frames(to: 2) == ["typing alice"])
        #expect(typing(Self.alice, after: 1.9).sends.isEmpty, "throttled")
        #expect(typing(Self.bob, after: 1.9).frames(to: 1) == ["typing bob"], "another user's own interval")
        #expect(typing(Self.alice, after: 2).frames(to: 2) == ["typing alice"], "the interval is over")
    }

    // MARK: The listening connection

    @Test func lostOnlyStopsListeningAndListeningAgainReadsEveryFeed() {
        var routing = LiveRouting()
        let c = Self.conversation
        let other = UUID()
        #expect(!routing.isListening)
        #expect(routing.handle(.listening, at: start).reads.isEmpty, "no feed yet")
        #expect(routing.isListening)
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 1, version: 1, members: [Self.alice]))
        routing.register(socket: 2, user: Self.alice, to: other)
        let lost = routing.handle(.lost, at: start)
        #expect(!routing.isListening)
        #expect(lost.sends.isEmpty && lost.reads.isEmpty)
        let listening = routing.handle(.listening, at: start)
        #expect(routing.isListening)
        #expect(listening.reads == [c], "a feed with a position is read now")
        // The pending one has no position yet: it is read once its snapshot gives one.
        let activated = routing.activate(
            socket: 2, in: other, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.alice]))
        #expect(activated.reads == [other])
        #expect(Set(routing.takeReads().map(\.conversation)) == [c, other])
        #expect(routing.takeReads().isEmpty, "taken once")
    }

    @Test func aNotificationBeforeThereIsAPositionIsReadAfterTheFirstSnapshot() {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.register(socket: 1, user: Self.alice, to: c)
        #expect(routing.handle(.event(.changed(conversation: c, seq: 1, version: 1)), at: start).reads.isEmpty)
        #expect(routing.takeReads().isEmpty)
        let activated = routing.activate(
            socket: 1, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.alice]))
        #expect(activated.reads == [c])
        #expect(routing.takeReads().map(\.afterSeq) == [0])
    }

    // MARK: Reads

    @Test func aTruncatedReadSaysResyncAndTheNextReadStartsAfterIt() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 1, version: 1, members: [Self.alice]))
        _ = routing.handle(.event(.changed(conversation: c, seq: 2, version: 2)), at: start)
        var truncated = Self.read(lastSeq: 9, version: 9, members: [Self.alice], added: [Self.message(2)])
        truncated.truncated = true
        let request = try #require(routing.takeReads().first)
        #expect(routing.apply(truncated, for: request).frames(to: 1) == ["resync 9"])
        _ = routing.handle(.event(.changed(conversation: c, seq: 10, version: 10)), at: start)
        let next = try #require(routing.takeReads().first)
        #expect(next.afterSeq == 9 && next.afterVersion == 9)
        let effects = routing.apply(
            Self.read(lastSeq: 10, version: 10, members: [Self.alice], added: [Self.message(10)]), for: next)
        #expect(effects.frames(to: 1) == ["message 10"])
    }

    @Test func aReadFromAPositionThatMovedOnIsDroppedAndAFailedOneIsRetried() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 1, version: 1, members: [Self.alice]))
        _ = routing.handle(.event(.changed(conversation: c, seq: 2, version: 2)), at: start)
        let request = try #require(routing.takeReads().first)
        #expect(routing.retry(request).reads == [c])
        let again = try #require(routing.takeReads().first)
        let read = Self.read(lastSeq: 2, version: 2, members: [Self.alice], added: [Self.message(2)])
        #expect(routing.apply(read, for: again).frames(to: 1) == ["message 2"])
        #expect(routing.apply(read, for: request).sends.isEmpty, "stale: the position is 2 now")
    }

    /// A frame goes to every subscriber as the same bytes: encoded once
    /// per event, not once per socket.
    @Test func aFrameIsEncodedOnceForAllItsSubscribers() throws {
        var routing = LiveRouting()
        let c = Self.conversation
        for socket in 1...3 {
            routing.live(
                socket: socket, user: Self.alice, in: c,
                snapshot: Self.read(lastSeq: 1, version: 1, members: [Self.alice]))
        }
        _ = routing.handle(.event(.changed(conversation: c, seq: 2, version: 2)), at: start)
        let request = try #require(routing.takeReads().first)
        let effects = routing.apply(
            Self.read(lastSeq: 2, version: 2, members: [Self.alice], added: [Self.message(2)]), for: request)
        let addresses = Set(
            effects.sends.map { $0.frame.buffer.withUnsafeReadableBytes { Int(bitPattern: $0.baseAddress) } })
        #expect(effects.sends.count == 3 && addresses.count == 1)
    }

    // MARK: Subscriptions kept in one place

    @Test func unsubscribeAndDisconnectEndSubscriptionsAndTheCountsFollow() {
        var routing = LiveRouting()
        let c = Self.conversation
        let other = UUID()
        routing.live(
            socket: 1, user: Self.alice, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.alice]))
        routing.register(socket: 1, user: Self.alice, to: other)
        routing.live(socket: 2, user: Self.bob, in: c, snapshot: Self.read(lastSeq: 0, version: 0, members: [Self.bob]))
        #expect(routing.conversations(of: 1) == [c, other])
        #expect(routing.subscriptionCount == 3 && routing.conversationCount == 2)
        routing.unsubscribe(socket: 2, from: c)
        #expect(routing.conversations(of: 2).isEmpty && routing.subscriptionCount == 2)
        routing.disconnect(socket: 1)
        #expect(routing.conversations(of: 1).isEmpty)
        #expect(routing.subscriptionCount == 0 && routing.conversationCount == 0)
        #expect(routing.handle(.event(.read(conversation: c, user: Self.bob, seq: 0)), at: start).sends.isEmpty)
    }

    // MARK: Random interleavings

    /// Subscriptions (with random `after_seq` and snapshots taken at random
    /// moments), unsubscriptions, disconnects, messages, edits, removals,
    /// read markers, typing, notifications delayed or lost with the
    /// listening connection, reads taken, failed and applied late, all
    /// interleaved at random. After every step each socket has received, per
    /// conversation it is subscribed to, every message after its snapshot
    /// once, in seq order, with no gap, and nothing of a conversation it is
    /// not subscribed to; once everything has settled, every live subscriber
    /// has every message, every edit and every read marker.
    @Test(arguments: 0..<50)
    func anyInterleavingDeliversEveryMessageOnceInOrder(seed: UInt64) {
        var simulation = Simulation(seed: seed)
        for step in 0..<300 {
            simulation.step(step)
            guard simulation.problems.isEmpty else { break }
        }
        if simulation.problems.isEmpty { simulation.settle(step: 300) }
        #expect(
            simulation.problems.isEmpty,
            "seed \(seed): \(simulation.problems.prefix(3).joined(separator: "; "))\nafter:\n\(simulation.trace.joined(separator: "\n"))"
        )
        #expect(simulation.delivered > 0, "seed \(seed): the run delivered nothing")
    }

    // MARK: Fixtures

    static func message(_ seq: Int64, version: Int64? = nil, in id: UUID = conversation) -> Message {
        Message(
            conversationId: id, seq: seq, sender: "alice", body: "message \(seq)", clientId: nil,
            createdAt: Date(timeIntervalSince1970: 1_795_325_799 + Double(seq)), version: version ?? seq)
    }

    static func read(
        lastSeq: Int64, version: Int64, members: Set<UserID>, added: [Message] = [], changed: [Message] = []
    ) -> FeedRead {
        FeedRead(lastSeq: lastSeq, version: version, members: members, added: added, changed: changed, truncated: false)
    }
}

extension LiveRouting {
    /// Registers and activates in one go, for tests that need a live subscriber.
    fileprivate mutating func live(socket: SocketID, user: UserID, in id: UUID, snapshot: FeedRead) {
        register(socket: socket, user: user, to: id)
        _ = activate(socket: socket, in: id, snapshot: snapshot)
    }
}

extension LiveRouting.Effects {
    /// What `socket` is sent, in order, in a short form.
    fileprivate func frames(to socket: LiveRouting.SocketID) -> [String] {
        sends.filter { $0.socket == socket }.map { describe(decode($0.frame)) }
    }
}

private let decoder = ScrollbackJSON.decoder()

private func decode(_ frame: ServerFrameBytes) -> ServerFrame {
    try! decoder.decode(ServerFrame.self, from: Data(frame.buffer.readableBytesView))
}

private func describe(_ frame: ServerFrame) -> String {
    switch frame {
    case .subscribed(_, let lastSeq, let version): "subscribed \(lastSeq) v\(version)"
    case .message(let message):
        "message \(message.seq)" + (message.version == message.seq ? "" : " v\(message.version)")
    case .messageUpdated(let message): "updated \(message.seq) v\(message.version)"
    case .read(_, let user, let seq): "read \(user) \(seq)"
    case .typing(_, let user): "typing \(user)"
    case .presence(_, let presence): "presence \(presence.userId) \(presence.online)"
    case .memberUpdated(_, let user, let role): "member_updated \(user) \(role.rawValue)"
    case .memberRemoved: "member_removed"
    case .resyncRequired(_, let lastSeq): "resync \(lastSeq)"
    case .ack, .error, .pong, .userUpdated, .inboxSubscribed, .conversationActivity, .memberAdded, .inboxRead,
        .inboxMemberRemoved, .inboxResyncRequired, .conversationUpdated:
        "\(frame)"
    }
}

extension ServerFrame {
    fileprivate var conversation: UUID? {
        switch self {
        case .subscribed(let id, _, _), .read(let id, _, _), .typing(let id, _), .memberRemoved(let id),
            .resyncRequired(let id, _), .presence(let id, _), .memberUpdated(let id, _, _):
            id
        case .message(let message), .messageUpdated(let message): message.conversationId
        case .conversationUpdated(let details, nil): details.conversationId
        case .ack, .error, .pong, .conversationUpdated, .userUpdated, .inboxSubscribed, .conversationActivity, .memberAdded, .inboxRead,
            .inboxMemberRemoved, .inboxResyncRequired:
            nil
        }
    }
}

// MARK: The simulation of the property test

/// The database as the routing's reads see it.
private struct Database {
    struct Conversation {
        var messages: [Message] = []  // `messages[seq - 1]`
        var version: Int64 = 0
        var members: Set<UserID>
        var lastSeq: Int64 { Int64(messages.count) }
    }

    var conversations: [UUID: Conversation]
    /// Small, so reads and snapshots stop short (resync) now and then.
    let limit = 6

    /// `ScrollbackStore.feed` on these tables.
    func feed(of id: UUID, afterSeq: Int64?, afterVersion: Int64, checking users: [UserID]) -> FeedRead {
        let conversation = conversations[id]!
        let after = afterSeq ?? conversation.lastSeq
        let added = conversation.messages.filter { $0.seq > after }
        let changed = conversation.messages.filter { $0.seq <= after && $0.version > afterVersion }
            .sorted { $0.version < $1.version }
        return FeedRead(
            lastSeq: conversation.lastSeq, version: conversation.version,
            members: conversation.members.intersection(users), added: Array(added.prefix(limit)),
            changed: Array(changed.prefix(limit)), truncated: added.count > limit || changed.count > limit)
    }

    mutating func send(in id: UUID, from user: UserID) -> FeedEvent {
        conversations[id]!.version += 1
        let conversation = conversations[id]!
        let message = Message(
            conversationId: id, seq: conversation.lastSeq + 1, sender: user.rawValue, body: "hi", clientId: nil,
            createdAt: Date(timeIntervalSince1970: 1_795_325_799), version: conversation.version)
        conversations[id]!.messages.append(message)
        return .changed(conversation: id, seq: message.seq, version: message.version)
    }

    mutating func edit(in id: UUID, seq: Int64) -> FeedEvent {
        conversations[id]!.version += 1
        let version = conversations[id]!.version
        conversations[id]!.messages[Int(seq) - 1].version = version
        conversations[id]!.messages[Int(seq) - 1].body = "edited at \(version)"
        return .changed(conversation: id, seq: seq, version: version)
    }

    func versions(in id: UUID) -> [Int64: Int64] {
        Dictionary(uniqueKeysWithValues: conversations[id]!.messages.map { ($0.seq, $0.version) })
    }
}

/// One socket and what it has been told, as a client would keep it.
private struct Client {
    var socket: Int
    let user: UserID
    var subscriptions: [UUID: Subscription] = [:] {
        didSet { markersOwed = markersOwed.filter { subscriptions[$0.key] != nil } }
    }
    /// Read markers notified while subscribed (pending or live) and not received yet.
    var markersOwed: [UUID: Int] = [:]

    enum Subscription {
        case registered(afterSeq: Int64?)
        /// The snapshot was read, with every message's version then (what
        /// the client would fetch over HTTP), and is about to be activated.
        case snapshotted(afterSeq: Int64?, FeedRead, versions: [Int64: Int64])
        case live(View)
    }

    struct View {
        /// The seq the next `message` frame must have.
        var next: Int64
        let snapshotVersion: Int64
        /// The newest version the client knows of each message.
        var versions: [Int64: Int64]
    }
}

private struct Simulation {
    let seed: UInt64
    var rng: Xoshiro
    var routing = LiveRouting()
    var database: Database
    let conversationIDs: [UUID]
    let users: [UserID] = ["u0", "u1", "u2", "u3", "u4", "u5"]
    var clients: [Client]
    var nextSocket = 100
    /// Notifications sent and not received yet, in commit order.
    var notifications: [FeedEvent] = []
    var listening = false
    /// Reads taken by the worker, each with its result once performed.
    var reads: [(request: LiveRouting.ReadRequest, result: FeedRead?)] = []
    var now = ContinuousClock.now
    var step = 0
    var problems: [String] = []
    var delivered = 0
    /// The last steps taken, to explain a failure.
    var trace: [String] = []

    init(seed: UInt64) {
        self.seed = seed
        rng = Xoshiro(seed: (seed, 17, 31, 47))
        conversationIDs = (0..<3).map { UUID(uuidString: "00000000-0000-4000-8000-00000000000\($0)")! }
        database = Database(conversations: [:])
        for id in conversationIDs {
            database.conversations[id] = .init(members: Set(users))
        }
        // Two sockets of the same user: typing is not echoed to either.
        clients = (0..<6).map { Client(socket: $0 + 1, user: ["u0", "u1", "u2", "u3", "u4", "u0"][$0]) }
        listening = true
        receive(routing.handle(.listening, at: now))
    }

    mutating func problem(_ text: String) {
        problems.append("step \(step): \(text)")
    }

    mutating func note(_ text: String) {
        trace.append("\(step): \(text)")
        if trace.count > 40 { trace.removeFirst() }
    }

    func name(_ id: UUID) -> String { "c\(conversationIDs.firstIndex(of: id) ?? -1)" }

    mutating func random(_ range: Range<Int>) -> Int { Int.random(in: range, using: &rng) }

    mutating func step(_ step: Int) {
        self.step = step
        now += .milliseconds(random(0..<800))
        let id = conversationIDs[random(0..<conversationIDs.count)]
        let members = database.conversations[id]!.members.sorted()
        let client = random(0..<clients.count)
        switch random(0..<100) {
        case 0..<14 where !members.isEmpty:
            notify(database.send(in: id, from: members[random(0..<members.count)]))
        case 14..<20 where database.conversations[id]!.lastSeq > 0:
            notify(database.edit(in: id, seq: Int64(random(0..<Int(database.conversations[id]!.lastSeq))) + 1))
        case 20..<23 where !members.isEmpty:
            let seq = Int64(random(0..<Int(database.conversations[id]!.lastSeq) + 1))
            notify(.read(conversation: id, user: members[random(0..<members.count)], seq: seq))
        case 23..<26 where !members.isEmpty:
            notify(.typing(conversation: id, user: members[random(0..<members.count)]))
        case 26 where !members.isEmpty:
            let user = members[random(0..<members.count)]
            database.conversations[id]!.members.remove(user)
            notify(.memberRemoved(conversation: id, user: user))
        case 27..<39:
            subscribe(client, to: id)
        case 39..<49:
            snapshotOne()
        case 49..<59:
            activateOne()
        case 59..<61:
            let subscribed = clients[client].subscriptions.keys.sorted { $0.uuidString < $1.uuidString }
            if let subscribed = subscribed.randomElement(using: &rng) {
                note("socket \(clients[client].socket) unsubscribes from \(name(subscribed))")
                routing.unsubscribe(socket: clients[client].socket, from: subscribed)
                clients[client].subscriptions[subscribed] = nil
            }
        case 61:
            note("socket \(clients[client].socket) disconnects")
            routing.disconnect(socket: clients[client].socket)
            // A new connection is a new socket.
            clients[client].subscriptions = [:]
            clients[client].socket = nextSocket
            nextSocket += 1
        case 62..<80 where !notifications.isEmpty:
            note("notified")
            receiveNotification()
        case 80..<84 where reads.isEmpty:
            // The worker takes the next reads once the previous ones are applied.
            reads = takeReads()
            note("took \(reads.map { "\(name($0.request.conversation)) after \($0.request.afterSeq)" })")
        case 84..<90:
            if let index = reads.indices.filter({ reads[$0].result == nil }).randomElement(using: &rng) {
                if random(0..<10) == 0 {
                    note("read of \(name(reads[index].request.conversation)) failed")
                    receive(routing.retry(reads.remove(at: index).request))
                } else {
                    reads[index].result = perform(reads[index].request)
                    note("read \(name(reads[index].request.conversation)) up to \(reads[index].result!.lastSeq)")
                }
            }
        case 90..<96:
            if let index = reads.indices.filter({ reads[$0].result != nil }).randomElement(using: &rng) {
                let (request, result) = reads.remove(at: index)
                note("apply \(name(request.conversation)) after \(request.afterSeq) up to \(result!.lastSeq)")
                receive(routing.apply(result, for: request))
            }
        case 96 where listening:
            // The listening connection drops: what was on its way is lost.
            note("lost")
            listening = false
            notifications.removeAll()
            receive(routing.handle(.lost, at: now))
        case 97 where !listening:
            note("listening")
            listening = true
            receive(routing.handle(.listening, at: now))
        case 98..<100:
            settle(step: step)
        default:
            break
        }
        checkSubscriptionsAreTheRoutingsOwn()
    }

    mutating func notify(_ event: FeedEvent) {
        let id = event.conversation!
        note("write \(event)".replacingOccurrences(of: id.uuidString, with: name(id)))
        if listening { notifications.append(event) }
    }

    mutating func receiveNotification() {
        let event = notifications.removeFirst()
        if case .read(let id, _, _) = event {
            for index in clients.indices where clients[index].subscriptions[id] != nil {
                clients[index].markersOwed[id, default: 0] += 1
            }
        }
        receive(routing.handle(.event(event), at: now))
    }

    mutating func subscribe(_ client: Int, to id: UUID) {
        let lastSeq = database.conversations[id]!.lastSeq
        let afterSeq: Int64? = random(0..<2) == 0 ? nil : Int64(random(0..<Int(lastSeq) + 1))
        note(
            "socket \(clients[client].socket) of \(clients[client].user) subscribes to \(name(id)) after \(afterSeq.map(String.init) ?? "nil")"
        )
        routing.register(socket: clients[client].socket, user: clients[client].user, to: id)
        clients[client].subscriptions[id] = .registered(afterSeq: afterSeq)
        clients[client].markersOwed[id] = nil  // a new subscription: the old one's are dropped
    }

    /// What `StreamSession.subscribe` reads once the subscription is registered.
    mutating func snapshotOne() {
        guard case (let client, let id)? = pick({ if case .registered = $0 { true } else { false } }),
            case .registered(let afterSeq) = clients[client].subscriptions[id]
        else { return }
        let snapshot = database.feed(of: id, afterSeq: afterSeq, afterVersion: .max, checking: [clients[client].user])
        note("socket \(clients[client].socket) snapshot of \(name(id)) up to \(snapshot.lastSeq) v\(snapshot.version)")
        clients[client].subscriptions[id] = .snapshotted(
            afterSeq: afterSeq, snapshot, versions: database.versions(in: id))
    }

    mutating func activateOne() {
        guard case (let client, let id)? = pick({ if case .snapshotted = $0 { true } else { false } }),
            case .snapshotted(_, let snapshot, _) = clients[client].subscriptions[id]
        else { return }
        activate(client, id, snapshot)
    }

    mutating func activate(_ client: Int, _ id: UUID, _ snapshot: FeedRead) {
        guard snapshot.members.contains(clients[client].user) else {
            // Not a member: the session answers with an error and unsubscribes.
            routing.unsubscribe(socket: clients[client].socket, from: id)
            clients[client].subscriptions[id] = nil
            return
        }
        note("socket \(clients[client].socket) activates \(name(id))")
        receive(routing.activate(socket: clients[client].socket, in: id, snapshot: snapshot))
        if case .snapshotted = clients[client].subscriptions[id] {
            problem("socket \(clients[client].socket) was not told `subscribed`")
        }
    }

    mutating func pick(_ matching: (Client.Subscription) -> Bool) -> (Int, UUID)? {
        let candidates = clients.indices.flatMap { client in
            clients[client].subscriptions.filter { matching($0.value) }.keys.map { (client, $0) }
        }.sorted { ($0.0, $0.1.uuidString) < ($1.0, $1.1.uuidString) }
        return candidates.randomElement(using: &rng)
    }

    /// In a fixed order, so a seed replays the same run.
    mutating func takeReads() -> [(request: LiveRouting.ReadRequest, result: FeedRead?)] {
        routing.takeReads().sorted { $0.conversation.uuidString < $1.conversation.uuidString }.map { ($0, nil) }
    }

    func perform(_ request: LiveRouting.ReadRequest) -> FeedRead {
        database.feed(
            of: request.conversation, afterSeq: request.afterSeq, afterVersion: request.afterVersion,
            checking: request.users)
    }

    /// Everything on its way arrives: the listening connection is back,
    /// notifications are received, snapshots are read and activated, the
    /// worker reads until nothing is marked. Then every live subscriber has
    /// every message and every edit, and is a member.
    mutating func settle(step: Int) {
        self.step = step
        note("settle")
        if !listening {
            listening = true
            receive(routing.handle(.listening, at: now))
        }
        for _ in 0..<100 {
            while !notifications.isEmpty { receiveNotification() }
            while pick({ if case .registered = $0 { true } else { false } }) != nil { snapshotOne() }
            while pick({ if case .snapshotted = $0 { true } else { false } }) != nil { activateOne() }
            for (request, result) in reads { receive(routing.apply(result ?? perform(request), for: request)) }
            reads = takeReads()
            if reads.isEmpty { break }
        }
        for client in clients {
            for (id, subscription) in client.subscriptions {
                let conversation = database.conversations[id]!
                guard case .live(let view) = subscription else {
                    problem("socket \(client.socket) is still pending")
                    continue
                }
                if !conversation.members.contains(client.user) {
                    problem("socket \(client.socket) of \(client.user), no longer a member, is still subscribed")
                }
                if view.next != conversation.lastSeq + 1 {
                    problem("socket \(client.socket) has messages up to \(view.next - 1) of \(conversation.lastSeq)")
                }
                if let owed = client.markersOwed[id], owed != 0 {
                    problem("socket \(client.socket) is owed \(owed) read markers")
                }
                for message in conversation.messages where view.versions[message.seq] != message.version {
                    problem(
                        "socket \(client.socket) knows message \(message.seq) at version \(view.versions[message.seq] ?? 0), not \(message.version)"
                    )
                }
            }
        }
        checkSubscriptionsAreTheRoutingsOwn()
    }

    /// What each client believes it is subscribed to is what the routing
    /// says: there is no second copy to drift.
    mutating func checkSubscriptionsAreTheRoutingsOwn() {
        for client in clients where Set(client.subscriptions.keys) != routing.conversations(of: client.socket) {
            problem(
                "socket \(client.socket) believes it is subscribed to \(client.subscriptions.count), the routing says \(routing.conversations(of: client.socket).count)"
            )
        }
        let count = clients.reduce(0) { $0 + $1.subscriptions.count }
        if routing.subscriptionCount != count {
            problem("\(routing.subscriptionCount) subscriptions counted, \(count) held")
        }
    }

    /// Every frame as a client checks it on arrival.
    mutating func receive(_ effects: LiveRouting.Effects) {
        var removedSockets: [LiveRouting.SubscriptionKey] = []
        for send in effects.sends {
            guard let index = clients.firstIndex(where: { $0.socket == send.socket }) else {
                problem("a frame for socket \(send.socket), which has disconnected")
                continue
            }
            let frame = decode(send.frame)
            let user = clients[index].user
            guard let id = frame.conversation, let subscription = clients[index].subscriptions[id] else {
                problem("\(describe(frame)) to socket \(send.socket), which is not subscribed to its conversation")
                continue
            }
            delivered += 1
            note("  socket \(send.socket) <- \(name(id)) \(describe(frame))")
            switch (frame, subscription) {
            case (.memberRemoved, _):
                if database.conversations[id]!.members.contains(user) { problem("member_removed to member \(user)") }
                clients[index].subscriptions[id] = nil
                removedSockets.append(.init(socket: send.socket, conversation: id))
            case (.subscribed(_, let lastSeq, let version), .snapshotted(let afterSeq, let snapshot, let versions)):
                if lastSeq != snapshot.lastSeq || version != snapshot.version {
                    problem(
                        "subscribed at \(lastSeq) v\(version), the snapshot is at \(snapshot.lastSeq) v\(snapshot.version)"
                    )
                }
                clients[index].subscriptions[id] = .live(
                    .init(next: (afterSeq ?? lastSeq) + 1, snapshotVersion: version, versions: versions))
            case (_, .live(var view)):
                switch frame {
                case .message(let message):
                    if message.seq != view.next {
                        problem("socket \(send.socket) got message \(message.seq), expected \(view.next)")
                    }
                    view.next = message.seq + 1
                    view.versions[message.seq] = max(view.versions[message.seq] ?? 0, message.version)
                case .messageUpdated(let message):
                    if message.version <= view.snapshotVersion {
                        problem("an update at v\(message.version), not above the snapshot's v\(view.snapshotVersion)")
                    }
                    if message.seq >= view.next { problem("an update of message \(message.seq), not received yet") }
                    view.versions[message.seq] = max(view.versions[message.seq] ?? 0, message.version)
                case .resyncRequired(_, let lastSeq):
                    // The client pages and fetches the changes over HTTP.
                    view.next = max(view.next, lastSeq + 1)
                    for message in database.conversations[id]!.messages where message.seq <= lastSeq {
                        view.versions[message.seq] = max(view.versions[message.seq] ?? 0, message.version)
                    }
                case .typing(_, let typer):
                    if typer == user.rawValue { problem("typing echoed to \(user)") }
                case .read:
                    clients[index].markersOwed[id, default: 0] -= 1
                    if clients[index].markersOwed[id]! < 0 { problem("a read marker to socket \(send.socket) twice") }
                default:
                    problem("\(describe(frame)) to a live subscription")
                }
                clients[index].subscriptions[id] = .live(view)
            default:
                problem("\(describe(frame)) to socket \(send.socket) before `subscribed`")
            }
        }
        if Set(effects.ended) != Set(removedSockets) { problem("ended \(effects.ended), told \(removedSockets)") }
    }
}
