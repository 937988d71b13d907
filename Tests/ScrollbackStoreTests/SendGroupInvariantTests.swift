import Foundation
import Logging
import MetricsTestKit
import NIOConcurrencyHelpers
import PostgresNIO
import ScrollbackEmbeddedPostgres
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Sends committed in groups under the conditions that break them: 500
/// senders at once, each replaying its sends and reusing a `client_id` with
/// another body, members removed while they send, and the database crashing
/// in the middle of a group (its backend killed, PostgreSQL restarting and
/// recovering by itself). Every sender retries what was unavailable or
/// unknown with the same `client_id` until it has an answer. Afterwards:
/// seqs dense in every conversation, every answered message stored once as
/// answered, every replay the original, nothing stored for a removed member
/// after the removal. Runs on a cluster of its own, which it crashes.
@Suite struct SendGroupInvariantTests {
    static let conversations = 20
    static let sendersPerConversation = 25
    static let sendsEach = 6
    /// Senders removed from each conversation while they send.
    static let removedPerConversation = 2

    /// What the senders were told, and what they saw that they must not.
    struct Ledger: Sendable {
        /// `conversation/sender/client_id` -> the message answered.
        var answered: [String: Message] = [:]
        /// Seqs created by sends that started after a removal in their
        /// conversation was answered: (conversation, seq, started).
        var created: [(UUID, Int64, ContinuousClock.Instant)] = []
        var removals: [UUID: (users: Set<UserID>, answered: ContinuousClock.Instant)] = [:]
        var violations: [String] = []
        var unknown = 0
        var unavailable = 0
    }

    @Test func fiveHundredSendersWithReplaysRemovalsAndACrashMidGroupKeepEveryInvariant() async throws {
        var logger = Logger(label: "scrollback.tests.send-group-invariants")
        logger.logLevel = .critical
        let cluster = EmbeddedPostgres(
            stateDirectory: ".scrollback", clusterName: "test-send-groups-postgres",
            // Durable: a crash must not lose what was answered as committed.
            options: .init(durable: true, maxConnections: 60), logger: logger)
        // Started before the slots are taken: the other tests need not wait for an initdb.
        try await offThePool { try cluster.stopAnyRunning() }
        let running = try await offThePool { try cluster.start() }
        defer { try? cluster.stopAnyRunning() }
        let url = try DatabaseURL(running.url)
        // Alone among the tests that hold slots: its load would delay their servers past their deadlines.
        try await TestSlots.alone { try await Self.run(on: url, logger: logger) }
    }

    static func run(on url: DatabaseURL, logger: Logger) async throws {
        // A commit answered must survive the crash.
        let synchronous = try await TestDatabase.admin(url) { admin in
            try await admin.query("SHOW synchronous_commit", logger: logger).collect().first?.decode(String.self)
        }
        try #require(synchronous == "on")
        // A schema of its own: a cluster left from an earlier run keeps its data.
        let schema = "run_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await TestDatabase.admin(url) { try await $0.query("CREATE SCHEMA \(unescaped: schema)", logger: logger) }
        let metrics = TestMetrics()
        // The group whose backend is killed answers only at its deadline (the
        // statement timeout and 2 s: ScrollbackStore.committed), with every
        // slot held meanwhile: short enough not to idle the run, far above
        // what a send takes here.
        let store = ScrollbackStore(
            url: url,
            options: StoreOptions(
                maximumConnections: 12, statementTimeout: .seconds(6), lockTimeout: .seconds(6), searchPath: schema),
            metrics: metrics, logger: logger)
        let ledger = NIOLockedValueBox(Ledger())

        try await TestDatabase.running(store) {
            try await store.migrate()
            var conversations: [(id: UUID, owner: UserID, senders: [UserID])] = []
            for c in 0..<Self.conversations {
                let owner = UserID(rawValue: "owner\(c)")
                let senders = (0..<Self.sendersPerConversation).map { UserID(rawValue: "u\(c)-\($0)") }
                let id = try await store.createConversation(creator: owner, title: nil, members: senders).id
                conversations.append((id, owner, senders))
            }
            let killed = NIOLockedValueBox<Int32?>(nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (id, owner, senders) in conversations {
                    for sender in senders {
                        group.addTask { await Self.sender(sender, in: id, store: store, ledger: ledger) }
                    }
                    group.addTask {
                        try await Self.remover(
                            Array(senders.prefix(Self.removedPerConversation)), from: id, by: owner, store: store,
                            ledger: ledger)
                    }
                }
                group.addTask { try await Self.crashMidGroup(url, after: 600, ledger: ledger, killed: killed) }
                try await group.waitForAll()
            }

            let final = ledger.withLockedValue { $0 }
            #expect(final.violations.isEmpty, "\(final.violations.prefix(20))")
            #expect(killed.withLockedValue { $0 } != nil, "no group was seen running to crash")
            // The crash cut a commit in flight: its sends heard outcome_unknown, and settled it by retrying.
            #expect(final.unknown >= 1)
            let groups = metrics.counterTotal(label: "scrollback_send_groups_total", dimensions: [])
            let grouped = metrics.counterTotal(label: "scrollback_send_group_sends_total", dimensions: [])
            #expect(groups > 0 && Double(grouped) / Double(groups) > 2, "groups \(groups), sends \(grouped)")
            // Every group was stored by one statement: none fell back to sends alone.
            #expect(metrics.counterTotal(label: "scrollback_send_group_fallbacks_total", dimensions: []) == 0)

            for (id, _, senders) in conversations {
                try await Self.check(id, senders: senders, store: store, ledger: final)
            }
        }
    }

    /// Sends `sendsEach` messages, replaying every other one and reusing one
    /// `client_id` with another body, until removed.
    static func sender(
        _ sender: UserID, in id: UUID, store: ScrollbackStore, ledger: NIOLockedValueBox<Ledger>
    ) async {
        for n in 0..<sendsEach {
            // Everyone's last send comes after the removals in its
            // conversation: a removed member's must be refused.
            if n == sendsEach - 1 {
                let deadline = ContinuousClock.now + .seconds(120)
                while ledger.withLockedValue({ $0.removals[id] == nil }), ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            let clientID = "c\(n)"
            let body = "\(sender.rawValue) says \(n)"
            let started = ContinuousClock.now
            let result = await settle(ledger) { try await store.send(to: id, from: sender, body: body, clientID: clientID) }
            let key = "\(id)/\(sender.rawValue)/\(clientID)"
            switch result {
            case .success(let outcome):
                let message = outcome.message
                ledger.withLockedValue { ledger in
                    if message.body != body || message.sender != sender.rawValue || message.clientId != clientID {
                        ledger.violations.append("\(key): answered with another message \(message)")
                    }
                    if let removal = ledger.removals[id], removal.users.contains(sender), started > removal.answered {
                        ledger.violations.append("\(key): stored for a member removed before the send")
                    }
                    ledger.answered[key] = message
                    if case .created = outcome { ledger.created.append((id, message.seq, started)) }
                }
                if n % 2 == 1 {
                    let replay = await settle(ledger) {
                        try await store.send(to: id, from: sender, body: body, clientID: clientID)
                    }
                    if case .success(let again) = replay, again != .replayed(message) {
                        ledger.withLockedValue { $0.violations.append("\(key): replay answered \(again)") }
                    }
                    if case .failure(let error) = replay, !removed(sender, from: id, ledger), error != .conversationNotFound {
                        ledger.withLockedValue { $0.violations.append("\(key): replay failed \(error)") }
                    }
                }
                if n == 2 {
                    let conflict = await settle(ledger) {
                        try await store.send(to: id, from: sender, body: "another body", clientID: clientID)
                    }
                    let expected: Result<SendOutcome, StoreError> = .failure(.idempotencyConflict)
                    if conflict != expected, conflict != .failure(.conversationNotFound) {
                        ledger.withLockedValue { $0.violations.append("\(key): reuse answered \(conflict)") }
                    }
                }
            case .failure(.conversationNotFound):
                // Only a removed member is refused; they stop.
                if !removed(sender, from: id, ledger) {
                    ledger.withLockedValue { $0.violations.append("\(key): refused a member") }
                }
                return
            case .failure(let error):
                ledger.withLockedValue { $0.violations.append("\(key): \(error)") }
                return
            }
        }
    }

    static func removed(_ sender: UserID, from id: UUID, _ ledger: NIOLockedValueBox<Ledger>) -> Bool {
        // A removal may still be on its way to its answer: its users count as removed.
        Int(sender.rawValue.split(separator: "-").last ?? "") ?? .max < removedPerConversation
    }

    /// Removes `users` once the conversation has some messages.
    static func remover(
        _ users: [UserID], from id: UUID, by owner: UserID, store: ScrollbackStore, ledger: NIOLockedValueBox<Ledger>
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ledger.withLockedValue({ ledger in ledger.answered.keys.filter { $0.hasPrefix("\(id)/") }.count }) < 20,
            ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        for user in users {
            while true {
                do {
                    try await store.removeMember(user, from: id, by: owner)
                    break
                } catch StoreError.memberNotFound {
                    break  // an earlier attempt whose answer was lost did it
                } catch StoreError.unavailable, StoreError.outcomeUnknown {
                    try await Task.sleep(for: .milliseconds(50))
                }
            }
        }
        let answered = ContinuousClock.now
        ledger.withLockedValue { $0.removals[id] = (Set(users), answered) }
    }

    /// Kills the backend of a group in flight once `count` sends were
    /// answered: PostgreSQL treats it as a crash, ends every session,
    /// recovers and accepts connections again by itself.
    static func crashMidGroup(
        _ url: DatabaseURL, after count: Int, ledger: NIOLockedValueBox<Ledger>, killed: NIOLockedValueBox<Int32?>
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(120)
        while ledger.withLockedValue({ $0.answered.count }) < count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        while ContinuousClock.now < deadline {
            let pids = try await TestDatabase.admin(url) { admin in
                try await admin.query(
                    """
                    SELECT pid FROM pg_stat_activity
                    WHERE state = 'active' AND query LIKE '%array_replace($5, 0::int8, NULL)%' AND pid <> pg_backend_pid()
                    """, logger: .init(label: "test")
                ).collect().map { try $0.decode(Int32.self) }
            }
            if let pid = pids.first {
                kill(pid, SIGKILL)
                killed.withLockedValue { $0 = pid }
                return
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Runs `send` until it has an answer: unavailable and unknown outcomes
    /// are retried as they are, with the same `client_id`.
    static func settle(
        _ ledger: NIOLockedValueBox<Ledger>, _ send: () async throws -> SendOutcome
    ) async -> Result<SendOutcome, StoreError> {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            do {
                return .success(try await send())
            } catch StoreError.outcomeUnknown where ContinuousClock.now < deadline {
                ledger.withLockedValue { $0.unknown += 1 }
            } catch StoreError.unavailable where ContinuousClock.now < deadline {
                ledger.withLockedValue { $0.unavailable += 1 }
            } catch let error as StoreError {
                return .failure(error)
            } catch {
                return .failure(.unavailable)
            }
            try? await Task.sleep(for: .milliseconds(Int.random(in: 20...100)))
        }
    }

    /// The conversation as stored against what its senders were told.
    static func check(_ id: UUID, senders: [UserID], store: ScrollbackStore, ledger: Ledger) async throws {
        let rows = try await store.values(
            String.self,
            "SELECT seq || ' ' || version || ' ' || sender || ' ' || client_id FROM messages WHERE conversation_id = \(id) ORDER BY seq")
        let stored = rows.map { $0.split(separator: " ").map(String.init) }
        let seqs = stored.map { Int64($0[0])! }
        try #require(!seqs.isEmpty)
        #expect(seqs == Array(1...Int64(seqs.count)), "seqs with a gap in \(id)")
        #expect(stored.allSatisfy { $0[0] == $0[1] }, "a version apart from its seq in \(id)")
        let counters = try await store.values(
            String.self, "SELECT last_seq || ' ' || version FROM conversations WHERE id = \(id)")
        #expect(counters == ["\(seqs.count) \(seqs.count)"])

        var keys = Set<String>()
        for row in stored {
            let key = "\(id)/\(row[2])/\(row[3])"
            #expect(keys.insert(key).inserted, "\(key) stored twice")
            if let message = ledger.answered[key] {
                #expect(message.seq == Int64(row[0])!, "\(key) answered with seq \(message.seq), stored at \(row[0])")
            } else {
                // Stored, never answered: only a removed member's send whose
                // outcome was unknown and whose retry came after the removal.
                #expect(ledger.removals[id]?.users.contains(UserID(rawValue: row[2])) == true, "\(key) stored but never answered")
            }
        }
        // Every answered message is stored.
        for key in ledger.answered.keys where key.hasPrefix("\(id)/") {
            #expect(keys.contains(key), "\(key) answered but not stored")
        }
        // Every sender that was not removed sent everything.
        for sender in senders.dropFirst(removedPerConversation) {
            for n in 0..<sendsEach {
                #expect(keys.contains("\(id)/\(sender.rawValue)/c\(n)"), "\(sender) c\(n) missing")
            }
        }
        // Nothing of a removed member after the removal: every message of
        // theirs comes before any created by a send that started after it.
        if let removal = ledger.removals[id] {
            let removedSeqs = stored.filter { removal.users.contains(UserID(rawValue: $0[2])) }.map { Int64($0[0])! }
            let after = ledger.created.filter { $0.0 == id && $0.2 > removal.answered }.map(\.1)
            if let last = removedSeqs.max(), let first = after.min() {
                #expect(last < first, "a removed member's message at \(last), after a send at \(first) that began after the removal")
            }
            #expect(!after.isEmpty, "no send began after the removal in \(id)")
        } else {
            Issue.record("no removal in \(id)")
        }
    }
}
