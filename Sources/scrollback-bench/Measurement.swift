import Foundation
import Histogram

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

/// Latency in milliseconds.
struct LatencySummary: Codable, Sendable {
    var mean: Double
    var p50: Double
    var p90: Double
    var p99: Double
    var p999: Double
    var max: Double

    /// From a histogram of microseconds.
    init(_ histogram: Histogram<UInt64>) {
        func ms(_ microseconds: UInt64) -> Double { Double(microseconds) / 1_000 }
        mean = histogram.mean / 1_000
        p50 = ms(histogram.valueAtPercentile(50))
        p90 = ms(histogram.valueAtPercentile(90))
        p99 = ms(histogram.valueAtPercentile(99))
        p999 = ms(histogram.valueAtPercentile(99.9))
        max = ms(histogram.max)
    }
}

extension Histogram<UInt64> {
    /// Microseconds from 1 µs to 10 minutes, three significant digits.
    static func microseconds() -> Histogram<UInt64> {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    }
}
