import Foundation
import ScrollbackMeasure

/// What a run prints and writes: a row per operation (count, errors by kind,
/// throughput, latency percentiles), the scenario's own figures, and the
/// verdict of the final check.
struct LoadReport: Encodable {
    struct Row: Encodable {
        var operation: String
        var count: Int
        var errors: [String: Int]
        var throughput: Double
        var latency: LatencySummary?
    }

    var scenario: String
    var settings: ScenarioSettings
    var seconds: Double
    var operations: [Row]
    var acknowledged: Int
    var unanswered: Int
    var subscriptions: Int
    var figures: ScenarioFigures
    var violations: [DeliveryLedger.Violation]
    var failure: String?
    var passed: Bool

    init(scenario: Scenario, settings: ScenarioSettings, load: LoadRun, outcome: Result<ScenarioOutcome, any Error>) {
        self.scenario = scenario.rawValue
        self.settings = settings
        seconds = (ContinuousClock.now - load.stats.started).seconds
        let tallies = load.stats.snapshot()
        // `faults` runs its traffic for as long as its faults take.
        let window = scenario == .faults ? seconds : Double(settings.seconds)
        operations = Operation.allCases.compactMap { operation in
            guard let tally = tallies[operation.rawValue], tally.count + tally.errors.values.reduce(0, +) > 0 else { return nil }
            return Row(
                operation: operation.rawValue, count: tally.count, errors: tally.errors,
                throughput: Double(tally.count) / max(window, 1),
                latency: tally.count > 0 ? LatencySummary(tally.latency) : nil)
        }
        (acknowledged, unanswered, subscriptions) = load.ledgerTotals
        switch outcome {
        case .success(let result):
            figures = result.figures
            violations = result.violations
            failure = nil
        case .failure(let error):
            figures = ScenarioFigures()
            violations = []
            failure = "\(error)"
        }
        passed = failure == nil && violations.isEmpty && figures.allResubscribed != false && figures.faults?.passed != false
    }

    var text: String {
        var lines = ["", "operation      count    errors   per second     p50 ms     p90 ms     p99 ms   p99.9 ms     max ms"]
        for row in operations {
            let errors = row.errors.values.reduce(0, +)
            var line = row.operation.padding(toLength: 10, withPad: " ", startingAt: 0)
            line += String(format: "%9d %9d %12.1f", row.count, errors, row.throughput)
            if let latency = row.latency {
                line += String(format: " %10.2f %10.2f %10.2f %10.2f %10.2f", latency.p50, latency.p90, latency.p99, latency.p999, latency.max)
            }
            lines.append(line)
        }
        for row in operations where !row.errors.isEmpty {
            let kinds = row.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            lines.append("errors of \(row.operation): \(kinds)")
        }
        lines.append("")
        lines.append("sends acknowledged: \(acknowledged); without an answer: \(unanswered); subscriptions: \(subscriptions)")
        if let sockets = figures.idleSockets {
            let before = figures.serverRSSBeforeKiB.map { "\($0) KiB" } ?? "unknown (pass --server-pid)"
            let after = figures.serverRSSAfterKiB.map { "\($0) KiB" } ?? "unknown"
            lines.append("idle sockets: \(sockets); server memory before \(before), after \(after)")
            if let perSocket = figures.kibPerIdleSocket {
                lines.append(String(format: "server memory per idle subscribed socket: %.1f KiB", perSocket))
            }
        }
        if let sockets = figures.stormSockets, let seconds = figures.secondsUntilAllResubscribed {
            lines.append(
                String(format: "storm of %d sockets (%@): %@ resubscribed %.2f s after the disruption", sockets,
                    figures.stormDisruption ?? "", figures.allResubscribed == true ? "all" : "NOT all", seconds))
        }
        if let faults = figures.faults {
            lines.append("")
            lines.append(faults.text)
        }
        if let failure { lines.append("the run failed: \(failure)") }
        if violations.isEmpty && failure == nil && figures.faults?.passed != false {
            lines.append("check: every acknowledged send is stored once, in dense seqs, and every subscriber received every message after its start once, in order")
        }
        for violation in violations.prefix(50) { lines.append("VIOLATION: \(violation)") }
        if violations.count > 50 { lines.append("... and \(violations.count - 50) more violations") }
        lines.append(passed ? "PASSED" : "FAILED")
        return lines.joined(separator: "\n")
    }

    func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}
