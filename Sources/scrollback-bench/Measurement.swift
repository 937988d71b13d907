import Foundation
import ScrollbackMeasure

/// One measured run (of the server or of pgbench), as the report reads it.
struct Measurement: Codable, Sendable {
    /// `scrollback` (HTTP through the server) or `pgbench`.
    var tool: String
    /// What ran, e.g. `newest-page`, `send-hot`, `page statement`.
    var workload: String
    /// `closed` (each connection sends the next request when the last one
    /// answered) or `open` (requests at a fixed rate, latency from each
    /// request's scheduled start).
    var mode: String
    var connections: Int
    /// Requests per second asked for in open loop.
    var rate: Double?
    var seconds: Double
    /// Requests answered with 2xx (transactions pgbench completed).
    var successes: Int
    /// Everything else, by status code, or `transport` for a failed exchange.
    var failures: [String: Int]
    var throughput: Double
    var latency: LatencySummary
    /// Largest VmRSS of the watched process during the run, in KiB.
    var peakRSSKiB: Int?

    var errorCount: Int { failures.values.reduce(0, +) }

    static func read(from url: URL) throws -> Measurement {
        try JSONDecoder().decode(Measurement.self, from: Data(contentsOf: url))
    }

    func write(to path: String?) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(self)
        if let path {
            try data.write(to: URL(fileURLWithPath: path))
        } else {
            print(String(decoding: data, as: UTF8.self))
        }
    }
}
