// The layout benchmark: laying out 100,000 items, against the least work any
// layout must do (reading every height once), measured in the same run.

import ArgumentParser
import ScrollbackLayout

struct LayoutBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "layout",
        abstract: "Lay out 100,000 items; baseline: one loop summing their heights.")

    func run() throws { try layoutBenchmark() }
}

// MARK: - layout

func layoutBenchmark() throws {
    let itemCount = 100_000
    let repetitions = 60
    let heights = deterministicHeights(count: itemCount)
    let input = LayoutInput(
        viewportHeight: 800,
        itemHeights: heights,
        spacing: 8,
        topInset: 12,
        bottomInset: 12,
        scrollOffset: 250_000,
        prefetchThreshold: 1_200
    )

    var sink = 0.0
    let layoutTimes = try measure(repetitions: repetitions) {
        let layout = try ChatLayout(input)
        sink += layout.contentHeight + Double(layout.visible?.first ?? 0)
    }
    let baselineTimes = measure(repetitions: repetitions) {
        sink += sumHeights(heights)
    }

    let layout = layoutTimes.sorted()
    let baseline = baselineTimes.sorted()
    let layoutMedian = median(layout)
    let baselineMedian = median(baseline)
    print("layout: \(itemCount) items, \(repetitions) runs each (after warm-up)")
    print("  layout     best \(formatDuration(layout[0]))  median \(formatDuration(layoutMedian))")
    print(
        "  baseline   best \(formatDuration(baseline[0]))  median \(formatDuration(baselineMedian))",
        " (sum of heights only)")
    print("  per 1,000 items: layout \(formatDuration(layoutMedian / Double(itemCount / 1_000))) (median)")
    let bestRatio = format(layout[0] / baseline[0])
    let medianRatio = format(layoutMedian / baselineMedian)
    print("  ratio layout / baseline: best \(bestRatio)x  median \(medianRatio)x")
    // Printing the sink keeps the optimiser from deleting the measured work.
    print("  (checksum \(format(sink.truncatingRemainder(dividingBy: 1_000_000))))")
}

/// Heights between 24 and 423 points from a fixed linear congruential
/// sequence: varied like real messages, identical on every run.
func deterministicHeights(count: Int) -> [Double] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return 24 + Double((state >> 33) % 400)
    }
}

/// The least work any layout must do: read every height once.
@inline(never)
func sumHeights(_ heights: [Double]) -> Double {
    var total = 0.0
    for height in heights { total += height }
    return total
}

// MARK: - helpers

/// Runs `body` a few times to warm up, then `repetitions` times, returning
/// each run's duration in seconds.
func measure(repetitions: Int, _ body: () throws -> Void) rethrows -> [Double] {
    for _ in 0..<max(repetitions / 10, 3) { try body() }
    let clock = ContinuousClock()
    var seconds: [Double] = []
    seconds.reserveCapacity(repetitions)
    for _ in 0..<repetitions {
        let elapsed = try clock.measure { try body() }
        let (whole, attoseconds) = elapsed.components
        seconds.append(Double(whole) + Double(attoseconds) / 1e18)
    }
    return seconds
}

func median(_ sorted: [Double]) -> Double {
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

func formatDuration(_ seconds: Double) -> String {
    if seconds >= 1 { return format(seconds) + " s" }
    if seconds >= 1e-3 { return format(seconds * 1e3) + " ms" }
    if seconds >= 1e-6 { return format(seconds * 1e6) + " us" }
    return format(seconds * 1e9) + " ns"
}

/// A non-negative figure with about four significant digits (no Foundation).
func format(_ value: Double) -> String {
    let decimals = value >= 100 ? 1 : (value >= 10 ? 2 : 3)
    var factor = 1.0
    for _ in 0..<decimals { factor *= 10 }
    let scaled = Int64((value * factor).rounded())
    let whole = scaled / Int64(factor)
    var fraction = String(scaled % Int64(factor))
    while fraction.count < decimals { fraction = "0" + fraction }
    return "\(whole).\(fraction)"
}
