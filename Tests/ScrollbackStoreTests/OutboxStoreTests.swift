import Foundation
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The outbox's rows are written by the change's own transaction, and
/// claims hand each conversation's events to one worker at a time, in order.
@Suite struct OutboxStoreTests {
    static func events(_ store: ScrollbackStore) async throws -> [String] {
        try await store.values(String.self, "SELECT type || ':' || sink FROM outbox ORDER BY id")
    }

    /// A conversation of alice and bob whose creation's events (webhook
    /// sink) are delivered: the outbox holds nothing pending.
    static func conversationWithItsCreationDelivered(_ store: ScrollbackStore) async throws -> Conversation {
        try await store.registerOutboxSink(.webhook)
        let conversation = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
        let setup = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
        try await store.outboxDelivered(setup.map(\.row), token: setup[0].lease)
        return conversation
    }

    @Test func withoutASinkNothingIsWritten() async throws {
        try await TestDatabase.withStore { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
            _ = try await store.send(to: conversation.id, from: "alice", body: "hi", clientID: nil)
            #expect(try await Self.events(store).isEmpty)
        }
    }

    /// One row per registered sink, written with the change; the event id
    /// is shared by the sinks.
    @Test func eachSinkGetsEveryEventUnderOneID() async throws {
        try await TestDatabase.withStore { store in
            try await store.registerOutboxSink(.webhook)
            try await store.registerOutboxSink(.push)
            try await store.registerOutboxSink(.webhook)
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            _ = try await store.send(to: conversation.id, from: "alice", body: "hi", clientID: nil)
            #expect(
                try await Self.events(store) == [
                    "conversation.created:push", "conversation.created:webhook", "member.added:push",
                    "member.added:webhook", "message.created:push", "message.created:webhook",
                ])
            let shared = try await store.values(Int.self, "SELECT count(DISTINCT sink) FROM outbox GROUP BY event")
            #expect(shared == [2, 2, 2])
        }
    }

    /// A change refused or rolled back leaves no event: a non-member's
    /// send, a send whose transaction is rolled back after it stored the
    /// message, a repeated client id.
    @Test func aChangeThatDidNotCommitHasNoEvent() async throws {
        try await TestDatabase.withStore { store in
            try await store.registerOutboxSink(.webhook)
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            let before = try await Self.events(store)
            await #expect(throws: StoreError.self) {
                _ = try await store.send(to: conversation.id, from: "mallory", body: "no", clientID: nil)
            }
            _ = try await store.send(to: conversation.id, from: "alice", body: "once", clientID: "c1")
            _ = try await store.send(to: conversation.id, from: "alice", body: "once", clientID: "c1")
            try await TestDatabase.otherConnection(to: store) { connection in
                _ = try await connection.query("BEGIN", logger: .init(label: "test"))
                _ = try await connection.query(
                    """
                    WITH c AS (UPDATE conversations SET last_seq = last_seq + 1, version = version + 1
                               WHERE id = \(conversation.id) RETURNING id, last_seq, version)
                    INSERT INTO messages (conversation_id, seq, sender, body, version)
                    SELECT id, last_seq, 'alice', 'rolled back', version FROM c
                    """, logger: .init(label: "test"))
                let inside = try await connection.query(
                    "SELECT count(*) FROM outbox WHERE type = 'message.created'", logger: .init(label: "test")
                ).collect().first?.decode(Int.self)
                #expect(inside == 2, "the event is written inside the change's transaction")
                _ = try await connection.query("ROLLBACK", logger: .init(label: "test"))
            }
            #expect(try await Self.events(store) == before + ["message.created:webhook"])
        }
    }

    /// Sends stored as one group (one statement) write one event each, in
    /// seq order.
    @Test func aGroupOfSendsWritesAnEventPerMessage() async throws {
        try await TestDatabase.withStore { store in
            try await store.registerOutboxSink(.webhook)
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
            _ = try await store.values(
                Int64.self,
                """
                SELECT seq FROM store_sends(
                    ARRAY[\(conversation.id), \(conversation.id), \(conversation.id)]::uuid[],
                    ARRAY['alice', 'bob', 'alice'], ARRAY['a', 'b', 'c'], ARRAY[NULL, NULL, NULL]::text[],
                    ARRAY[NULL, NULL, NULL]::bigint[], '{}'::uuid[], '{}'::integer[], 3)
                """)
            let seqs = try await store.values(
                Int64.self, "SELECT seq FROM outbox WHERE type = 'message.created' ORDER BY id")
            #expect(seqs == [1, 2, 3])
        }
    }

    /// Two workers claiming at once never hold events of one conversation
    /// together, take each event once, and get each conversation's events
    /// in order; an event failing holds its conversation back.
    @Test func claimsKeepConversationsWithOneWorkerInOrder() async throws {
        try await TestDatabase.withStore { store in
            try await store.registerOutboxSink(.webhook)
            var conversations: [UUID] = []
            for _ in 0..<6 {
                let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
                conversations.append(conversation.id)
                for index in 0..<5 {
                    _ = try await store.send(to: conversation.id, from: "alice", body: "m\(index)", clientID: nil)
                }
            }
            let delivered = NIOLockedValueBox<[UUID: [Int64]]>([:])
            let holders = NIOLockedValueBox<[UUID: Int]>([:])
            let overlaps = NIOLockedValueBox(0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<3 {
                    group.addTask {
                        var idle = 0
                        while idle < 20 {
                            let events = try await store.claimOutbox(.webhook, limit: 7, lease: .seconds(30))
                            if events.isEmpty {
                                idle += 1
                                try await Task.sleep(for: .milliseconds(10))
                                continue
                            }
                            idle = 0
                            let mine = Set(events.map(\.conversationID))
                            holders.withLockedValue { holders in
                                for id in mine {
                                    if let other = holders[id], other != worker { overlaps.withLockedValue { $0 += 1 } }
                                    holders[id] = worker
                                }
                            }
                            try await Task.sleep(for: .milliseconds(5))
                            delivered.withLockedValue { delivered in
                                for event in events { delivered[event.conversationID, default: []].append(event.row) }
                            }
                            holders.withLockedValue { holders in for id in mine { holders[id] = nil } }
                            try await store.outboxDelivered(events.map(\.row), token: events[0].lease)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(overlaps.withLockedValue { $0 } == 0)
            let all = delivered.withLockedValue { $0 }
            let total = try await store.values(Int.self, "SELECT count(*)::int FROM outbox")
            #expect(all.values.map(\.count).reduce(0, +) == total.first)
            for rows in all.values { #expect(rows == rows.sorted()) }
            #expect(Set(all.values.flatMap { $0 }).count == total.first)
        }
    }

    @Test func aFailedEventHoldsItsConversationBackUntilItIsDueOrDead() async throws {
        try await TestDatabase.withStore { store in
            try await store.registerOutboxSink(.webhook)
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            let setup = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            try await store.outboxDelivered(setup.map(\.row), token: setup[0].lease)
            _ = try await store.send(to: conversation.id, from: "alice", body: "first", clientID: nil)
            _ = try await store.send(to: conversation.id, from: "alice", body: "second", clientID: nil)
            let claimed = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            #expect(claimed.map(\.seq) == [1, 2])
            let dead = try await store.outboxFailed(
                claimed[0].row, token: claimed[0].lease, error: "500", retryAfter: .seconds(60), window: .seconds(3600))
            #expect(!dead)
            try await store.outboxRelease([claimed[1].row], token: claimed[1].lease)
            #expect(try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30)).isEmpty)
            // Past its window the event is dead and the conversation goes on.
            _ = try await store.values(Int.self, "UPDATE outbox SET next_attempt_at = now() WHERE id = \(claimed[0].row)")
            let again = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            #expect(again.map(\.seq) == [1, 2] && again[0].attempts == 1)
            #expect(
                try await store.outboxFailed(
                    again[0].row, token: again[0].lease, error: "500", retryAfter: .seconds(1), window: .zero))
            try await store.outboxRelease([again[1].row], token: again[1].lease)
            let next = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            #expect(next.map(\.seq) == [2])
            try await store.outboxDelivered(next.map(\.row), token: next[0].lease)
            #expect(try await store.outboxCounts(.webhook).dead == 1)
            #expect(try await store.replayOutbox(.webhook) == 1)
            #expect(try await store.outboxCounts(.webhook).dead == 0)
            // A replay restarts the window: one more failure inside it is not the end.
            let replayed = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            #expect(replayed.map(\.seq) == [1])
            #expect(
                try await !store.outboxFailed(
                    replayed[0].row, token: replayed[0].lease, error: "500", retryAfter: .seconds(1),
                    window: .seconds(3600)))
        }
    }

    /// A claim whose lease ran out changes nothing once another claim holds
    /// its events; and a conversation with any event held, even one after
    /// the first undelivered (a read marker commits out of id order), is
    /// not claimed by another worker.
    @Test func aClaimHoldsItsConversationAndAStaleClaimMarksNothing() async throws {
        try await TestDatabase.withStore { store in
            let conversation = try await Self.conversationWithItsCreationDelivered(store)
            _ = try await store.send(to: conversation.id, from: "alice", body: "one", clientID: nil)
            let stale = try await store.claimOutbox(.webhook, limit: 10, lease: .milliseconds(100))
            #expect(stale.count == 1)
            try await Task.sleep(for: .milliseconds(300))
            let fresh = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            #expect(fresh.map(\.row) == stale.map(\.row) && fresh[0].lease != stale[0].lease)
            let staleMarked = try await store.outboxDelivered(stale.map(\.row), token: stale[0].lease)
            #expect(!staleMarked, "the stale claim hears that it lost its events")
            try await store.outboxRelease(stale.map(\.row), token: stale[0].lease)
            #expect(try await store.outboxCounts(.webhook).pending == 1, "the stale claim marked nothing")
            #expect(try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30)).isEmpty)
            // An older row appearing behind a held one (as a read marker's
            // commit can) is not handed to another worker meanwhile.
            _ = try await store.values(
                Int.self,
                """
                INSERT INTO outbox (id, event, sink, type, conversation_id, user_id)
                VALUES (\(fresh[0].row - 1000), nextval('outbox_events'), 'webhook', 'read.moved', \(conversation.id), 'bob')
                """)
            #expect(try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30)).isEmpty)
            let freshMarked = try await store.outboxDelivered(fresh.map(\.row), token: fresh[0].lease)
            #expect(freshMarked)
            #expect(try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30)).map(\.type) == ["read.moved"])
        }
    }
}

extension OutboxStoreTests {
    /// A claim judges every row at one instant: an earlier event whose
    /// retry falls due while the claim scans is either taken with the
    /// events after it or holds them back, never left behind them. Two
    /// thousand conversations each have an event waiting for its retry
    /// (falling due one after another over about a second) and a later
    /// event that is due; claims run back to back until all are taken,
    /// and each conversation must come whole, in one claim.
    @Test func aRetryFallingDueDuringAClaimIsNotOvertaken() async throws {
        try await TestDatabase.withStore { store in
            try await store.registerOutboxSink(.webhook)
            let conversations = 2_000
            _ = try await store.values(
                Int.self,
                """
                WITH c AS (SELECT n, gen_random_uuid() AS id FROM generate_series(1, \(conversations)) n),
                waiting AS (
                    INSERT INTO outbox (event, sink, type, conversation_id, seq, next_attempt_at)
                    SELECT nextval('outbox_events'), 'webhook', 'message.created', id, 1,
                           clock_timestamp() + make_interval(secs => 0.3 + n * 0.0005)
                    FROM c ORDER BY n RETURNING conversation_id)
                SELECT count(*)::int FROM waiting
                """)
            _ = try await store.values(
                Int.self,
                """
                WITH due AS (
                    INSERT INTO outbox (event, sink, type, conversation_id, seq)
                    SELECT nextval('outbox_events'), 'webhook', 'message.created', conversation_id, 2
                    FROM outbox ORDER BY id RETURNING 1)
                SELECT count(*)::int FROM due
                """)
            // Statistics, as a busy outbox has them: without, the claim of old
            // took seconds here (see claimOutbox), and every retry was due.
            _ = try await store.values(Int.self, "ANALYZE outbox")
            var claimedIn: [UUID: [Int]] = [:]  // the claim that took each seq
            var claims = 0
            let deadline = ContinuousClock.now + .seconds(15)
            while claimedIn.values.reduce(0, { $0 + $1.count }) < 2 * conversations, ContinuousClock.now < deadline {
                claims += 1
                for event in try await store.claimOutbox(.webhook, limit: 100_000, lease: .seconds(60)) {
                    claimedIn[event.conversationID, default: []].append(claims)
                }
            }
            let split = claimedIn.values.filter { $0.count != 2 || $0[0] != $0[1] }.count
            #expect(claimedIn.count == conversations)
            #expect(split == 0, "\(split) of \(conversations) conversations had their later event claimed alone (\(claims) claims)")
        }
    }
}

extension OutboxStoreTests {
    /// A worker whose lease ran out may be renewing it at the moment
    /// another claims: the claim waits for that mark and then leaves the
    /// conversation alone, rather than taking the events around the row the
    /// mark holds (the next event would be posted ahead of it).
    @Test func aClaimWaitsForAStaleMarkInFlightAndLeavesItsConversation() async throws {
        try await TestDatabase.withStore { store in
            let conversation = try await Self.conversationWithItsCreationDelivered(store)
            _ = try await store.send(to: conversation.id, from: "alice", body: "one", clientID: nil)
            _ = try await store.send(to: conversation.id, from: "alice", body: "two", clientID: nil)
            let stale = try await store.claimOutbox(.webhook, limit: 10, lease: .milliseconds(100))
            #expect(stale.count == 2)
            try await Task.sleep(for: .milliseconds(300))
            _ = try await store.send(to: conversation.id, from: "alice", body: "three", clientID: nil)
            let claimed = try await TestDatabase.otherConnection(to: store) { connection in
                // The stale worker's mark: the first delivered, the second
                // renewed, not committed yet.
                _ = try await connection.query("BEGIN", logger: .init(label: "test"))
                _ = try await connection.query(
                    """
                    UPDATE outbox SET
                        state = CASE WHEN id = \(stale[0].row) THEN 'delivered' ELSE state END,
                        leased_until = CASE WHEN id = \(stale[0].row) THEN NULL
                                            ELSE clock_timestamp() + interval '30 seconds' END
                    WHERE id = ANY(\(stale.map(\.row))) AND lease_token = \(stale[0].lease)
                    """, logger: .init(label: "test"))
                let claim = Task { try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30)) }
                try await Task.sleep(for: .milliseconds(500))
                _ = try await connection.query("COMMIT", logger: .init(label: "test"))
                return try await claim.value
            }
            #expect(claimed.isEmpty, "claimed \(claimed.map(\.seq)) while the stale worker holds seq 2")
            // Once the stale worker is done, the rest goes in order.
            try await store.outboxDelivered([stale[1].row], token: stale[0].lease)
            let next = try await store.claimOutbox(.webhook, limit: 10, lease: .seconds(30))
            #expect(next.map(\.seq) == [3])
        }
    }
}

/// Presence across instances: a user is online while an instance that has
/// not expired holds a socket of theirs.
@Suite struct PresenceStoreTests {
    @Test func aUserIsOnlineWhileALiveInstanceHoldsTheirSocket() async throws {
        try await TestDatabase.withStore { store in
            let first = UUID()
            let second = UUID()
            try await store.presenceWrite(first, ttl: .seconds(30), sockets: [("bob", 2), ("carol", 1)], replacingAll: true)
            try await store.presenceWrite(second, ttl: .seconds(30), sockets: [("bob", 1)], replacingAll: true)
            #expect(try await store.online(["bob", "carol", "dave"]) == ["bob", "carol"])
            // Carol's socket closed; bob's on the first instance too.
            try await store.presenceWrite(first, ttl: .seconds(30), sockets: [("carol", 0), ("bob", 0)], replacingAll: false)
            #expect(try await store.online(["bob", "carol"]) == ["bob"])
            // A full write replaces the instance's rows.
            try await store.presenceWrite(second, ttl: .seconds(30), sockets: [("dave", 1)], replacingAll: true)
            #expect(try await store.online(["bob", "dave"]) == ["dave"])
            // An instance that stops beating (killed) takes its users offline at its expiry.
            try await store.presenceWrite(first, ttl: .milliseconds(300), sockets: [("erin", 1)], replacingAll: true)
            #expect(try await store.online(["erin"]) == ["erin"])
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await store.online(["erin"]).isEmpty)
            // A clean stop takes them offline at once.
            try await store.presenceEnd(second)
            #expect(try await store.online(["dave"]).isEmpty)
        }
    }

    /// An instance that stalled past its expiry is removed, with its rows,
    /// by the next beat of another; its next write says its row was
    /// created anew, so that it writes all its users again.
    @Test func aWriteAfterExpiryAsksForEverythingAgain() async throws {
        try await TestDatabase.withStore { store in
            let (stalled, other) = (UUID(), UUID())
            #expect(try await store.presenceWrite(stalled, ttl: .milliseconds(200), sockets: [("bob", 1), ("carol", 1)], replacingAll: true))
            #expect(try await !store.presenceWrite(stalled, ttl: .milliseconds(200), sockets: [("bob", 2)], replacingAll: false))
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await store.presenceBeat(other, ttl: .seconds(30)))
            #expect(try await store.presenceWrite(stalled, ttl: .seconds(30), sockets: [("bob", 1)], replacingAll: false))
            // Carol's row went with the expired one, until the full write.
            #expect(try await store.online(["bob", "carol"]) == ["bob"])
            #expect(try await !store.presenceWrite(stalled, ttl: .seconds(30), sockets: [("bob", 1), ("carol", 1)], replacingAll: true))
            #expect(try await store.online(["bob", "carol"]) == ["bob", "carol"])
            // A beat never removes its own instance's row.
            #expect(try await !store.presenceBeat(other, ttl: .seconds(30)))
        }
    }

    /// The users of the `presence` notifications on the feed's channel,
    /// one set per payload, among `ours` (the channel is the database's,
    /// shared with the tests running at once).
    final class PresenceNotifications: Sendable {
        let payloads = NIOLockedValueBox<[Set<String>]>([])
        let ours: Set<String>
        init(_ ours: Set<String>) { self.ours = ours }

        func handle(_ signal: FeedSignal) {
            guard case .event(.presence(let users)) = signal else { return }
            let mine = Set(users.map(\.rawValue)).intersection(ours)
            if !mine.isEmpty { payloads.withLockedValue { $0.append(mine) } }
        }

        /// What arrives within a moment after `write`.
        func after(_ write: () async throws -> Void) async throws -> [Set<String>] {
            payloads.withLockedValue { $0.removeAll() }
            try await write()
            try await Task.sleep(for: .milliseconds(300))
            return payloads.withLockedValue { $0 }
        }
    }

    /// Only a user's first row on an instance and their last one going
    /// name them on the feed (whether they are online anywhere may have
    /// changed); a count that moves does not, and a user who hides their
    /// presence is never named but for the hiding itself.
    @Test func presenceIsNotifiedForRowsThatComeAndGoAndNeverForTheHidden() async throws {
        try await TestDatabase.withStore { store in
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let (bob, carol, dave) = ("bob-\(suffix)", "carol-\(suffix)", "dave-\(suffix)")
            let crowd = (0..<250).map { "user\($0)-\(suffix)" }
            let notifications = PresenceNotifications(Set([bob, carol, dave] + crowd))
            let listening = NIOLockedValueBox(false)
            let listener = Task {
                await store.listenToFeed { signal in
                    if signal == .listening { listening.withLockedValue { $0 = true } }
                    notifications.handle(signal)
                }
            }
            defer { listener.cancel() }
            while !listening.withLockedValue({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }

            let instance = UUID()
            func write(_ sockets: [(String, Int)], all: Bool = false) async throws {
                try await store.presenceWrite(instance, ttl: .seconds(30), sockets: sockets, replacingAll: all)
            }
            #expect(try await notifications.after { try await write([(bob, 1), (carol, 1)]) } == [[bob, carol]])
            #expect(try await notifications.after { try await write([(bob, 3)]) } == [])
            #expect(try await notifications.after { try await store.setPresenceHidden(true, for: UserID(rawValue: dave)) } == [[dave]])
            #expect(try await notifications.after { try await write([(dave, 1)]) } == [])
            #expect(try await notifications.after { try await write([(carol, 0)]) } == [[carol]])

            // Many at once: in payloads PostgreSQL takes (at most 8,000 bytes), all of them named.
            let many = try await notifications.after { try await write(crowd.map { ($0, 1) }) }
            #expect(!many.isEmpty && many.allSatisfy { $0.reduce(2) { $0 + $1.utf8.count + 1 } <= 8_000 })
            #expect(many.reduce(into: Set<String>()) { $0.formUnion($1) } == Set(crowd))

            // A clean stop names everyone it held but the hidden.
            let ended = try await notifications.after { try await store.presenceEnd(instance) }
            #expect(ended.reduce(into: Set<String>()) { $0.formUnion($1) } == Set([bob] + crowd))
        }
    }
}
