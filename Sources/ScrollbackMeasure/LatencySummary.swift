import Histogram

/// Latency in milliseconds, as the reports of `scrollback-bench` and
/// `scrollback-load` print it.
public struct LatencySummary: Codable, Sendable, Equatable {
    public var mean: Double
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var p999: Double
    public var max: Double

    /// From a histogram of microseconds.
    public init(_ histogram: Histogram<UInt64>) {
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
    public static func microseconds() -> Histogram<UInt64> {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    }

    /// Records a duration in microseconds (at least 1, at most the histogram's range).
    public mutating func record(_ duration: Duration) {
        _ = record(Swift.min(Swift.max(duration.microseconds, 1), highestTrackableValue))
    }
}

extension Duration {
    public var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    public var microseconds: UInt64 { UInt64(Swift.max(seconds * 1e6, 0)) }
}
