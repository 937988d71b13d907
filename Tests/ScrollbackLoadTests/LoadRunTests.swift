import AsyncHTTPClient
import Foundation
import ScrollbackModels
import ScrollbackTestSupport
@testable import scrollback_load
import Testing

/// The load test itself, run against two real instances: a clean run
/// passes its check, and a run whose deliveries are broken fails it, naming
/// the conversation and the seq.
@Suite(.serialized, .slotsAhead) struct LoadRunTests {
    static let settings = ScenarioSettings(
        seconds: 3, users: 6, conversations: 2, members: 3, rate: 4, subscribers: 6, readers: 1, serverPIDs: [],
        disruptCommand: nil)

    /// Runs `body` with a load on `cluster`, on an HTTP client of its own
    /// that is shut down before the cluster stops: no idle keep-alive
    /// connection is left for the instances' graceful shutdown to wait on.
    static func withLoad(
        _ cluster: LiveCluster, dropDelivery: @escaping @Sendable (Int, Message) -> Bool = { _, _ in false },
        _ body: (LoadRun) async throws -> Void
    ) async throws {
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup)
        let load = LoadRun(
            targets: cluster.instances.map(\.baseURL), http: http, issuer: await TokenIssuer(secret: LiveCluster.secret),
            dropDelivery: dropDelivery)
        let outcome: Result<Void, any Error>
        do {
            outcome = .success(try await body(load))
        } catch {
            outcome = .failure(error)
        }
        load.closeSubscriptions()
        try await http.shutdown()
        try outcome.get()
    }

    @Test func aChatRunOverTwoInstancesDeliversEverythingOnce() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            try await Self.withLoad(cluster) { load in
                let outcome = try await load.run(.chat, Self.settings)
                #expect(outcome.violations == [])
                let totals = load.ledgerTotals
                #expect(totals.acknowledged == 24 && totals.unanswered == 0 && totals.subscribers == 6)
                let tallies = load.stats.snapshot()
                // Every subscriber got every message: 2 conversations × 12 sends × 3 members.
                #expect(tallies[Operation.deliver.rawValue]?.count == 72)
                #expect(tallies[Operation.page.rawValue]?.count ?? 0 > 0)
            }
        }
    }

    @Test func aDeliveryTheServiceDroppedFailsTheCheck() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            // Subscriber 4 "does not receive" the conversation's fifth message.
            try await Self.withLoad(cluster, dropDelivery: { subscriber, message in subscriber == 4 && message.seq == 5 }) {
                load in
                let outcome = try await load.run(.chat, Self.settings)
                #expect(outcome.violations.count == 1)
                let violation = try #require(outcome.violations.first)
                #expect(violation.problem == "lost seqs 5")
                #expect(violation.subscriber?.hasPrefix("\(load.runID)-u") == true)
                let report = LoadReport(scenario: .chat, settings: Self.settings, load: load, outcome: .success(outcome))
                #expect(!report.passed)
                #expect(report.text.contains("VIOLATION: conversation \(violation.conversation.uuidString.lowercased())"))
            }
        }
    }

    /// A `faults` run whose fault does nothing passes; the same run with a
    /// delivery dropped fails, and the loss is counted under the fault in
    /// whose window it happened.
    @Test func aFaultRunPassesCleanAndCatchesALossUnderItsFault() async throws {
        let settings = {
            var settings = Self.settings
            settings.faults = ["pause"]
            settings.faultCommand = "sleep 1; true"
            return settings
        }()
        try await LiveCluster.run(instances: 2) { cluster in
            try await Self.withLoad(cluster) { load in
                let outcome = try await load.run(.faults, settings)
                let table = try #require(outcome.figures.faults)
                #expect(table.rows.map(\.fault) == ["baseline", "pause"])
                #expect(table.passed, "\(table.text)")
                #expect(table.rows.allSatisfy { $0.acknowledged > 0 && $0.recoveredInSeconds != nil })
                #expect(table.rows[1].seconds >= 1)
            }
            // Subscriber 1 "does not receive" the messages sent during the
            // pause (their bodies end with the fault's number, `-f1`).
            try await Self.withLoad(cluster, dropDelivery: { subscriber, message in subscriber == 1 && message.body.hasSuffix("-f1") }) {
                load in
                let outcome = try await load.run(.faults, settings)
                let table = try #require(outcome.figures.faults)
                #expect(table.rows.map(\.lost) == [0, 1], "\(table.text)")
                #expect(!table.passed)
                let report = LoadReport(scenario: .faults, settings: settings, load: load, outcome: .success(outcome))
                #expect(!report.passed)
                #expect(report.text.contains("pause: conversation "))
                #expect(!report.text.contains("check: every acknowledged send is stored once"))
            }
        }
    }

    @Test func aStormOfClientReconnectsLosesNothing() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            try await Self.withLoad(cluster) { load in
                var settings = Self.settings
                settings.subscribers = 40
                settings.rate = 10
                let outcome = try await load.run(.storm, settings)
                #expect(outcome.violations == [])
                #expect(outcome.figures.allResubscribed == true)
                #expect(load.ledgerTotals.acknowledged == 30)
            }
        }
    }

    @Test func onlyLoopbackTargetsUnlessAllowed() throws {
        #expect(Loopback.contains("127.0.0.1") && Loopback.contains("127.8.0.2"))
        #expect(Loopback.contains("localhost") && Loopback.contains("[::1]"))
        #expect(!Loopback.contains("10.0.0.1") && !Loopback.contains("example.com"))
        #expect(throws: (any Error).self) { try ScrollbackLoad.parse(["--target", "http://192.168.1.5:8080"]) }
        #expect(try ScrollbackLoad.parse(["--target", "http://192.168.1.5:8080", "--allow-remote"]).targets == ["http://192.168.1.5:8080"])
    }
}
