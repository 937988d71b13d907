import PropertyBased
import ScrollbackLayout

// Shared generators for the property tests.
//
// Most sizes are drawn on a quarter-point grid: such values, and every sum of
// a few thousand of them, are exact in binary floating point, so the
// properties can be checked with `==` instead of a tolerance. Separate tests
// use arbitrary doubles where the property holds exactly in IEEE arithmetic.

/// A size in `range` points, on the quarter-point grid.
func points(_ range: ClosedRange<Double>) -> Generator<Double, Shrink.Integer<Int>> {
    Gen.int(in: Int(range.lowerBound * 4)...Int(range.upperBound * 4)).map { Double($0) / 4 }
}

/// A fraction in `0...1` with four decimals.
let fractions = Gen.int(in: 0...10_000).map { Double($0) / 10_000 }

/// A chat list without a scroll offset.
struct Scenario: Sendable, CustomStringConvertible {
    var viewportHeight: Double
    var heights: [Double]
    var spacing: Double
    var topInset: Double
    var bottomInset: Double

    var input: LayoutInput {
        LayoutInput(
            viewportHeight: viewportHeight, itemHeights: heights, spacing: spacing, topInset: topInset,
            bottomInset: bottomInset)
    }

    var description: String {
        "Scenario(viewport: \(viewportHeight), heights: \(heights), spacing: \(spacing), "
            + "top: \(topInset), bottom: \(bottomInset))"
    }
}

/// Any list: viewport 0...800 (including an empty screen), 0...40 items.
let scenarios = zip(
    points(0...800), points(0...300).array(of: 0...40), points(0...16), points(0...24), points(0...24)
).map { Scenario(viewportHeight: $0.0, heights: $0.1, spacing: $0.2, topInset: $0.3, bottomInset: $0.4) }

/// Lists a reader can look at: a real screen (100...800 points) and 1...40
/// messages at least 20 points tall, so most of them scroll.
let readableScenarios = zip(
    points(100...800), points(20...300).array(of: 1...40), points(0...16), points(0...24), points(0...24)
).map { Scenario(viewportHeight: $0.0, heights: $0.1, spacing: $0.2, topInset: $0.3, bottomInset: $0.4) }

/// A batch of new messages or an older page.
let newHeights = points(0...300).array(of: 1...12)

/// The kinds of ``LayoutChange``.
enum ChangeKind: CaseIterable, Sendable {
    case insertedNewest, appendedOlder, heightChanged, removed
}

/// The raw material for one change; `pick` chooses the item for changes
/// that name one.
struct ChangeSeed: Sendable, CustomStringConvertible {
    var heights: [Double]
    var pick: Int
    var newHeight: Double

    func change(_ kind: ChangeKind, itemCount: Int) -> LayoutChange {
        switch kind {
        case .insertedNewest: .insertedNewest(heights: heights)
        case .appendedOlder: .appendedOlder(heights: heights)
        case .heightChanged: .heightChanged(index: pick % itemCount, newHeight: newHeight)
        case .removed: .removed(index: pick % itemCount)
        }
    }

    var description: String { "ChangeSeed(heights: \(heights), pick: \(pick), newHeight: \(newHeight))" }
}

let changeSeeds = zip(newHeights, Gen.int(in: 0...10_000), points(0...400))
    .map { ChangeSeed(heights: $0.0, pick: $0.1, newHeight: $0.2) }

// MARK: - Independent reference computations

/// `contentHeight` straight from the specification.
func specContentHeight(_ s: Scenario) -> Double {
    s.heights.reduce(0, +) + s.spacing * Double(max(s.heights.count - 1, 0)) + s.topInset + s.bottomInset
}

/// Item bottom edges straight from the specification:
/// `bottomPadding + bottomInset + sum_{j<i}(h_j + spacing)`.
func specBottoms(_ s: Scenario) -> [Double] {
    let padding = max(s.viewportHeight - specContentHeight(s), 0)
    return s.heights.indices.map { i in
        padding + s.bottomInset + s.heights[..<i].reduce(0) { $0 + $1 + s.spacing }
    }
}

/// The documented visibility rule, applied to every item one by one.
func bruteForceVisible(_ layout: ChatLayout, offset: Double) -> [Int] {
    let windowTop = offset + layout.viewportHeight
    return layout.items.filter { frame in
        frame.offsetFromBottom < windowTop && frame.offsetFromBottom + frame.height > offset
    }.map(\.index)
}

/// Heights after `change`, computed without the module.
func manuallyApplied(_ change: LayoutChange, to heights: [Double]) -> [Double] {
    switch change {
    case .insertedNewest(let new): return new + heights
    case .appendedOlder(let page): return heights + page
    case .heightChanged(let index, let newHeight):
        var result = heights
        result[index] = newHeight
        return result
    case .removed(let index):
        var result = heights
        result.remove(at: index)
        return result
    }
}

/// Where an old index ends up after `change`, computed without the module.
func manualNewIndex(_ oldIndex: Int, after change: LayoutChange) -> Int? {
    switch change {
    case .insertedNewest(let new): return oldIndex + new.count
    case .appendedOlder, .heightChanged: return oldIndex
    case .removed(let removed):
        if oldIndex == removed { return nil }
        return oldIndex < removed ? oldIndex : oldIndex - 1
    }
}
