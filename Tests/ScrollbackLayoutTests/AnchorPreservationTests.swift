import PropertyBased
import ScrollbackLayout
import Testing

/// Anchor preservation: after a change, the item the reader was looking at
/// stays where it was on screen.
@Suite struct AnchorPreservationTests {
    // MARK: Properties, one per change kind

    @Test func scrolledUpReaderKeepsTheirPlaceWhenNewMessagesArrive() async {
        await checkAnchorIsPreserved(.insertedNewest)
    }

    @Test func scrolledUpReaderKeepsTheirPlaceWhenAnOlderPageArrives() async {
        await checkAnchorIsPreserved(.appendedOlder)
    }

    @Test func scrolledUpReaderKeepsTheirPlaceWhenAnItemChangesHeight() async {
        await checkAnchorIsPreserved(.heightChanged)
    }

    @Test func scrolledUpReaderKeepsTheirPlaceWhenAnItemIsRemoved() async {
        await checkAnchorIsPreserved(.removed)
    }

    /// For a reader scrolled up by a random amount, applies a random change
    /// of `kind` and checks, without trusting the module's own bookkeeping:
    /// the heights after the change, that the anchor is an item the reader
    /// could see, that it maps to the right new index, that the new offset is
    /// in range, and that the anchor's on-screen position is unchanged
    /// (within 0.5 points) whenever the ideal offset needs no clamping.
    private func checkAnchorIsPreserved(_ kind: ChangeKind) async {
        var unclampedCases = 0
        let runs = 400
        await propertyCheck(count: runs, input: readableScenarios, Gen.int(in: 1...10_000), changeSeeds) {
            scenario, offsetPick, seed in
            let before = try ChatLayout(scenario.input)
            guard before.maxScrollOffset > 0 else { return }  // cannot scroll up at all
            let offset = before.maxScrollOffset * Double(offsetPick) / 10_000
            let change = seed.change(kind, itemCount: scenario.heights.count)

            let update = try before.applying(change, scrollOffset: offset)
            let after = update.layout
            let expectedHeights = manuallyApplied(change, to: scenario.heights)
            #expect(after.input.itemHeights == expectedHeights)
            #expect(!update.wasPinned)
            #expect(update.scrollOffset >= 0 && update.scrollOffset <= after.maxScrollOffset)
            #expect(after.input.scrollOffset == update.scrollOffset)

            guard !expectedHeights.isEmpty else {
                #expect(update.anchor == nil)
                return
            }
            let anchor = try #require(update.anchor)
            let removed: Int? = if case .removed(let index) = change { index } else { nil }
            #expect(anchor.oldIndex != removed)
            let seen = bruteForceVisible(before, offset: offset).filter { $0 != removed }
            if !seen.isEmpty {
                #expect(seen.contains(anchor.oldIndex), "the anchor must be an item the reader could see")
            }
            #expect(anchor.newIndex == manualNewIndex(anchor.oldIndex, after: change))
            #expect(after.items[anchor.newIndex].height == expectedHeights[anchor.newIndex])

            let positionBefore = before.items[anchor.oldIndex].offsetFromBottom - offset
            let positionAfter = after.items[anchor.newIndex].offsetFromBottom - update.scrollOffset
            let idealOffset = after.items[anchor.newIndex].offsetFromBottom - positionBefore
            let newMaxOffset = max(
                specContentHeight(
                    Scenario(
                        viewportHeight: scenario.viewportHeight, heights: expectedHeights, spacing: scenario.spacing,
                        topInset: scenario.topInset, bottomInset: scenario.bottomInset))
                    - scenario.viewportHeight, 0)
            if idealOffset >= 0 && idealOffset <= newMaxOffset {
                unclampedCases += 1
                #expect(abs(positionAfter - positionBefore) <= 0.5)
                #expect(update.anchorDisplacement == 0)
            } else {
                // Clamping interferes: the offset is the nearest valid one and
                // the displacement reports how far the anchor moved.
                #expect(update.scrollOffset == min(max(idealOffset, 0), newMaxOffset))
                #expect(abs(update.anchorDisplacement - (idealOffset - update.scrollOffset)) <= 1e-9)
            }
        }
        // The property is only meaningful if most cases could be preserved exactly.
        #expect(unclampedCases >= runs / 4)
    }

    // MARK: Examples

    /// 10 items of 100 points, 10 apart, on a 300-point screen, scrolled up 500.
    let tenItems = LayoutInput(viewportHeight: 300, itemHeights: Array(repeating: 100, count: 10), spacing: 10)

    @Test func newMessageWhileScrolledUpShiftsTheOffsetByItsHeightPlusSpacing() throws {
        let layout = try ChatLayout(tenItems)
        let update = try layout.applying(.insertedNewest(heights: [40]), scrollOffset: 500)
        #expect(update.scrollOffset == 550)
        // Offset 500: item 4 (bottom 440, top 540) is the lowest item on screen.
        #expect(update.anchor == ScrollAnchor(oldIndex: 4, newIndex: 5, distanceFromViewportBottom: -60))
        #expect(update.layout.visible == VisibleRange(first: 5, last: 8))
    }

    @Test func olderPageWhileScrolledUpKeepsTheOffset() throws {
        let layout = try ChatLayout(tenItems)
        let update = try layout.applying(.appendedOlder(heights: [100, 250, 30]), scrollOffset: 500)
        #expect(update.scrollOffset == 500)
        #expect(update.layout.items.count == 13)
    }

    @Test func heightChangeBelowTheAnchorShiftsTheOffsetByTheDifference() throws {
        let layout = try ChatLayout(tenItems)
        let update = try layout.applying(.heightChanged(index: 1, newHeight: 175), scrollOffset: 500)
        #expect(update.scrollOffset == 575)
        #expect(update.anchor?.oldIndex == 4)
    }

    @Test func heightChangeOfTheAnchorGrowsUpwardsAndKeepsTheOffset() throws {
        let layout = try ChatLayout(tenItems)
        let update = try layout.applying(.heightChanged(index: 4, newHeight: 300), scrollOffset: 500)
        #expect(update.scrollOffset == 500)
        #expect(update.layout.items[4].offsetFromBottom == 440)
        #expect(update.layout.items[5].offsetFromBottom == 750)
    }

    @Test func removingTheAnchorAnchorsTheNextOlderItem() throws {
        let layout = try ChatLayout(tenItems)
        let update = try layout.applying(.removed(index: 4), scrollOffset: 500)
        // Item 5 (bottom 550) was 50 above the viewport's bottom; it is now
        // index 4 at bottom 440, so the offset becomes 390.
        #expect(update.anchor == ScrollAnchor(oldIndex: 5, newIndex: 4, distanceFromViewportBottom: 50))
        #expect(update.scrollOffset == 390)
    }

    @Test func removingAnItemWhileAtTheTopClampsToTheNewTopAndReportsTheDisplacement() throws {
        // At the very top (max offset 790) the anchor is item 7 (bottom 770,
        // top 870). Removing the oldest item leaves item 7 where it was, but
        // the content is 110 points shorter: the top is now at offset 680, so
        // item 7 shows 110 points higher than before.
        let layout = try ChatLayout(tenItems)
        let update = try layout.applying(.removed(index: 9), scrollOffset: 790)
        #expect(update.anchor?.oldIndex == 7)
        #expect(update.scrollOffset == 680)
        #expect(update.anchorDisplacement == 110)
        let shrink = try layout.applying(.heightChanged(index: 9, newHeight: 0), scrollOffset: 790)
        #expect(shrink.scrollOffset == 690)
        #expect(shrink.anchorDisplacement == 100)
        // Removing an item below the anchor moves the anchor down by as much
        // as the content shrinks: exact preservation is still possible.
        let belowAnchor = try layout.applying(.removed(index: 3), scrollOffset: 790)
        #expect(belowAnchor.scrollOffset == 680)
        #expect(belowAnchor.anchorDisplacement == 0)
    }

    @Test func contentShrinkingBelowTheReadersPositionClampsToTheNewTop() throws {
        // Four items: content 430, max offset 130. At offset 100 item 0's top
        // edge only touches the viewport's bottom, so the anchor is item 1,
        // 10 points above it.
        let layout = try ChatLayout(
            LayoutInput(viewportHeight: 300, itemHeights: [100, 100, 100, 100], spacing: 10))
        let update = try layout.applying(.removed(index: 2), scrollOffset: 100)
        #expect(update.anchor == ScrollAnchor(oldIndex: 1, newIndex: 1, distanceFromViewportBottom: 10))
        #expect(update.layout.maxScrollOffset == 20)
        #expect(update.scrollOffset == 20)
        #expect(update.anchorDisplacement == 80)
        let collapse = try layout.applying(.heightChanged(index: 3, newHeight: 0), scrollOffset: 100)
        #expect(collapse.layout.maxScrollOffset == 30)
        #expect(collapse.scrollOffset == 30)
        #expect(collapse.anchorDisplacement == 70)
    }

    @Test func contentThatNoLongerFillsTheScreenClampsToZero() throws {
        // Three items: content 320 on a 300-point screen. Removing the newest
        // leaves 210 points, packed at the top above 90 points of padding.
        let layout = try ChatLayout(LayoutInput(viewportHeight: 300, itemHeights: [100, 100, 100], spacing: 10))
        let update = try layout.applying(.removed(index: 0), scrollOffset: 10)
        #expect(update.anchor == ScrollAnchor(oldIndex: 1, newIndex: 0, distanceFromViewportBottom: 100))
        #expect(update.layout.bottomPadding == 90)
        #expect(update.scrollOffset == 0)
        #expect(update.anchorDisplacement == -10)
    }

    @Test func removingTheLastItemLeavesNoAnchor() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 50, itemHeights: [100]))
        let update = try layout.applying(.removed(index: 0), scrollOffset: 25)
        #expect(update.anchor == nil)
        #expect(update.scrollOffset == 0)
        #expect(update.anchorDisplacement == 25)
        #expect(update.layout.bottomPadding == 50)
    }

    @Test func defaultScrollOffsetIsTheLayoutsOwn() throws {
        var input = tenItems
        input.scrollOffset = 500
        let update = try ChatLayout(input).applying(.insertedNewest(heights: [40]))
        #expect(update.scrollOffset == 550)
        input.scrollOffset = nil
        let pinned = try ChatLayout(input).applying(.insertedNewest(heights: [40]))
        #expect(pinned.scrollOffset == 0)
        #expect(pinned.wasPinned)
    }
}
