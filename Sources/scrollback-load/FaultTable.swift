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

    /// Changes the current fault's row (nothing before the first fault).
    private mutating func current(_ change: (inout Row) -> Void) {
        guard !rows.isEmpty else { return }
        change(&rows[rows.count - 1])
    }

    /// One HTTP attempt, counted in the current fault's row.
    mutating func record(_ exchange: ScrollbackClient.Exchange) {
        let seconds = exchange.duration.seconds
        let hangAfter = hangAfterSeconds
        current { row in
            row.operations += 1
            row.slowestSeconds = max(row.slowestSeconds, seconds)
            if seconds > hangAfter {
                row.hangs += 1
                row.problems.append(String(format: "%@ %@ took %.1f s", exchange.method, exchange.path, seconds))
            }
            switch exchange.status {
            case nil:
                row.noAnswer += 1
            case 503?:
                row.unavailable += 1
                if exchange.retryAfter == nil { row.unavailableWithoutRetryAfter += 1 }
            case let status? where status >= 500:
                row.serverErrors += 1
                row.problems.append("\(exchange.method) \(exchange.path) answered \(status)")
            default:
                break
            }
        }
    }

    mutating func acknowledged() {
        current { $0.acknowledged += 1 }
    }

    /// The fault was removed after `seconds`.
    mutating func removed(after seconds: Double) {
        current { $0.seconds = seconds }
    }

    mutating func recovered(in seconds: Double?) {
        current { row in
            row.recoveredInSeconds = seconds
            if seconds == nil { row.problems.append("the instances did not all serve again in time") }
        }
    }

    /// The check after the fault: violations not seen after an earlier
    /// fault are this fault's.
    mutating func checked(_ violations: [DeliveryLedger.Violation]) {
        let new = violations.filter { !seen.contains($0) }
        seen += new
        current { row in
            for violation in new {
                switch violation.kind {
                case .lost: row.lost += 1
                case .duplicated: row.duplicated += 1
                case .misplaced: row.misplaced += 1
                }
                row.problems.append(violation.description)
            }
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
