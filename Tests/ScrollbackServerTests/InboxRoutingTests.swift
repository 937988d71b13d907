import Foundation
import ScrollbackModels
@testable import ScrollbackServer
@testable import ScrollbackStore
import Testing

/// The routing of inbox frames as a value: each rule of `InboxRouting` fed
/// by hand-made reads.
@Suite struct InboxRoutingTests {
    static let alice = UserID(rawValue: "alice")
    static let c1 = UUID(uuidString: "0A1B2C3D-0000-4000-8000-000000000001")!
    static let c2 = UUID(uuidString: "0A1B2C3D-0000-4000-8000-000000000002")!

    static func cursor(_ value: UInt64) -> InboxCursor { InboxCursor(transaction: value) }

    static func entry(
        _ id: UUID, membership: Int64 = 1, version: Int64, readSeq: Int64 = 0, joined: Bool = false
    ) -> InboxEntry {
        InboxEntry(
            conversation: Conversation(
                id: id, title: nil, createdBy: "bob", createdAt: Date(timeIntervalSince1970: 0), lastSeq: version,
                members: ["alice", "bob"], readSeq: readSeq, unreadCount: version - readSeq, version: version,
                activity: version),
            membership: membership, joined: joined)
    }

    static func read(
        _ cursor: UInt64, _ entries: [InboxEntry] = [], removals: [InboxRemoval] = [], memberships: Set<UUID>? = nil,
        truncated: Bool = false
    ) -> InboxRead {
        InboxRead(
            cursor: Self.cursor(cursor),
            memberships: memberships ?? Set(entries.map(\.conversation.id)).union([c1]), entries: entries,
            removals: removals, truncated: truncated)
    }

    /// Socket `socket` of alice, live after a fresh snapshot at `cursor`.
    static func live(_ routing: inout InboxRouting, socket: Int = 1, at cursor: UInt64 = 100) -> [ServerFrame] {
        routing.register(socket: socket, user: alice)
        return frames(routing.activate(socket: socket, after: nil, snapshot: read(cursor)))
    }

    static func frames(_ effects: InboxRouting.Effects) -> [ServerFrame] {
        effects.sends.map { try! ScrollbackJSON.decoder().decode(ServerFrame.self, from: Data($0.frame.buffer.readableBytesView)) }
    }

    /// Takes the one read marked and applies `read` to it.
    static func deliver(_ read: InboxRead, _ routing: inout InboxRouting) -> [ServerFrame] {
        let requests = routing.takeReads()
        #expect(requests.count == 1)
        guard let request = requests.first else { return [] }
        return frames(routing.apply(read, for: request))
    }

    @Test func aMessageInAKnownConversationIsReadAndToldOnceWithTheFloorAsCursor() {
        var routing = InboxRouting()
        #expect(Self.live(&routing) == [.inboxSubscribed(cursor: "100")])
        // A conversation the user is not known to be in asks for nothing.
        #expect(routing.handle(.event(.changed(conversation: Self.c2, seq: 1, version: 1))).reads.isEmpty)
        #expect(routing.handle(.event(.changed(conversation: Self.c1, seq: 1, version: 1))).reads == [Self.alice])
        let first = Self.deliver(Self.read(105, [Self.entry(Self.c1, version: 1)]), &routing)
        guard case .conversationActivity(let line, let cursor) = first.first, first.count == 1 else {
            Issue.record("\(first)")
            return
        }
        #expect(line.conversationId == Self.c1 && line.version == 1 && cursor == "100")
        // The same state again (a read repeats what it may) is not news.
        _ = routing.handle(.event(.changed(conversation: Self.c1, seq: 1, version: 1)))
        #expect(Self.deliver(Self.read(107, [Self.entry(Self.c1, version: 1)]), &routing).isEmpty)
        // A read marker that moved is a `read`, with the floor the last read left.
        _ = routing.handle(.event(.read(conversation: Self.c1, user: Self.alice, seq: 1)))
        #expect(
            Self.deliver(Self.read(110, [Self.entry(Self.c1, version: 1, readSeq: 1)]), &routing) == [
                .inboxRead(conversationId: Self.c1, userId: "alice", seq: 1, unreadCount: 0, cursor: "107")
            ])
    }

    @Test func aRemovalIsToldOnceAndAnOlderMembershipIsNeverToldAfterIt() {
        var routing = InboxRouting()
        _ = Self.live(&routing)
        _ = routing.handle(.event(.memberRemoved(conversation: Self.c1, user: Self.alice)))
        let removal = InboxRemoval(conversation: Self.c1, membership: 2)
        #expect(
            Self.deliver(Self.read(105, removals: [removal], memberships: []), &routing) == [
                .inboxMemberRemoved(conversationId: Self.c1, cursor: "100")
            ])
        // A read of the membership before the removal (membership 1) says nothing.
        _ = routing.handle(.event(.read(conversation: Self.c1, user: Self.alice, seq: 1)))
        #expect(Self.deliver(Self.read(106, [Self.entry(Self.c1, membership: 1, version: 5)]), &routing).isEmpty)
        // Added again (membership 3): the whole conversation.
        _ = routing.handle(.event(.memberAdded(conversation: Self.c1, user: Self.alice)))
        let added = Self.deliver(Self.read(108, [Self.entry(Self.c1, membership: 3, version: 6, joined: true)]), &routing)
        guard case .memberAdded(let conversation, _) = added.first, added.count == 1 else {
            Issue.record("\(added)")
            return
        }
        #expect(conversation.id == Self.c1 && conversation.version == 6)
    }

    @Test func aPendingSocketGetsItsSnapshotThenTheNewsOfWhatWasReadMeanwhile() {
        var routing = InboxRouting()
        _ = Self.live(&routing, socket: 1, at: 100)
        routing.register(socket: 2, user: Self.alice)
        _ = routing.handle(.event(.changed(conversation: Self.c1, seq: 2, version: 2)))
        // Read while socket 2 takes its snapshot: socket 1 hears of it now.
        let meanwhile = Self.deliver(Self.read(110, [Self.entry(Self.c1, version: 2)]), &routing)
        #expect(meanwhile.count == 1)
        // Socket 2 resumes from 90; its snapshot (older than that read) had version 1.
        let effects = routing.activate(
            socket: 2, after: Self.cursor(90), snapshot: Self.read(104, [Self.entry(Self.c1, version: 1)]))
        let frames = Self.frames(effects)
        #expect(frames.count == 3, "\(frames)")
        #expect(frames.first == .inboxSubscribed(cursor: "90"))
        let versions = frames.compactMap { frame -> Int64? in
            if case .conversationActivity(let line, _) = frame { line.version } else { nil }
        }
        #expect(versions == [1, 2])
        // The buffered read bridged its snapshot and the position: nothing to read again.
        #expect(effects.reads.isEmpty)
    }

    /// The user's first socket here is pending: which conversations are
    /// hers is known only from its snapshot, so a change to any
    /// conversation meanwhile (it may have committed after the snapshot)
    /// has her inbox read once the socket is live. Without it, a message
    /// sent while a client resubscribed was never told.
    @Test func aChangeWhileTheFirstSocketIsPendingIsReadOnceItIsLive() {
        var routing = InboxRouting()
        routing.register(socket: 1, user: Self.alice)
        #expect(routing.handle(.event(.changed(conversation: Self.c2, seq: 1, version: 1))).reads.isEmpty)
        let effects = routing.activate(
            socket: 1, after: Self.cursor(90), snapshot: Self.read(100, [Self.entry(Self.c1, version: 1)], memberships: [Self.c1, Self.c2]))
        #expect(effects.reads == [Self.alice])
        let news = Self.deliver(Self.read(110, [Self.entry(Self.c2, version: 1)]), &routing)
        let versions = news.compactMap { frame -> UUID? in
            if case .conversationActivity(let line, _) = frame { line.conversationId } else { nil }
        }
        #expect(versions == [Self.c2], "\(news)")
        // Once live, a change elsewhere asks for nothing.
        #expect(routing.handle(.event(.changed(conversation: UUID(), seq: 1, version: 1))).reads.isEmpty)
        // A later first socket (after the last one left) is pending again.
        routing.remove(socket: 1)
        routing.register(socket: 2, user: Self.alice)
        _ = routing.handle(.event(.changed(conversation: Self.c1, seq: 2, version: 2)))
        #expect(routing.activate(socket: 2, after: nil, snapshot: Self.read(120)).reads == [Self.alice])
    }

    @Test func aSocketThatGoesLiveBehindThePositionHasTheReadsStartOverFromIt() {
        var routing = InboxRouting()
        _ = Self.live(&routing, socket: 1, at: 100)
        _ = routing.handle(.event(.changed(conversation: Self.c1, seq: 2, version: 2)))
        #expect(Self.deliver(Self.read(110, [Self.entry(Self.c1, version: 2)]), &routing).count == 1)
        // Socket 2's snapshot is older than where the reads stand.
        routing.register(socket: 2, user: Self.alice)
        let effects = routing.activate(socket: 2, after: nil, snapshot: Self.read(104))
        #expect(Self.frames(effects) == [.inboxSubscribed(cursor: "104")])
        #expect(effects.reads == [Self.alice])
        let again = routing.takeReads()
        #expect(again.map(\.after) == [Self.cursor(104)])
        // Socket 2 hears of version 2; socket 1 is told nothing twice.
        let sends = routing.apply(Self.read(112, [Self.entry(Self.c1, version: 2)]), for: again[0]).sends
        #expect(sends.map(\.socket) == [2])
    }

    @Test func aTruncatedReadAsksForTheListAndAReadOfAnOldPositionIsDropped() {
        var routing = InboxRouting()
        _ = Self.live(&routing)
        _ = routing.handle(.event(.changed(conversation: Self.c1, seq: 1, version: 1)))
        let stale = routing.takeReads()
        #expect(stale.map(\.memberships) == [false])
        // A listener reconnect: every inbox is read again, its memberships
        // too (an addition may have been missed).
        #expect(routing.handle(.listening).reads == [Self.alice])
        #expect(
            Self.frames(routing.apply(Self.read(150, truncated: true), for: stale[0])) == [
                .inboxResyncRequired(cursor: "150")
            ])
        // The next read starts where that one ended; a second apply of the
        // same request is no longer current and is dropped.
        let next = routing.takeReads()
        #expect(next.map(\.after) == [Self.cursor(150)] && next.map(\.memberships) == [true])
        #expect(Self.frames(routing.apply(Self.read(160, [Self.entry(Self.c1, version: 3)]), for: stale[0])).isEmpty)
    }

    @Test func membershipsReadAfterAListenerReconnectAreLearned() {
        var routing = InboxRouting()
        _ = Self.live(&routing)
        #expect(routing.handle(.event(.changed(conversation: Self.c2, seq: 1, version: 1))).reads.isEmpty)
        _ = routing.handle(.listening)
        let request = routing.takeReads()
        #expect(request.map(\.memberships) == [true])
        _ = routing.apply(Self.read(120, memberships: [Self.c1, Self.c2]), for: request[0])
        // An addition to c2 was notified while nobody listened: c2 is known now.
        #expect(routing.handle(.event(.changed(conversation: Self.c2, seq: 2, version: 2))).reads == [Self.alice])
        #expect(routing.takeReads().map(\.memberships) == [false])
    }

    @Test func theLastSocketLeavingForgetsTheUser() {
        var routing = InboxRouting()
        _ = Self.live(&routing, socket: 1)
        _ = Self.live(&routing, socket: 2)
        #expect(routing.subscriptionCount == 2)
        routing.remove(socket: 1)
        #expect(!routing.handle(.event(.changed(conversation: Self.c1, seq: 1, version: 1))).reads.isEmpty)
        _ = routing.takeReads()
        routing.remove(socket: 2)
        #expect(routing.subscriptionCount == 0)
        #expect(routing.handle(.event(.changed(conversation: Self.c1, seq: 2, version: 2))).reads.isEmpty)
        #expect(routing.handle(.event(.read(conversation: Self.c1, user: Self.alice, seq: 1))).reads.isEmpty)
    }
}
