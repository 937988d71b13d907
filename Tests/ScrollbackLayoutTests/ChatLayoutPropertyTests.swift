import PropertyBased
import ScrollbackLayout
import Testing

/// Properties of the layout that must hold for every input.
@Suite struct ChatLayoutPropertyTests {
    @Test func paddingIsNeverNegative() async {
        await propertyCheck(count: 300, input: scenarios) { scenario in
            let layout = try ChatLayout(scenario.input)
            #expect(layout.bottomPadding >= 0)
        }
    }

    @Test func paddingIsNeverNegativeForArbitraryDoubles() async {
        let sizes = Gen.double(in: 0...1e6)
        await propertyCheck(count: 300, input: sizes, sizes.array(of: 0...30), Gen.double(in: 0...100)) {
            viewport, heights, spacing in
            let layout = try ChatLayout(
                LayoutInput(viewportHeight: viewport, itemHeights: heights, spacing: spacing))
            #expect(layout.bottomPadding >= 0)
            // IEEE subtraction gets the sign right, so this holds exactly too.
            #expect((layout.bottomPadding == 0) == (layout.contentHeight >= viewport))
        }
    }

    @Test func paddingAndContentAlwaysCoverTheViewport() async {
        await propertyCheck(count: 300, input: scenarios) { scenario in
            let layout = try ChatLayout(scenario.input)
            #expect(layout.bottomPadding + layout.contentHeight >= scenario.viewportHeight)
            #expect(layout.scrollContentHeight == layout.bottomPadding + layout.contentHeight)
        }
    }

    @Test func paddingIsZeroExactlyWhenContentFillsTheViewport() async {
        await propertyCheck(count: 300, input: scenarios) { scenario in
            let layout = try ChatLayout(scenario.input)
            #expect((layout.bottomPadding == 0) == (layout.contentHeight >= scenario.viewportHeight))
            #expect(layout.isScrollable == (layout.contentHeight > scenario.viewportHeight))
        }
    }

    @Test func positionsFollowTheSpecificationFormulas() async {
        await propertyCheck(count: 300, input: scenarios) { scenario in
            let layout = try ChatLayout(scenario.input)
            let content = specContentHeight(scenario)
            #expect(layout.contentHeight == content)
            #expect(layout.bottomPadding == max(scenario.viewportHeight - content, 0))
            #expect(layout.items.map(\.index) == Array(scenario.heights.indices))
            #expect(layout.items.map(\.height) == scenario.heights)
            #expect(layout.items.map(\.offsetFromBottom) == specBottoms(scenario))
            let total = max(content, scenario.viewportHeight)
            #expect(layout.items.map(\.offsetFromTop) == layout.items.map { total - $0.offsetFromBottom - $0.height })
        }
    }

    @Test func appendingOlderItemsNeverMovesExistingItemsOnceTheContentFillsTheViewport() async {
        await propertyCheck(count: 300, input: scenarios, newHeights) { scenario, page in
            var scenario = scenario
            // Grow the list with 300-point messages until it fills the screen.
            while specContentHeight(scenario) < scenario.viewportHeight { scenario.heights.append(300) }
            let before = try ChatLayout(scenario.input)
            scenario.heights += page
            let after = try ChatLayout(scenario.input)
            #expect(
                Array(after.items.prefix(before.items.count)).map(\.offsetFromBottom)
                    == before.items.map(\.offsetFromBottom))
            #expect(after.bottomPadding == 0)
        }
    }

    @Test func visibleRangeEqualsABruteForceCheckOfEveryItem() async {
        // Offsets are drawn anywhere in (and a little beyond) the scroll range,
        // and often exactly on an item's edge or one viewport below it, where
        // the edge-touching rule decides.
        await propertyCheck(count: 500, input: scenarios, Gen.int(in: 0...4), Gen.int(in: 0...10_000), fractions) {
            scenario, mode, pick, fraction in
            let layout = try ChatLayout(scenario.input)
            let edges = layout.items.flatMap { [$0.offsetFromBottom, $0.topEdgeFromBottom] }
            let edge = edges.isEmpty ? 0 : edges[pick % edges.count]
            let offset: Double =
                switch mode {
                case 0: fraction * (layout.maxScrollOffset + 100)
                case 1, 2: edge
                default: max(edge - scenario.viewportHeight, 0)
                }
            let expected = bruteForceVisible(layout, offset: offset)
            let visible = try layout.scrolled(to: offset).visible
            #expect(visible.map { Array($0.indices) } ?? [] == expected)
        }
    }

    @Test func loadOlderIsDistanceToTopStrictlyBelowTheThreshold() async {
        // Half the offsets put the top exactly `threshold` away, where strict
        // and non-strict comparisons differ.
        await propertyCheck(count: 300, input: scenarios, fractions, points(0...2_000), Gen.bool) {
            scenario, fraction, threshold, onTheBoundary in
            var input = scenario.input
            input.prefetchThreshold = threshold
            let unscrolled = try ChatLayout(input)
            let boundary = unscrolled.maxScrollOffset - threshold
            let offset = onTheBoundary && boundary >= 0 ? boundary : fraction * (unscrolled.maxScrollOffset + 50)
            input.scrollOffset = offset
            let layout = try ChatLayout(input)
            let distance =
                max(specContentHeight(scenario), scenario.viewportHeight) - (offset + scenario.viewportHeight)
            #expect(layout.distanceToTop == distance)
            #expect(layout.loadOlder == (distance < threshold))
        }
    }

    @Test func insertingNewestItemsWhilePinnedKeepsTheOffsetAtZeroAndShowsTheNewMessage() async {
        await propertyCheck(count: 300, input: readableScenarios, newHeights) { scenario, incoming in
            let layout = try ChatLayout(scenario.input)
            let update = try layout.applying(.insertedNewest(heights: incoming), scrollOffset: 0)
            #expect(update.scrollOffset == 0)
            #expect(update.wasPinned)
            #expect(update.layout.input.scrollOffset == 0)
            if incoming[0] > 0 {
                #expect(update.layout.visible?.first == 0)
            }
        }
    }

    @Test func pinnedReaderStaysPinnedWhateverTheChange() async {
        await propertyCheck(count: 300, input: readableScenarios, Gen<ChangeKind>.case, changeSeeds) {
            scenario, kind, seed in
            let layout = try ChatLayout(scenario.input)
            let update = try layout.applying(seed.change(kind, itemCount: scenario.heights.count), scrollOffset: 0)
            #expect(update.scrollOffset == 0)
            #expect(update.anchor == nil)
        }
    }
}
