import Foundation
import NIOWebSocket
import PostgresNIO
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The live stream end to end: real servers on loopback, a real PostgreSQL,
/// real WebSocket clients.
@Suite struct LiveStreamTests {
    @Test func everySubscriberGetsEveryMessageInOrder() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let alice = try await cluster.connect("alice")
            let bob = try await cluster.connect("bob")
            let bobAgain = try await cluster.connect("bob")
            for client in [alice, bob, bobAgain] { try await cluster.subscribe(client, to: id) }

            for n in 1...20 {
                try alice.send(.send(conversationId: id, body: "hello \(n)", clientId: "c\(n)"))
            }
            for client in [bob, bobAgain] {
                let messages = try await client.messages(20)
                #expect(messages.map(\.seq) == Array(1...20))
                #expect(messages.map(\.body) == (1...20).map { "hello \($0)" })
            }
            // The sender gets the messages too, and one ack per send, in order.
            var acks: [(String, Message, Bool)] = []
            var own: [Message] = []
            while acks.count < 20 || own.count < 20 {
                switch try await alice.next() {
                case .ack(let clientID, let message, let replayed): acks.append((clientID, message, replayed))
                case .message(let message): own.append(message)
                case let other: Issue.record("unexpected \(other)")
                }
            }
            #expect(own.map(\.seq) == Array(1...20))
            #expect(acks.map(\.0) == (1...20).map { "c\($0)" })
            #expect(acks.map(\.1.seq) == Array(1...20))
            #expect(acks.allSatisfy { !$0.2 })

            // A retried send is acknowledged as replayed and delivered to nobody.
            try alice.send(.send(conversationId: id, body: "hello 3", clientId: "c3"))
            let replay = try await alice.next { if case .ack = $0 { true } else { false } }
            guard case .ack(_, let message, let replayed) = replay else { return }
            #expect(replayed && message.seq == 3)
            #expect(await bob.drain(for: .milliseconds(500)).compactMap(\.newMessage).isEmpty)
        }
    }

    @Test func resumeAfterADisconnectDeliversWhatWasMissedAndChangesComeThroughTheChangeLog() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.send(3, to: id, as: "alice")
            let bob = try await cluster.connect("bob")
            let first = try await cluster.subscribe(bob, to: id, after: 0)
            #expect(try await bob.messages(3).map(\.seq) == [1, 2, 3])
            bob.close()
            _ = try await bob.closed()

            // While bob is away: three sends, an edit and a deletion.
            try await cluster.send(3, to: id, as: "alice", prefix: "away")
            _ = try await cluster.store.edit(2, in: id, by: "alice", body: "edited")
            _ = try await cluster.store.delete(5, in: id, by: "alice")

            let again = try await cluster.connect("bob")
            let resumed = try await cluster.subscribe(again, to: id, after: 3)
            #expect(resumed.lastSeq == 6)
            let missed = try await again.messages(3)
            #expect(missed.map(\.seq) == [4, 5, 6])
            #expect(missed[1].deleted)
            // The edit of a message bob already had comes from the change log.
            let changes = try await cluster.store.changes(in: id, for: "bob", since: first.version, limit: 100)
            #expect(changes.messages.contains { $0.seq == 2 && $0.body == "edited" })
            #expect(changes.version == resumed.version)

            // From now on edits arrive live.
            _ = try await cluster.store.edit(1, in: id, by: "alice", body: "edited live")
            let update = try await again.next { if case .messageUpdated = $0 { true } else { false } }
            guard case .messageUpdated(let message) = update else { return }
            #expect(message.seq == 1 && message.body == "edited live" && message.version > resumed.version)
        }
    }

    /// `subscribe` with `after_seq` while messages keep arriving: every
    /// message once, in order, no gap at the seam between backlog and live.
    @Test func resumeDuringConcurrentSendsHasNoGapAndNoDuplicate() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.send(50, to: id, as: "alice")
            let sending = Task { try await cluster.send(150, to: id, as: "alice", prefix: "during") }
            try await Task.sleep(for: .milliseconds(50))
            let bob = try await cluster.connect("bob")
            try await cluster.subscribe(bob, to: id, after: 10)
            try await sending.value
            let messages = try await bob.messages(190)
            #expect(messages.map(\.seq) == Array(11...200))
            #expect(await bob.drain(for: .milliseconds(300)).compactMap(\.newMessage).isEmpty)
        }
    }

    /// The order docs/protocol.md gives a client: subscribe, fetch the newest
    /// page, merge by seq. Under concurrent sends the merge has no gap.
    @Test func subscribeThenFetchThenMergeHasNoGap() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.send(30, to: id, as: "alice")
            let sending = Task { try await cluster.send(100, to: id, as: "alice", prefix: "during") }
            let bob = try await cluster.connect("bob")
            let subscribed = try await cluster.subscribe(bob, to: id)
            let page = try await cluster.store.page(of: id, for: "bob", anchor: .newest, limit: 200)
            try await sending.value
            let live = try await bob.messages(130 - Int(subscribed.lastSeq))
            #expect(live.map(\.seq) == Array((subscribed.lastSeq + 1)...130))
            var merged: [Int64: Message] = [:]
            for message in page.messages + live { merged[message.seq] = message }
            #expect(merged.keys.sorted() == Array(1...130))
        }
    }

    @Test func aSendOnOneInstanceReachesSubscribersOfTheOther() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let alice = try await cluster.connect("alice", to: 0)
            let bob = try await cluster.connect("bob", to: 1)
            try await cluster.subscribe(alice, to: id)
            try await cluster.subscribe(bob, to: id)
            try alice.send(.send(conversationId: id, body: "from instance 0", clientId: "a1"))
            try bob.send(.send(conversationId: id, body: "from instance 1", clientId: "b1"))
            for client in [alice, bob] {
                let messages = try await client.messages(2)
                #expect(messages.map(\.seq) == [1, 2])
                #expect(Set(messages.map(\.body)) == ["from instance 0", "from instance 1"])
            }
        }
    }

    /// The listening connection is terminated twice while messages are
    /// sent: the catch-up after each reconnect loses nothing.
    @Test func aKilledListeningConnectionLosesNothing() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let bob = try await cluster.connect("bob")
            try await cluster.subscribe(bob, to: id)
            let sending = Task { try await cluster.send(120, to: id, as: "alice") }
            let name = cluster.store.listenerApplicationName
            for _ in 0..<2 {
                try await Task.sleep(for: .milliseconds(150))
                // The listener from before (or its replacement after the last
                // kill) must be connected before it can be killed; a kill that
                // raced its reconnect found nothing and is tried again.
                var killed = 0
                for attempt in 0..<300 where killed == 0 {
                    if attempt > 0 { try await Task.sleep(for: .milliseconds(100)) }
                    try await cluster.untilListening()
                    killed = try await TestDatabase.admin(cluster.url) { connection in
                        try await connection.query(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(name)",
                            logger: connection.logger
                        ).collect().count
                    }
                }
                #expect(killed == 1)
            }
            try await sending.value
            let messages = try await bob.messages(120)
            #expect(messages.map(\.seq) == Array(1...120))
        }
    }

    @Test func aRemovedMemberGetsMemberRemovedOnEveryInstanceAndNothingMore() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let onFirst = try await cluster.connect("bob", to: 0)
            let onSecond = try await cluster.connect("bob", to: 1)
            let alice = try await cluster.connect("alice", to: 1)
            for client in [onFirst, onSecond, alice] { try await cluster.subscribe(client, to: id) }
            try await cluster.store.removeMember("bob", from: id, by: "alice")
            for client in [onFirst, onSecond] {
                let frame = try await client.next()
                #expect(frame == .memberRemoved(conversationId: id))
            }
            try await cluster.send(3, to: id, as: "alice", from: 1)
            #expect(try await alice.messages(3).map(\.seq) == [1, 2, 3])
            for client in [onFirst, onSecond] {
                #expect(await client.drain(for: .milliseconds(500)).isEmpty)
            }
            // Subscribing again is refused like any non-member's subscription.
            try onFirst.send(.subscribe(conversationId: id, afterSeq: 0))
            let refused = try await onFirst.next()
            #expect(refused == .error(code: .conversationNotFound, message: APIError.conversationNotFound.message, ref: id.uuidString.lowercased()))
            #expect(await onFirst.drain(for: .milliseconds(300)).isEmpty)
        }
    }

    @Test func typingIsThrottledAndNotEchoedAndReadMarkersFanOut() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.send(2, to: id, as: "alice")
            let alice = try await cluster.connect("alice", to: 0)
            let bob = try await cluster.connect("bob", to: 1)
            try await cluster.subscribe(alice, to: id)
            try await cluster.subscribe(bob, to: id)
            let started = ContinuousClock.now
            for _ in 0..<5 { try alice.send(.typing(conversationId: id)) }
            try alice.send(.read(conversationId: id, seq: 2))
            let typing = ServerFrame.typing(conversationId: id, userId: "alice")
            var seenByBob = [try await bob.next()]
            seenByBob.append(try await bob.next())
            seenByBob += await bob.drain(for: .milliseconds(1_000))
            // One typing per 2 s: exactly one unless the five frames took a
            // busy machine 2 s or more to handle.
            let paced = 1 + Int((ContinuousClock.now - started) / .seconds(2))
            let typings = seenByBob.filter { $0 == typing }.count
            #expect(typings >= 1 && typings <= paced, "\(typings) typing frames, \(paced) allowed")
            #expect(seenByBob.contains(.read(conversationId: id, userId: "alice", seq: 2)))
            let seenByAlice = await alice.drain(for: .milliseconds(200))
            #expect(!seenByAlice.contains { if case .typing = $0 { true } else { false } })
        }
    }

    @Test func resubscribingAfterMoreThanTheBacklogLimitSaysResync() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let count = APILimits.maxStreamBacklog + 5
            try await cluster.insertMessages(count, into: id, from: "alice")
            let bob = try await cluster.connect("bob")
            try bob.send(.subscribe(conversationId: id, afterSeq: 0))
            #expect(try await bob.next() == .subscribed(conversationId: id, lastSeq: Int64(count), version: Int64(count)))
            #expect(try await bob.next() == .resyncRequired(conversationId: id, lastSeq: Int64(count)))
            // Still live after it.
            try await cluster.send(1, to: id, as: "alice")
            #expect(try await bob.messages(1).map(\.seq) == [Int64(count) + 1])
        }
    }
}
