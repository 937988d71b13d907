import ScrollbackLayout
import Testing

/// Invalid input is rejected with a typed error that names the HTTP field.
@Suite struct LayoutErrorTests {
    static let valid = LayoutInput(
        viewportHeight: 600, itemHeights: [40, 60, 50, 70], spacing: 8, topInset: 4, bottomInset: 4,
        scrollOffset: 0, prefetchThreshold: 100)

    /// One invalid input per field, with the field and message it must produce.
    struct InvalidInput: Sendable, CustomTestStringConvertible {
        var label: String
        var input: LayoutInput
        var field: String
        var message: String
        var testDescription: String { label }
    }

    static func invalid(_ label: String, _ field: String, _ message: String, _ edit: (inout LayoutInput) -> Void)
        -> InvalidInput
    {
        var input = valid
        edit(&input)
        return InvalidInput(label: label, input: input, field: field, message: message)
    }

    static let invalidInputs: [InvalidInput] = [
        invalid("negative viewport", "viewport_height", "viewport_height must be a finite number >= 0 (got -1.0)") {
            $0.viewportHeight = -1
        },
        invalid("NaN viewport", "viewport_height", "viewport_height must be a finite number >= 0 (got nan)") {
            $0.viewportHeight = .nan
        },
        invalid("infinite viewport", "viewport_height", "viewport_height must be a finite number >= 0 (got inf)") {
            $0.viewportHeight = .infinity
        },
        invalid("negative item", "item_heights[3]", "item_heights[3] must be a finite number >= 0 (got -2.0)") {
            $0.itemHeights[3] = -2
        },
        invalid("NaN item", "item_heights[0]", "item_heights[0] must be a finite number >= 0 (got nan)") {
            $0.itemHeights[0] = .nan
        },
        invalid("infinite item", "item_heights[2]", "item_heights[2] must be a finite number >= 0 (got inf)") {
            $0.itemHeights[2] = .infinity
        },
        invalid("negative spacing", "spacing", "spacing must be a finite number >= 0 (got -8.0)") {
            $0.spacing = -8
        },
        invalid("NaN top inset", "top_inset", "top_inset must be a finite number >= 0 (got nan)") {
            $0.topInset = .nan
        },
        invalid("infinite bottom inset", "bottom_inset", "bottom_inset must be a finite number >= 0 (got -inf)") {
            $0.bottomInset = -.infinity
        },
        invalid("negative scroll offset", "scroll_offset", "scroll_offset must be a finite number >= 0 (got -0.5)") {
            $0.scrollOffset = -0.5
        },
        invalid("infinite scroll offset", "scroll_offset", "scroll_offset must be a finite number >= 0 (got inf)") {
            $0.scrollOffset = .infinity
        },
        invalid(
            "negative threshold", "prefetch_threshold", "prefetch_threshold must be a finite number >= 0 (got -1.0)"
        ) { $0.prefetchThreshold = -1 },
        invalid(
            "NaN threshold", "prefetch_threshold", "prefetch_threshold must be a finite number >= 0 (got nan)"
        ) { $0.prefetchThreshold = .nan },
        invalid(
            "overflowing total", "item_heights",
            "item_heights, spacing, top_inset and bottom_inset add up to more than the largest representable"
                + " height; send sizes in points"
        ) { $0.itemHeights = [1e308, 1e308] },
    ]

    @Test(arguments: invalidInputs)
    func invalidInputIsRejectedWithTheFieldToFix(_ invalid: InvalidInput) throws {
        let error = #expect(throws: LayoutError.self) { try ChatLayout(invalid.input) }
        #expect(error?.field == invalid.field)
        #expect(error?.message == invalid.message)
        #expect(error.map { String(describing: $0) } == invalid.message)
        if invalid.field != "item_heights" {  // the overflow needs the sum
            #expect(throws: LayoutError.self) { try invalid.input.validate() }
        }
    }

    /// The largest viewport with one item: the padding `viewport - height`
    /// rounds up by half an ulp and the item's top edge `padding + height`
    /// rounds past the largest Double, although every sum of sizes is finite.
    @Test func aPositionBeyondTheLargestDoubleIsRejectedNotReturnedAsInfinity() {
        let input = LayoutInput(
            viewportHeight: .greatestFiniteMagnitude, itemHeights: [1.5 * Double.greatestFiniteMagnitude.ulp])
        #expect(throws: LayoutError.positionOverflow) { try ChatLayout(input) }
        #expect(LayoutError.positionOverflow.field == "viewport_height")
    }

    /// Extreme but individually valid sizes: every layout the calculator
    /// returns holds finite numbers only (JSON has no infinity), the others
    /// are refused with a LayoutError.
    @Test func everyLayoutItReturnsIsFinite() throws {
        let huge = Double.greatestFiniteMagnitude
        let viewports = [0, 640, huge / 2, huge.nextDown, huge]
        let heightLists: [[Double]] = [
            [], [0], [44, 60], [1.5 * huge.ulp], [3.5 * huge.ulp, 1], [huge / 2], [huge / 2, huge / 2], [huge],
        ]
        let sizes = [0, 1.5 * huge.ulp, huge / 4]
        var returned = 0
        for viewport in viewports {
            for heights in heightLists {
                for spacing in sizes {
                    for inset in sizes {
                        let input = LayoutInput(
                            viewportHeight: viewport, itemHeights: heights, spacing: spacing, topInset: inset,
                            bottomInset: inset, scrollOffset: viewport / 2, prefetchThreshold: viewport)
                        guard let layout = try? ChatLayout(input) else { continue }
                        returned += 1
                        let numbers =
                            [layout.contentHeight, layout.bottomPadding]
                            + layout.items.flatMap { [$0.offsetFromBottom, $0.offsetFromTop, $0.height] }
                        #expect(numbers.allSatisfy { $0.isFinite }, "\(input)")
                    }
                }
            }
        }
        #expect(returned > 100)
    }

    @Test func validInputPassesValidation() throws {
        try Self.valid.validate()
        _ = try ChatLayout(Self.valid)
    }

    @Test func firstInvalidItemIsTheOneReported() {
        let input = LayoutInput(viewportHeight: 100, itemHeights: [1, -1, .nan])
        #expect(throws: LayoutError.invalidItemHeight(index: 1, value: -1)) { try ChatLayout(input) }
    }

    @Test func changeNamingAMissingItemIsRejected() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 100, itemHeights: [10, 20, 30]))
        let tooHigh = #expect(throws: LayoutError.changeIndexOutOfRange(index: 3, itemCount: 3)) {
            try layout.applying(.heightChanged(index: 3, newHeight: 10), scrollOffset: 5)
        }
        #expect(tooHigh?.field == "change.index")
        #expect(tooHigh?.message == "change.index must be between 0 and 2 (item_heights has 3 items; got 3)")
        #expect(throws: LayoutError.changeIndexOutOfRange(index: -1, itemCount: 3)) {
            try layout.applying(.removed(index: -1), scrollOffset: 5)
        }
        let empty = try ChatLayout(LayoutInput(viewportHeight: 100, itemHeights: []))
        let none = #expect(throws: LayoutError.changeIndexOutOfRange(index: 0, itemCount: 0)) {
            try empty.applying(.removed(index: 0))
        }
        #expect(none?.message == "change.index must name an existing item, but item_heights is empty (got 0)")
    }

    @Test func changeWithInvalidHeightsIsRejected() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 100, itemHeights: [10, 20, 30]))
        let inserted = #expect(throws: LayoutError.self) {
            try layout.applying(.insertedNewest(heights: [10, -1]))
        }
        #expect(inserted?.field == "change.heights[1]")
        #expect(inserted?.message == "change.heights[1] must be a finite number >= 0 (got -1.0)")
        let appended = #expect(throws: LayoutError.self) {
            try layout.applying(.appendedOlder(heights: [.nan]))
        }
        #expect(appended?.field == "change.heights[0]")
        let changed = #expect(throws: LayoutError.invalidNewHeight(.infinity)) {
            try layout.applying(.heightChanged(index: 0, newHeight: .infinity))
        }
        #expect(changed?.message == "change.height must be a finite number >= 0 (got inf)")
    }

    @Test func anchoringRejectsAnInvalidScrollOffset() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 100, itemHeights: [10, 20, 30]))
        #expect(throws: LayoutError.invalidScrollOffset(-3)) {
            try layout.applying(.removed(index: 0), scrollOffset: -3)
        }
        let error = #expect(throws: LayoutError.self) { try layout.scrolled(to: .nan) }
        #expect(error?.field == "scroll_offset")
    }

    @Test func everyErrorMessageStartsWithItsField() {
        let all: [LayoutError] =
            [
                .invalidViewportHeight(-1), .invalidItemHeight(index: 7, value: -1), .invalidSpacing(-1),
                .invalidTopInset(-1), .invalidBottomInset(-1), .invalidScrollOffset(-1),
                .invalidPrefetchThreshold(-1), .contentHeightOverflow, .positionOverflow,
                .changeIndexOutOfRange(index: 9, itemCount: 2), .changeIndexOutOfRange(index: 0, itemCount: 0),
                .invalidChangeHeight(index: 1, value: -1), .invalidNewHeight(-1), .invalidViewportWidth(-1),
            ] + TextMetrics.Field.allCases.map { .invalidTextMetric($0, -1) }
        for error in all {
            #expect(error.message.hasPrefix(error.field), "\(error.message)")
            #expect(error.message.hasSuffix(")") || error.message.hasSuffix("points"), "\(error.message)")
        }
    }
}
