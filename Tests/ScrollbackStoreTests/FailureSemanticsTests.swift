import Foundation
import Logging
import PostgresNIO
import ScrollbackModels
@testable import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// What the store promises when the database is slow, contended or racing:
/// deadlines that really end a request, answers only after the commit,
/// membership checked under the lock it races with, and replays that never
/// wedge the pool.
@Suite struct FailureSemanticsTests {
    /// Polls until some backend of the store waits for a lock.
    static func waitUntilBlocked(_ connection: PostgresConnection) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let rows = try await connection.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE application_name = 'scrollback' AND wait_event_type = 'Lock'
                """,
                logger: .init(label: "test")
            ).collect()
            if try rows.first?.decode(Int.self) ?? 0 > 0 { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("no statement of the store ever waited for the lock")
    }

    /// A row held by another client: every send to it waits at most the lock
    /// timeout and is then refused (rolled back), long before the holder
    /// lets go; afterwards nothing was stored and the pool serves at once.
    @Test func aSendWaitingForALockIsEndedByTheDatabaseNotByTheHolder() async throws {
        // The lock timeout is what ends each send; the statement timeout (and
        // with it the deadline that would answer `outcome_unknown`) is long,
        // so that a busy machine does not reach it first.
        try await TestDatabase.withStore(maximumConnections: 4, lockTimeout: .milliseconds(300)) {
            store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            let released = ReleaseFlag()
            try await TestDatabase.otherConnection(to: store) { holder in
                try await holder.query("BEGIN", logger: .init(label: "test"))
                try await holder.query(
                    "SELECT * FROM conversations WHERE id = \(conversation.id) FOR UPDATE", logger: .init(label: "test"))
                // More senders than pooled connections: none may wait for the holder.
                let outcomes = await withTaskGroup(of: Result<SendOutcome, any Error>.self) { group in
                    for index in 0..<12 {
                        group.addTask {
                            let outcome: Result<SendOutcome, any Error>
                            do {
                                outcome = .success(
                                    try await store.send(
                                        to: conversation.id, from: "alice", body: "m\(index)", clientID: "c\(index)"))
                            } catch {
                                outcome = .failure(error)
                            }
                            #expect(!released.isSet, "a send waited until the lock was released")
                            return outcome
                        }
                    }
                    return await group.reduce(into: []) { $0.append($1) }
                }
                released.set()
                try await holder.query("ROLLBACK", logger: .init(label: "test"))
                for outcome in outcomes {
                    #expect(throws: StoreError.unavailable) { try outcome.get() }
                }
            }
            // Nothing committed: the next send takes seq 1, at once.
            let next = try await store.send(to: conversation.id, from: "alice", body: "after", clientID: "c0")
            #expect(next == .created(next.message))
            #expect(next.message.seq == 1)
            #expect(await store.ping())
        }
    }

    /// The first rows of a large result reach the client before PostgreSQL
    /// commits (here the commit is slowed by a deferred trigger): a write
    /// answers only once its statement's result has been read to the end,
    /// which PostgreSQL sends with the commit, so what it wrote is visible to
    /// every other client by then. Checked on the store's statement runner,
    /// which every write goes through, with a result of three 16 KB rows (a
    /// single row cannot show it: its tail stays in PostgreSQL's send buffer
    /// until the commit).
    @Test func aWriteAnswersOnlyAfterItsCommit() async throws {
        try await TestDatabase.withStore { store in
            _ = try await store.values(
                Int.self,
                """
                CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN PERFORM pg_sleep(0.5); RETURN NULL; END $$
                """)
            _ = try await store.values(
                Int.self,
                """
                CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON users
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()
                """)
            func visible(_ query: PostgresQuery) async throws -> Int? {
                try await TestDatabase.otherConnection(to: store) { other in
                    try await other.query(query, logger: .init(label: "test")).collect().first?.decode(Int.self)
                }
            }
            // 16 KB of UTF-8 per row, twice PostgreSQL's send buffer: every
            // row but the last is flushed to the client before the commit.
            let big = String(repeating: "😀", count: 4_000)
            let inserted = try await store.values(
                String.self,
                "INSERT INTO users (id) SELECT \(big) || g FROM generate_series(1, 3) AS g RETURNING id")
            #expect(inserted.count == 3)
            #expect(try await visible("SELECT count(*) FROM users") == 3)
        }
    }

    /// A removal holds the conversation row while a send (or an edit) from
    /// the member being removed waits for it: once the removal commits, the
    /// waiting write sees it and is refused; nothing of it is stored.
    @Test(arguments: ["send", "edit"])
    func aWriteThatWaitedForARemovalSeesIt(_ write: String) async throws {
        try await TestDatabase.withStore { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
            let original = try await store.send(to: conversation.id, from: "bob", body: "original", clientID: nil)
            try await TestDatabase.otherConnection(to: store) { remover in
                try await remover.query("BEGIN", logger: .init(label: "test"))
                try await remover.query(
                    "SELECT * FROM conversations WHERE id = \(conversation.id) FOR UPDATE", logger: .init(label: "test"))
                let blocked = Task {
                    if write == "send" {
                        _ = try await store.send(to: conversation.id, from: "bob", body: "too late", clientID: nil)
                    } else {
                        _ = try await store.edit(original.message.seq, in: conversation.id, by: "bob", body: "too late")
                    }
                }
                try await Self.waitUntilBlocked(remover)
                try await remover.query(
                    "DELETE FROM members WHERE conversation_id = \(conversation.id) AND user_id = 'bob'",
                    logger: .init(label: "test"))
                try await remover.query("COMMIT", logger: .init(label: "test"))
                await #expect(throws: StoreError.conversationNotFound) { try await blocked.value }
            }
            let page = try await store.page(of: conversation.id, for: "alice", anchor: .newest, limit: 10)
            #expect(page.messages.map(\.body) == ["original"])
            #expect(page.lastSeq == 1)
        }
    }

    /// Sixteen clients re-send one stored message (same client_id, same
    /// body) over and over, through a small pool: every retry is the
    /// original, and afterwards the pool still serves a new send and a ping.
    @Test func aRetryStormLeavesThePoolServing() async throws {
        try await TestDatabase.withStore(maximumConnections: 4) { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            let first = try await store.send(to: conversation.id, from: "alice", body: "once", clientID: "x1")
            let replays = try await withThrowingTaskGroup(of: [SendOutcome].self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        var outcomes: [SendOutcome] = []
                        for _ in 0..<40 {
                            outcomes.append(
                                try await store.send(to: conversation.id, from: "alice", body: "once", clientID: "x1"))
                        }
                        return outcomes
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(replays.count == 640)
            #expect(replays.allSatisfy { $0 == .replayed(first.message) })
            let next = try await store.send(to: conversation.id, from: "alice", body: "new", clientID: "x2")
            #expect(next.message.seq == 2)
            #expect(await store.ping())
        }
    }

    /// Concurrent first sends of one client_id (a retry racing the original)
    /// store one message; every other attempt gets it back as a replay.
    @Test func concurrentFirstSendsOfOneClientIDStoreOneMessage() async throws {
        try await TestDatabase.withStore(maximumConnections: 8) { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            for round in 0..<10 {
                let outcomes = try await withThrowingTaskGroup(of: SendOutcome.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            try await store.send(
                                to: conversation.id, from: "alice", body: "tap \(round)", clientID: "race-\(round)")
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let created = outcomes.filter { if case .created = $0 { true } else { false } }
                #expect(created.count == 1)
                #expect(Set(outcomes.map(\.message.seq)) == [Int64(round + 1)])
            }
            let page = try await store.page(of: conversation.id, for: "alice", anchor: .newest, limit: 50)
            #expect(page.lastSeq == 10)
            #expect(page.messages.map(\.seq) == Array((1...10).reversed()))
        }
    }

    /// A proof of a commit that the driver never answers (as after a backend
    /// ended in its commit) is given up at its limit: the write answers
    /// `outcome_unknown` and the connection is closed, so its lease goes back
    /// to the pool instead of staying out for good.
    @Test func aProofThatNeverAnswersIsGivenUpAtItsLimitAndItsConnectionClosed() async throws {
        try await TestDatabase.withStore { store in
            try await TestDatabase.otherConnection(to: store) { connection in
                let started = ContinuousClock.now
                await #expect(throws: StoreError.outcomeUnknown) {
                    try await ScrollbackStore.committed(
                        on: connection, logger: Logger(label: "test"), within: .milliseconds(300)
                    ) {
                        // Stands for a query the driver never ends.
                        try await Task.sleep(for: .seconds(120))
                        return 1
                    }
                }
                #expect(ContinuousClock.now - started < .seconds(30))
                try await connection.closeFuture.get()
                #expect(connection.isClosed)
            }
        }
    }

    /// The backend of a write ends while the write's implicit transaction
    /// commits (a deferred trigger holds the commit; the backend is
    /// terminated in it). PostgreSQL has already queued the statement's
    /// completion, which reaches the client before the backend goes, but
    /// nothing was committed: the write answers `outcome_unknown`, never
    /// done, and nothing of it is stored. (The query that proves a commit is
    /// not failed by the driver when the backend ends this way: the answer
    /// comes at the request's deadline, here the 10 s statement timeout + 2 s.)
    /// Sends are covered by the crash test of send groups; these are the
    /// other writes, through the same runner.
    @Test(arguments: ["edit", "read"])
    func aWriteWhoseCommitNeverHappenedIsNotAnsweredAsDone(_ write: String) async throws {
        try await TestDatabase.withStore(statementTimeout: .seconds(10)) { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
            let original = try await store.send(to: conversation.id, from: "alice", body: "original", clientID: nil)
            // The trigger takes an advisory lock of this test's own before it
            // sleeps: other tests' backends cannot be mistaken for the writer.
            let key = Int32.random(in: 1...Int32.max)
            let table = write == "edit" ? "messages" : "members"
            _ = try await store.values(
                Int.self,
                """
                CREATE FUNCTION stall_commit() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN PERFORM pg_advisory_xact_lock(\(unescaped: String(key))); PERFORM pg_sleep(120); RETURN NULL; END $$
                """)
            _ = try await store.values(
                Int.self,
                """
                CREATE CONSTRAINT TRIGGER stall_commit AFTER UPDATE ON \(unescaped: table)
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION stall_commit()
                """)
            let writing = Task {
                if write == "edit" {
                    _ = try await store.edit(original.message.seq, in: conversation.id, by: "alice", body: "edited")
                } else {
                    _ = try await store.markRead(original.message.seq, in: conversation.id, by: "bob")
                }
            }
            try await TestDatabase.otherConnection(to: store) { other in
                let deadline = ContinuousClock.now + .seconds(60)
                var terminated = false
                while !terminated, ContinuousClock.now < deadline {
                    let pids = try await other.query(
                        """
                        SELECT pid FROM pg_locks
                        WHERE locktype = 'advisory' AND classid = 0 AND objid = \(unescaped: String(key)) AND granted
                        """,
                        logger: .init(label: "test")
                    ).collect().map { try $0.decode(Int32.self) }
                    for pid in pids {
                        _ = try await other.query("SELECT pg_terminate_backend(\(pid))", logger: .init(label: "test")).collect()
                        terminated = true
                    }
                    if !terminated { try await Task.sleep(for: .milliseconds(20)) }
                }
                #expect(terminated, "the write never reached its commit")
            }
            await #expect(throws: StoreError.outcomeUnknown) { try await writing.value }
            _ = try await store.values(Int.self, "DROP TRIGGER stall_commit ON \(unescaped: table)")
            let page = try await store.page(of: conversation.id, for: "bob", anchor: .newest, limit: 10)
            #expect(page.messages.map(\.body) == ["original"], "the edit was not stored")
            let read = try await store.values(
                Int64.self, "SELECT read_seq FROM members WHERE conversation_id = \(conversation.id) AND user_id = 'bob'")
            #expect(read == [0], "the read marker did not move")
        }
    }
}

/// Set once, read from any task.
final class ReleaseFlag: @unchecked Sendable {
    // `@unchecked Sendable`: the one field is only touched under `lock`.
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
