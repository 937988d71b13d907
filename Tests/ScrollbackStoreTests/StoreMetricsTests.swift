import Foundation
import Logging
import MetricsTestKit
import PostgresNIO
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// What the store reports to the metrics factory it is given: the pool's
/// leased, idle and waiting counts as they change, each operation timed
/// under its name, and the timeouts that ended statements, by kind.
@Suite struct StoreMetricsTests {
    /// A store recording into `metrics`, running on a fresh migrated schema.
    static func withStore<T: Sendable>(
        _ metrics: TestMetrics, maximumConnections: Int = 4,
        statementTimeout: Duration = TestDatabase.patientTimeout, lockTimeout: Duration = TestDatabase.patientTimeout,
        sendGroupSize: Int = StoreOptions.defaultSendGroupSize,
        sendGroupWait: Duration = StoreOptions.defaultSendGroupWait,
        _ body: (ScrollbackStore) async throws -> T
    ) async throws -> T {
        try await TestDatabase.withSchema { url, schema in
            var logger = Logger(label: "scrollback.tests.store-metrics")
            logger.logLevel = .critical
            let store = ScrollbackStore(
                url: url,
                options: StoreOptions(
                    maximumConnections: maximumConnections, statementTimeout: statementTimeout,
                    lockTimeout: lockTimeout, searchPath: schema, sendGroupSize: sendGroupSize,
                    sendGroupWait: sendGroupWait),
                metrics: metrics, logger: logger)
            return try await TestDatabase.running(store) {
                try await store.migrate()
                return try await body(store)
            }
        }
    }

    static func meter(_ metrics: TestMetrics, _ name: String) throws -> Double? {
        try metrics.expectMeter("scrollback_db_pool_\(name)").lastValue
    }

    static func timeouts(_ metrics: TestMetrics, _ kind: String) -> Int64 {
        metrics.counterTotal(label: "scrollback_db_timeouts_total", dimensions: [("kind", kind)])
    }

    /// Holds conversation `id`'s row locked from another client while `body`
    /// runs (or until `body` rolls back on `holder` itself).
    @discardableResult
    static func holdingRow<T: Sendable>(
        of id: UUID, in store: ScrollbackStore, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await TestDatabase.otherConnection(to: store) { holder in
            try await holder.query("BEGIN", logger: .init(label: "test"))
            try await holder.query(
                "SELECT * FROM conversations WHERE id = \(id) FOR UPDATE", logger: .init(label: "test"))
            let result = try await body(holder)
            try await holder.query("ROLLBACK", logger: .init(label: "test"))
            return result
        }
    }

    /// With one connection held by a send waiting for a locked row, a second
    /// caller waits for the pool: leased 1, idle 0, waiting 1; once the row
    /// is released both finish and the gauges return to an idle pool.
    static let heldAtLeast = Duration.milliseconds(300)

    @Test func thePoolGaugesFollowLeasesAndWaiters() async throws {
        let metrics = TestMetrics()
        try await Self.withStore(metrics, maximumConnections: 1) { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            #expect(try Self.meter(metrics, "max_connections") == 1)
            #expect(try Self.meter(metrics, "idle_connections") == 1)
            try await Self.holdingRow(of: conversation.id, in: store) { holder in
                let send = Task { try await store.send(to: conversation.id, from: "alice", body: "hi", clientID: nil) }
                try await FailureSemanticsTests.waitUntilBlocked(holder)
                let read = Task { try await store.conversation(conversation.id, for: "alice") }
                let deadline = ContinuousClock.now + .seconds(10)
                while try Self.meter(metrics, "waiting_requests") != 1, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(25))
                }
                #expect(try Self.meter(metrics, "waiting_requests") == 1)
                #expect(try Self.meter(metrics, "leased_connections") == 1)
                #expect(try Self.meter(metrics, "idle_connections") == 0)
                // The send is blocked on the row from here: held at least this long.
                try await Task.sleep(for: Self.heldAtLeast)
                try await holder.query("ROLLBACK", logger: .init(label: "test"))
                _ = try await send.value
                _ = try await read.value
            }
            #expect(try Self.meter(metrics, "waiting_requests") == 0)
            #expect(try Self.meter(metrics, "leased_connections") == 0)
            #expect(try Self.meter(metrics, "idle_connections") == 1)
            let sends = try metrics.expectTimer("scrollback_db_statement_duration_seconds", [("statement", "send")])
            #expect(sends.values.count == 1)
            let reads = try metrics.expectTimer(
                "scrollback_db_statement_duration_seconds", [("statement", "conversation")])
            #expect(reads.values.count == 1)
            // The send held its connection while it waited for the row, and
            // that wait is in its time (nanoseconds).
            #expect(sends.values[0] >= Int64(Self.heldAtLeast / .nanoseconds(1)), "\(sends.values[0]) ns")
        }
    }

    /// A send waiting for a locked row is ended by whichever timeout is
    /// short, and counted under that kind only.
    @Test(arguments: ["lock_timeout", "statement_timeout"])
    func aTimeoutIsCountedByItsKind(_ kind: String) async throws {
        let metrics = TestMetrics()
        // A statement timeout bounds every statement, the conversation's
        // creation too: 3 s, which a busy machine does not reach. A lock
        // timeout bounds only the wait for the held row.
        let short = kind == "statement_timeout" ? Duration.seconds(3) : .milliseconds(300)
        let patient = TestDatabase.patientTimeout
        try await Self.withStore(
            metrics, statementTimeout: kind == "statement_timeout" ? short : patient,
            lockTimeout: kind == "lock_timeout" ? short : patient
        ) { store in
            let conversation = try await store.createConversation(creator: "alice", title: nil, members: [])
            try await Self.holdingRow(of: conversation.id, in: store) { _ in
                await #expect(throws: StoreError.unavailable) {
                    try await store.send(to: conversation.id, from: "alice", body: "hi", clientID: nil)
                }
            }
            for counted in ["statement_timeout", "lock_timeout", "no_answer", "no_connection"] {
                #expect(Self.timeouts(metrics, counted) == (counted == kind ? 1 : 0), "\(counted)")
            }
        }
    }
}
