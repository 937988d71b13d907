import Foundation
import Logging
import MetricsTestKit
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Sends committed in groups keep every rule of a send alone, each send
/// answered for itself: dense seqs in array order, idempotency by
/// `client_id`, membership, one notification per group.
@Suite struct SendGroupTests {
    /// A store on a fresh schema whose sends wait `wait` for the commit in
    /// flight (long, so that a test decides what forms a group).
    static func withStore<T: Sendable>(
        _ metrics: TestMetrics, groupSize: Int = StoreOptions.defaultSendGroupSize, wait: Duration = .seconds(30),
        _ body: (ScrollbackStore) async throws -> T
    ) async throws -> T {
        try await StoreMetricsTests.withStore(
            metrics, maximumConnections: 8, sendGroupSize: groupSize, sendGroupWait: wait, body)
    }

    static func groups(_ metrics: TestMetrics) -> (groups: Int64, sends: Int64) {
        (
            metrics.counterTotal(label: "scrollback_send_groups_total", dimensions: []),
            metrics.counterTotal(label: "scrollback_send_group_sends_total", dimensions: [])
        )
    }

    /// Groups refused as a whole and stored one by one.
    static func fallbacks(_ metrics: TestMetrics) -> Int64 {
        metrics.counterTotal(label: "scrollback_send_group_fallbacks_total", dimensions: [])
    }

    /// Polls until `count` sends wait for a group.
    static func waitUntilWaiting(_ count: Int, in store: ScrollbackStore) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while store.sendsWaitingForAGroup < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(store.sendsWaitingForAGroup == count)
    }

    /// A group of sends with and without data and type stores each send's
    /// own (the arrays hold a value per send only when one carries any).
    @Test func aGroupStoresEachSendsDataAndType() async throws {
        let metrics = TestMetrics()
        try await Self.withStore(metrics) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let data = try CustomData(["order": .string("o-1"), "lines": .array([.integer(2)])])
            let attempts: [(String, CustomData?, String?)] = [
                ("with both", data, "order_status"), ("plain", nil, nil), ("a type only", nil, "note"),
                ("data only", data, nil),
            ]
            let messages = try await StoreMetricsTests.holdingRow(of: id, in: store) { holder in
                let first = Task { try await store.send(to: id, from: "bob", body: "first", clientID: nil) }
                try await FailureSemanticsTests.waitUntilBlocked(holder)
                return try await withThrowingTaskGroup(of: (Int, Message).self) { group in
                    for (index, (body, data, type)) in attempts.enumerated() {
                        group.addTask {
                            (index, try await store.send(to: id, from: "alice", body: body, clientID: nil, data: data, type: type).message)
                        }
                        try await Self.waitUntilWaiting(index + 1, in: store)
                    }
                    try await holder.query("ROLLBACK", logger: .init(label: "test"))
                    try await holder.query("BEGIN", logger: .init(label: "test"))
                    var messages = [Message?](repeating: nil, count: attempts.count)
                    for try await (index, message) in group { messages[index] = message }
                    _ = try await first.value
                    return messages.compactMap { $0 }
                }
            }
            #expect(messages.map(\.body) == attempts.map(\.0))
            #expect(messages.map(\.data) == attempts.map(\.1) && messages.map(\.type) == attempts.map(\.2))
            let page = try await store.page(of: id, for: "alice", anchor: .newest, limit: 10)
            #expect(page.messages.reversed().dropFirst().map(\.data) == attempts.map(\.1))
            #expect(Self.groups(metrics).sends >= Int64(attempts.count))
        }
    }

    /// The sends that wait behind a commit held back by a lock go together
    /// when it ends: each gets what it would alone (stored in order, a
    /// replay, a conflict, not a member, no such conversation), a repeated
    /// `client_id` goes in the next group and finds the first, seqs stay
    /// dense, and each group notifies once.
    @Test func sendsWaitingBehindACommitGoTogetherAndEachGetsItsOwnAnswer() async throws {
        let metrics = TestMetrics()
        try await Self.withStore(metrics) { store in
            let one = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let two = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let earlier = try await store.send(to: one, from: "alice", body: "hello", clientID: "k1")
            #expect(earlier == .created(try #require(earlier.message)) && earlier.message.seq == 1)
            let before = Self.groups(metrics)

            typealias Attempt = (conversation: UUID, sender: UserID, body: String, clientID: String?)
            let attempts: [Attempt] = [
                (one, "alice", "a", "x1"),
                (one, "bob", "b @alice", nil),
                (two, "alice", "c", "x2"),
                (one, "carol", "not a member", nil),
                (one, "alice", "hello", "k1"),
                (UUID(), "alice", "nowhere", nil),
                (one, "alice", "a", "x1"),
                (one, "alice", "changed", "k1"),
                (two, "alice", "d", nil),
            ]
            var results: [Result<SendOutcome, StoreError>] = []
            // The channel is the database's: other tests' schemas notify on it too.
            let ours = [one, two].map { $0.uuidString.lowercased() }
            let payloads = try await TestDatabase.feedPayloads(on: store) {
                results = try await StoreMetricsTests.holdingRow(of: one, in: store) { holder in
                    // The first send holds the only group in flight, waiting for the lock.
                    let first = Task { await Self.attempt { try await store.send(to: one, from: "bob", body: "first", clientID: nil) } }
                    try await FailureSemanticsTests.waitUntilBlocked(holder)
                    return try await withThrowingTaskGroup(of: (Int, Result<SendOutcome, StoreError>).self) { group in
                        for (index, attempt) in attempts.enumerated() {
                            group.addTask {
                                let result = await Self.attempt {
                                    try await store.send(
                                        to: attempt.conversation, from: attempt.sender, body: attempt.body,
                                        clientID: attempt.clientID)
                                }
                                return (index, result)
                            }
                            // One at a time: the group holds them in this order.
                            try await Self.waitUntilWaiting(index + 1, in: store)
                        }
                        try await holder.query("ROLLBACK", logger: .init(label: "test"))
                        try await holder.query("BEGIN", logger: .init(label: "test"))
                        var results = [Result<SendOutcome, StoreError>?](repeating: nil, count: attempts.count)
                        for try await (index, result) in group { results[index] = result }
                        let firstResult = await first.value
                        #expect(try firstResult.get().message.seq == 2)
                        return results.map { $0! }
                    }
                }
            }

            // The group: stored in array order after the first send.
            let x1 = try results[0].get()
            #expect(x1 == .created(x1.message) && x1.message.seq == 3 && x1.message.clientId == "x1")
            let bob = try results[1].get()
            #expect(bob == .created(bob.message) && bob.message.seq == 4 && bob.message.sender == "bob")
            let x2 = try results[2].get()
            #expect(x2 == .created(x2.message) && x2.message.seq == 1 && x2.message.conversationId == two)
            #expect(results[3] == .failure(.conversationNotFound))
            #expect(try results[4].get() == .replayed(earlier.message))
            #expect(results[5] == .failure(.conversationNotFound))
            let d = try results[8].get()
            #expect(d == .created(d.message) && d.message.seq == 2 && d.message.conversationId == two)
            // The next group: the repeated client_ids found what the first stored.
            #expect(try results[6].get() == .replayed(x1.message))
            #expect(results[7] == .failure(.idempotencyConflict))

            // Seqs and versions dense, the conversations' counters at the last.
            for (id, count) in [(one, 4), (two, 2)] {
                let seqs = try await store.values(
                    Int64.self, "SELECT seq FROM messages WHERE conversation_id = \(id) ORDER BY seq")
                #expect(seqs == Array(1...Int64(count)))
                let versions = try await store.values(
                    Int64.self, "SELECT version FROM messages WHERE conversation_id = \(id) ORDER BY seq")
                #expect(versions == Array(1...Int64(count)))
                let counters = try await store.values(
                    String.self, "SELECT last_seq || ':' || version FROM conversations WHERE id = \(id)")
                #expect(counters == ["\(count):\(count)"])
            }
            // The mention in a grouped send is recorded.
            #expect(try await store.values(String.self, "SELECT user_id FROM mentions WHERE conversation_id = \(one)") == ["alice"])

            // Three commits: the first send alone, the group, the repeats.
            let after = Self.groups(metrics)
            #expect(Self.fallbacks(metrics) == 0)
            #expect(after.groups - before.groups == 3)
            #expect(after.sends - before.sends == Int64(1 + attempts.count))
            // One notification for the first send, one for the group naming
            // both conversations at their last seq and version; the group of
            // repeats stored nothing and notified nothing.
            let ourPayloads = payloads.filter { payload in ours.contains { payload.contains($0) } }
            #expect(ourPayloads.count == 2, "\(ourPayloads)")
            #expect(ourPayloads.first == "g:\(ours[0]):2:2")
            let group = try #require(ourPayloads.last)
            let events = FeedEvent.events(in: group)
            #expect(group.hasPrefix("g:") && events.count == 2)
            #expect(events.contains(.changed(conversation: one, seq: 4, version: 4)))
            #expect(events.contains(.changed(conversation: two, seq: 2, version: 2)))
        }
    }

    /// Replies go in groups too, and a group stores exactly what the same
    /// sends store one at a time: the same answers (a reply to a missing or
    /// deleted message refused, a non-member refused, a repeated
    /// `client_id` replayed), the same seqs and versions, the same thread
    /// summaries on the root (two replies to one root in one group count
    /// twice and list both participants, the root ending at the version
    /// after the last reply).
    @Test func aGroupOfRepliesStoresWhatTheSameSendsStoreOneByOne() async throws {
        let metrics = TestMetrics()
        try await Self.withStore(metrics) { store in
            typealias Attempt = (sender: UserID, body: String, clientID: String?, replyTo: Int64?)
            let batch: [Attempt] = [
                ("alice", "r1", nil, 1),  // to the root
                ("bob", "r2", nil, 3),  // to a reply: joins the root's thread
                ("carol", "not a member", nil, nil),
                ("alice", "to nothing", nil, 99),
                ("bob", "to a tombstone", nil, 2),
                ("bob", "plain", nil, nil),
                ("alice", "r3", "k", 1),
                ("alice", "r3", "k", 1),  // the same client_id: the next group, a replay
            ]
            func prepare() async throws -> UUID {
                let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
                _ = try await store.send(to: id, from: "alice", body: "root", clientID: nil)
                _ = try await store.send(to: id, from: "bob", body: "doomed", clientID: nil)
                _ = try await store.delete(2, in: id, by: "bob")
                _ = try await store.send(to: id, from: "alice", body: "first reply", clientID: nil, replyTo: 1)
                return id
            }
            func send(_ attempt: Attempt, to id: UUID) async -> Result<SendOutcome, StoreError> {
                await Self.attempt {
                    try await store.send(
                        to: id, from: attempt.sender, body: attempt.body, clientID: attempt.clientID,
                        replyTo: attempt.replyTo)
                }
            }

            // One by one, each awaited: every send a group of one.
            let alone = try await prepare()
            _ = try await store.send(to: alone, from: "alice", body: "first", clientID: nil)
            var aloneResults: [Result<SendOutcome, StoreError>] = []
            for attempt in batch { aloneResults.append(await send(attempt, to: alone)) }

            // Together: the batch waits behind a send held by a lock.
            let grouped = try await prepare()
            let before = Self.groups(metrics)
            let groupedResults = try await StoreMetricsTests.holdingRow(of: grouped, in: store) { holder in
                let first = Task { await Self.attempt { try await store.send(to: grouped, from: "alice", body: "first", clientID: nil) } }
                try await FailureSemanticsTests.waitUntilBlocked(holder)
                return try await withThrowingTaskGroup(of: (Int, Result<SendOutcome, StoreError>).self) { group in
                    for (index, attempt) in batch.enumerated() {
                        group.addTask { (index, await send(attempt, to: grouped)) }
                        try await Self.waitUntilWaiting(index + 1, in: store)
                    }
                    try await holder.query("ROLLBACK", logger: .init(label: "test"))
                    try await holder.query("BEGIN", logger: .init(label: "test"))
                    _ = try await first.value.get()
                    var results = [Result<SendOutcome, StoreError>?](repeating: nil, count: batch.count)
                    for try await (index, result) in group { results[index] = result }
                    return results.map { $0! }
                }
            }
            // The first send, the batch but its repeat, the repeat.
            #expect(Self.groups(metrics).groups - before.groups == 3 && Self.fallbacks(metrics) == 0)

            func answer(_ result: Result<SendOutcome, StoreError>) -> String {
                switch result {
                case .success(.created(let message)):
                    "created \(message.seq) v\(message.version) reply_to \(message.replyTo?.seq ?? 0) root \(message.threadRoot ?? 0)"
                case .success(.replayed(let message)): "replayed \(message.seq)"
                case .failure(let error): "\(error)"
                }
            }
            #expect(groupedResults.map(answer) == aloneResults.map(answer))
            #expect(aloneResults.map(answer) == [
                "created 5 v7 reply_to 1 root 1", "created 6 v9 reply_to 3 root 1", "conversationNotFound",
                "replyTargetMissing(99)", "replyTargetDeleted", "created 7 v11 reply_to 0 root 0",
                "created 8 v12 reply_to 1 root 1", "replayed 8",
            ])
            func state(_ id: UUID) async throws -> [String] {
                try await store.values(
                    String.self,
                    """
                    SELECT concat_ws(' ', seq, sender, body, version, deleted, reply_to, thread_root, reply_count,
                                     array_to_string(thread_participants, ','))
                    FROM messages WHERE conversation_id = \(id) ORDER BY seq
                    """)
                    + store.values(String.self, "SELECT last_seq || ':' || version FROM conversations WHERE id = \(id)")
            }
            let groupedState = try await state(grouped)
            #expect(groupedState == (try await state(alone)))
            #expect(groupedState.first == "1 alice root 13 f 4 alice,bob")
            #expect(groupedState.last == "8:13")
        }
    }

    /// A group PostgreSQL refuses as a whole (a body it cannot store) is
    /// stored one send at a time: only the bad send fails.
    @Test func aGroupRefusedForOneSendFailsOnlyThatSend() async throws {
        let metrics = TestMetrics()
        try await Self.withStore(metrics) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let bodies = ["fine", "nul \u{0} byte", "also fine"]
            let results = try await StoreMetricsTests.holdingRow(of: id, in: store) { holder in
                let first = Task { await Self.attempt { try await store.send(to: id, from: "alice", body: "first", clientID: nil) } }
                try await FailureSemanticsTests.waitUntilBlocked(holder)
                return try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                    for (index, body) in bodies.enumerated() {
                        group.addTask {
                            let stored = try? await store.send(to: id, from: "alice", body: body, clientID: "n\(index)")
                            return (index, stored != nil)
                        }
                        try await Self.waitUntilWaiting(index + 1, in: store)
                    }
                    try await holder.query("ROLLBACK", logger: .init(label: "test"))
                    try await holder.query("BEGIN", logger: .init(label: "test"))
                    _ = try await first.value.get()
                    var stored = [Bool](repeating: false, count: bodies.count)
                    for try await (index, ok) in group { stored[index] = ok }
                    return stored
                }
            }
            #expect(results == [true, false, true])
            // The group was refused once, and its sends went one by one.
            #expect(Self.fallbacks(metrics) == 1)
            let stored = try await store.values(
                String.self, "SELECT body FROM messages WHERE conversation_id = \(id) ORDER BY seq")
            // The fallback stores its sends side by side, in either order.
            #expect(stored.first == "first" && stored.dropFirst().sorted() == ["also fine", "fine"])
        }
    }

    /// A group that waits for a conversation's lock while a member's
    /// removal holds it reads membership after the removal commits: the
    /// removed member's send is refused, the others are stored.
    @Test func aGroupThatWaitedForARemovalSeesIt() async throws {
        let metrics = TestMetrics()
        try await Self.withStore(metrics) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
            let other = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let results = try await StoreMetricsTests.holdingRow(of: other, in: store) { first in
                // A send to the other conversation holds the only group in flight.
                let alone = Task { await Self.attempt { try await store.send(to: other, from: "alice", body: "0", clientID: nil) } }
                try await FailureSemanticsTests.waitUntilBlocked(first)
                return try await withThrowingTaskGroup(of: (Int, Result<SendOutcome, StoreError>).self) { group in
                    for (index, sender) in ["bob", "alice"].enumerated() {
                        group.addTask {
                            (index, await Self.attempt { try await store.send(to: id, from: UserID(rawValue: sender), body: "hi", clientID: nil) })
                        }
                        try await Self.waitUntilWaiting(index + 1, in: store)
                    }
                    // bob's removal, as removeMember makes it, not yet committed.
                    return try await TestDatabase.otherConnection(to: store) { removal in
                        try await removal.query("BEGIN", logger: .init(label: "test"))
                        try await removal.query("SELECT id FROM conversations WHERE id = \(id) FOR UPDATE", logger: .init(label: "test"))
                        try await removal.query(
                            "DELETE FROM members WHERE conversation_id = \(id) AND user_id = 'bob'", logger: .init(label: "test"))
                        // The group starts and waits for the removal's lock.
                        try await first.query("ROLLBACK", logger: .init(label: "test"))
                        try await first.query("BEGIN", logger: .init(label: "test"))
                        #expect(try await alone.value.get().message.seq == 1)
                        try await FailureSemanticsTests.waitUntilBlocked(removal)
                        try await removal.query("COMMIT", logger: .init(label: "test"))
                        var results = [Result<SendOutcome, StoreError>?](repeating: nil, count: 2)
                        for try await (index, result) in group { results[index] = result }
                        return results.map { $0! }
                    }
                }
            }
            #expect(results[0] == .failure(.conversationNotFound))
            #expect(try results[1].get().message.seq == 1)
            #expect(try await store.values(String.self, "SELECT sender FROM messages WHERE conversation_id = \(id)") == ["alice"])
            #expect(Self.groups(metrics).groups == 2 && Self.fallbacks(metrics) == 0)
        }
    }

    /// With grouping off, concurrent sends are each their own statement
    /// and nothing is counted as a group.
    @Test(arguments: [0, 1])
    func groupingCanBeTurnedOff(size: Int) async throws {
        let metrics = TestMetrics()
        try await Self.withStore(metrics, groupSize: size) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<20 {
                    group.addTask { _ = try await store.send(to: id, from: "alice", body: "m\(n)", clientID: "c\(n)") }
                }
                try await group.waitForAll()
            }
            #expect(Self.groups(metrics) == (0, 0))
            let seqs = try await store.values(Int64.self, "SELECT seq FROM messages WHERE conversation_id = \(id) ORDER BY seq")
            #expect(seqs == Array(1...20))
        }
    }

    /// A notification of a group names every conversation it changed; one
    /// this version cannot read gives no event.
    @Test func groupPayloadsParse() {
        let a = UUID()
        let b = UUID()
        #expect(FeedEvent.events(in: "g:\(a):3:7:\(b):1:1") == [
            .changed(conversation: a, seq: 3, version: 7), .changed(conversation: b, seq: 1, version: 1),
        ])
        #expect(FeedEvent.events(in: "m:\(a):3:7") == [.changed(conversation: a, seq: 3, version: 7)])
        for bad in ["g:", "g:\(a):3", "g:\(a):3:7:\(b)", "g:nope:1:1", "g:\(a):x:1", "q:\(a):1:1"] {
            #expect(FeedEvent.events(in: bad).isEmpty, "\(bad)")
        }
    }

    static func attempt(_ body: () async throws -> SendOutcome) async -> Result<SendOutcome, StoreError> {
        do {
            return .success(try await body())
        } catch let error as StoreError {
            return .failure(error)
        } catch {
            Issue.record("not a store error: \(error)")
            return .failure(.unavailable)
        }
    }
}
