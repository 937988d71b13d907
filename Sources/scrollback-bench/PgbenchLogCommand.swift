import ArgumentParser
import Foundation
import Histogram
import ScrollbackMeasure

/// `scrollback-bench pgbench-log`: turns pgbench's per-transaction log
/// (`pgbench -l`) into a `Measurement`, so the baseline is summarised exactly
/// like the server's figures (same histogram, same percentiles).
///
/// Each log line is `client_id transaction_no time script_no time_epoch
/// time_us [schedule_lag] [retries]`; `time` is the latency in microseconds,
/// counted from the scheduled start under `--rate`, or `failed` / `skipped`.
struct PgbenchLogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pgbench-log",
        abstract: "Summarise pgbench transaction logs as a measurement.")

    @Option(help: "What ran (a label for the report).")
    var workload: String

    @Option(help: "closed or open.")
    var mode = "closed"

    @Option(help: "pgbench clients.")
    var connections: Int

    @Option(help: "pgbench --rate, when given.")
    var rate: Double?

    @Option(help: "Count only this script (pgbench numbers them from 0 in -f order); default: all.")
    var script: Int?

    @Option(help: "Write the measurement here instead of standard output.")
    var output: String?

    @Argument(help: "The log files (one per pgbench thread).")
    var logs: [String]

    func run() throws {
        var latency = Histogram<UInt64>.microseconds()
        var successes = 0
        var failures: [String: Int] = [:]
        var first = Double.infinity
        var last = -Double.infinity
        for path in logs {
            for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count >= 6, let scriptNumber = Int(fields[3]),
                    let epoch = Double(fields[4]), let micros = Double(fields[5])
                else { throw ValidationError("\(path): not a pgbench log line: \(line)") }
                let end = epoch + micros / 1e6
                let time = UInt64(fields[2])
                first = min(first, end - Double(time ?? 0) / 1e6)
                last = max(last, end)
                if let script, script != scriptNumber { continue }
                if let time {
                    _ = latency.record(max(time, 1))
                    successes += 1
                } else {
                    failures[String(fields[2]), default: 0] += 1
                }
            }
        }
        let seconds = last > first ? last - first : 0
        try Measurement(
            tool: "pgbench", workload: workload, mode: mode, connections: connections, rate: rate,
            seconds: seconds, successes: successes, failures: failures,
            throughput: seconds > 0 ? Double(successes) / seconds : 0,
            latency: LatencySummary(latency), peakRSSKiB: nil
        ).write(to: output)
    }
}
