import Foundation
import ScrollbackClient
import ScrollbackMeasure

/// What the service did under each fault of a `faults` run: a row per fault
/// (a baseline without one first), filled from every HTTP attempt of the
/// load, the sends acknowledged, the time until both instances served
/// again, and what the check after the fault found. A pure value: the run
/// records into it, `passed` is the verdict.
struct FaultTable: Sendable, Encodable {
    struct Row: Sendable, Encodable {
        var fault: String
        /// From injecting the fault to removing it.
        var seconds: Double = 0
        /// HTTP attempts of the load, retries included.
        var operations = 0
        var acknowledged = 0
        /// 503 answers, and those among them without `Retry-After`.
        var unavailable = 0
        var unavailableWithoutRetryAfter = 0
        /// 5xx answers other than 503.
        var serverErrors = 0
        /// Attempts that got no answer (connection refused or reset).
        var noAnswer = 0
        /// Attempts that took longer than the table's `hangAfter`.
        var hangs = 0
        var slowestSeconds = 0.0
        var lost = 0
        var duplicated = 0
        var misplaced = 0
        /// From removing the fault until every instance served a send; nil
        /// when that did not happen in time.
        var recoveredInSeconds: Double?
        var problems: [String] = []

        var passed: Bool {
            serverErrors == 0 && unavailableWithoutRetryAfter == 0 && hangs == 0 && lost == 0 && duplicated == 0
                && misplaced == 0 && recoveredInSeconds != nil
        }

        enum CodingKeys: String, CodingKey {
            case fault, seconds, operations, acknowledged, unavailable, hangs, lost, duplicated, misplaced, problems
            case unavailableWithoutRetryAfter = "unavailable_without_retry_after", serverErrors = "server_errors"
            case noAnswer = "no_answer", slowestSeconds = "slowest_seconds", recoveredInSeconds = "recovered_in_seconds"
        }
    }

    /// An attempt that takes longer is a hang: the service promises an
    /// answer (503 at worst) within its database deadline.
    var hangAfterSeconds: Double
    private(set) var rows: [Row] = []
    /// Violations already counted, so a check after a later fault counts
    /// only what is new.
    private var seen: [DeliveryLedger.Violation] = []

    init(hangAfterSeconds: Double) {
        self.hangAfterSeconds = hangAfterSeconds
    }

    var passed: Bool { !rows.isEmpty && rows.allSatisfy(\.passed) }

    mutating func begin(_ fault: String) {
        rows.append(Row(fault: fault))
    }

    /// One HTTP attempt, counted in the current fault's row.
    mutating func record(_ exchange: ScrollbackClient.Exchange) {
        guard !rows.isEmpty else { return }
        let seconds = exchange.duration.seconds
        rows[rows.count - 1].operations += 1
        rows[rows.count - 1].slowestSeconds = max(rows[rows.count - 1].slowestSeconds, seconds)
        if seconds > hangAfterSeconds {
            rows[rows.count - 1].hangs += 1
            rows[rows.count - 1].problems.append(
                String(format: "%@ %@ took %.1f s", exchange.method, exchange.path, seconds))
        }
        switch exchange.status {
        case nil:
            rows[rows.count - 1].noAnswer += 1
        case 503?:
            rows[rows.count - 1].unavailable += 1
            if exchange.retryAfter == nil { rows[rows.count - 1].unavailableWithoutRetryAfter += 1 }
        case let status? where status >= 500:
            rows[rows.count - 1].serverErrors += 1
            rows[rows.count - 1].problems.append("\(exchange.method) \(exchange.path) answered \(status)")
        default:
            break
        }
    }

    mutating func acknowledged() {
        guard !rows.isEmpty else { return }
        rows[rows.count - 1].acknowledged += 1
    }

    /// The fault was removed after `seconds`.
    mutating func removed(after seconds: Double) {
        rows[rows.count - 1].seconds = seconds
    }

    mutating func recovered(in seconds: Double?) {
        rows[rows.count - 1].recoveredInSeconds = seconds
        if seconds == nil { rows[rows.count - 1].problems.append("the instances did not all serve again in time") }
    }

    /// The check after the fault: violations not seen after an earlier
    /// fault are this fault's.
    mutating func checked(_ violations: [DeliveryLedger.Violation]) {
        let new = violations.filter { !seen.contains($0) }
        seen += new
        for violation in new {
            switch violation.kind {
            case .lost: rows[rows.count - 1].lost += 1
            case .duplicated: rows[rows.count - 1].duplicated += 1
            case .misplaced: rows[rows.count - 1].misplaced += 1
            }
            rows[rows.count - 1].problems.append(violation.description)
        }
    }

    var text: String {
        var lines = [
            "fault            seconds  operations  acknowledged   503s  503s without Retry-After  500s  no answer  hangs  lost  duplicated  recovered in"
        ]
        for row in rows {
            var line = row.fault.padding(toLength: 15, withPad: " ", startingAt: 0)
            line += String(
                format: " %7.1f %11d %13d %6d %25d %5d %10d %6d %5d %11d", row.seconds, row.operations, row.acknowledged,
                row.unavailable, row.unavailableWithoutRetryAfter, row.serverErrors, row.noAnswer, row.hangs,
                row.lost + row.misplaced, row.duplicated)
            line += row.recoveredInSeconds.map { String(format: " %11.2f s", $0) } ?? "  NOT RECOVERED"
            lines.append(line)
        }
        for row in rows where !row.problems.isEmpty {
            for problem in row.problems.prefix(20) { lines.append("\(row.fault): \(problem)") }
            if row.problems.count > 20 { lines.append("\(row.fault): ... and \(row.problems.count - 20) more") }
        }
        lines.append(
            String(
                format: "hang: an attempt longer than %.0f s; lost counts misplaced messages too; 500s, hangs, lost and duplicated must be 0",
                hangAfterSeconds))
        return lines.joined(separator: "\n")
    }
}
