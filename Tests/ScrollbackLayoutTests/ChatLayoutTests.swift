import ScrollbackLayout
import Testing

/// Worked examples of the layout formulas.
@Suite struct ChatLayoutTests {
    /// Three messages of 40, 60 and 50 points, 8 points apart, insets 10 and
    /// 6, on a 600-point screen: 40+60+50 + 2*8 + 10+6 = 182 points of content.
    let short = LayoutInput(
        viewportHeight: 600, itemHeights: [40, 60, 50], spacing: 8, topInset: 10, bottomInset: 6)

    @Test func contentHeightAddsHeightsSpacingAndInsets() throws {
        let layout = try ChatLayout(short)
        #expect(layout.contentHeight == 182)
    }

    @Test func fewItemsArePackedAtTheTop() throws {
        let layout = try ChatLayout(short)
        #expect(layout.bottomPadding == 418)
        #expect(!layout.isScrollable)
        #expect(layout.scrollContentHeight == 600)
        #expect(layout.maxScrollOffset == 0)
        // The oldest item's top edge sits exactly top_inset below the top of the screen.
        let oldest = try #require(layout.items.last)
        #expect(oldest.offsetFromTop == 10)
        #expect(oldest.topEdgeFromBottom == 590)
    }

    @Test func itemsStackUpwardsFromTheNewest() throws {
        let layout = try ChatLayout(short)
        #expect(
            layout.items == [
                ItemFrame(index: 0, offsetFromBottom: 424, offsetFromTop: 136, height: 40),
                ItemFrame(index: 1, offsetFromBottom: 472, offsetFromTop: 68, height: 60),
                ItemFrame(index: 2, offsetFromBottom: 540, offsetFromTop: 10, height: 50),
            ])
    }

    @Test func manyItemsFillTheScreenWithoutPadding() throws {
        let input = LayoutInput(viewportHeight: 300, itemHeights: Array(repeating: 100, count: 5), spacing: 10)
        let layout = try ChatLayout(input)
        #expect(layout.contentHeight == 540)
        #expect(layout.bottomPadding == 0)
        #expect(layout.isScrollable)
        #expect(layout.maxScrollOffset == 240)
        #expect(layout.items.map(\.offsetFromBottom) == [0, 110, 220, 330, 440])
        #expect(layout.items.map(\.offsetFromTop) == [440, 330, 220, 110, 0])
    }

    @Test func contentExactlyAsTallAsTheViewportIsNotScrollableAndHasNoPadding() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 300, itemHeights: [100, 100, 100]))
        #expect(layout.bottomPadding == 0)
        #expect(!layout.isScrollable)
        #expect(layout.maxScrollOffset == 0)
    }

    @Test func emptyListIsAllPadding() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 500, itemHeights: [], topInset: 10, bottomInset: 20))
        #expect(layout.contentHeight == 30)
        #expect(layout.bottomPadding == 470)
        #expect(layout.items.isEmpty)
        #expect(try layout.scrolled(to: 0).visible == nil)
    }

    @Test func singleItemHasNoSpacing() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 100, itemHeights: [30], spacing: 50))
        #expect(layout.contentHeight == 30)
        #expect(layout.bottomPadding == 70)
    }

    @Test func appendingAnOlderPageToAShortListMovesItemsDownUntilTheScreenIsFull() throws {
        // While the content is short, the padding shrinks as items arrive, so
        // existing items move down; the "never moves" rule starts once it fills.
        let before = try ChatLayout(LayoutInput(viewportHeight: 300, itemHeights: [100]))
        let after = try ChatLayout(LayoutInput(viewportHeight: 300, itemHeights: [100, 100]))
        #expect(before.items[0].offsetFromBottom == 200)
        #expect(after.items[0].offsetFromBottom == 100)
        #expect(before.items[0].offsetFromTop == 0)
        #expect(after.items[0].offsetFromTop == 100)
    }

    @Test func visibleRangeCoversItemsInsideTheViewport() throws {
        // Items of 100 points, 10 apart: bottoms at 0, 110, 220, 330, 440.
        let base = LayoutInput(viewportHeight: 150, itemHeights: Array(repeating: 100, count: 5), spacing: 10)
        let layout = try ChatLayout(base)
        #expect(try layout.scrolled(to: 0).visible == VisibleRange(first: 0, last: 1))
        #expect(try layout.scrolled(to: 200).visible == VisibleRange(first: 1, last: 3))
        #expect(try layout.scrolled(to: 390).visible == VisibleRange(first: 3, last: 4))
        #expect(try layout.scrolled(to: 435).visible == VisibleRange(first: 4, last: 4))
    }

    @Test func itemOnlyTouchingTheViewportEdgeIsNotVisible() throws {
        // Item 0 spans 0...100, item 1 spans 110...210.
        let layout = try ChatLayout(
            LayoutInput(viewportHeight: 110, itemHeights: [100, 100, 100], spacing: 10))
        // Window 100...210: item 0's top edge touches its bottom; item 2's
        // bottom edge (220) is above it.
        #expect(try layout.scrolled(to: 100).visible == VisibleRange(first: 1, last: 1))
        // Window 0...110: item 1's bottom edge touches the window's top.
        #expect(try layout.scrolled(to: 0).visible == VisibleRange(first: 0, last: 0))
        // Window 110...220: item 2's bottom edge touches the window's top.
        #expect(try layout.scrolled(to: 110).visible == VisibleRange(first: 1, last: 1))
        // Window 110.25...220.25: a quarter point of item 2 shows.
        #expect(try layout.scrolled(to: 110.25).visible == VisibleRange(first: 1, last: 2))
    }

    @Test func viewportShowingOnlyAGapHasNoVisibleItems() throws {
        let layout = try ChatLayout(
            LayoutInput(viewportHeight: 10, itemHeights: [100, 100], spacing: 40, scrollOffset: 110))
        #expect(layout.visible == nil)
    }

    @Test func noScrollOffsetMeansNoVisibleRangeAndNoPrefetch() throws {
        let layout = try ChatLayout(
            LayoutInput(viewportHeight: 100, itemHeights: [50, 50, 50], prefetchThreshold: 1_000))
        #expect(layout.visible == nil)
        #expect(!layout.loadOlder)
        #expect(layout.distanceToTop == nil)
    }

    @Test func loadOlderFiresWhenTheTopIsCloserThanTheThreshold() throws {
        // 10 items of 100: content 1000, viewport 300, so the top is
        // 1000 - (offset + 300) above the viewport.
        let input = LayoutInput(
            viewportHeight: 300, itemHeights: Array(repeating: 100, count: 10), scrollOffset: 0,
            prefetchThreshold: 200)
        let layout = try ChatLayout(input)
        #expect(layout.distanceToTop == 700)
        #expect(!layout.loadOlder)
        #expect(try layout.scrolled(to: 499).loadOlder == false)  // distance 201
        #expect(try layout.scrolled(to: 500).loadOlder == false)  // distance 200: not below
        #expect(try layout.scrolled(to: 501).loadOlder == true)  // distance 199
    }

    @Test func thresholdZeroOnlyFiresOnOverscrollPastTheTop() throws {
        let layout = try ChatLayout(
            LayoutInput(viewportHeight: 300, itemHeights: Array(repeating: 100, count: 10), prefetchThreshold: 0))
        #expect(try layout.scrolled(to: 700).loadOlder == false)
        #expect(try layout.scrolled(to: 700.5).loadOlder == true)
    }

    @Test func shortConversationAsksForOlderMessages() throws {
        let layout = try ChatLayout(
            LayoutInput(viewportHeight: 600, itemHeights: [40, 40], scrollOffset: 0, prefetchThreshold: 1))
        #expect(layout.distanceToTop == 0)
        #expect(layout.loadOlder)
    }

    @Test func scrolledLayoutEqualsAFreshLayoutAtThatOffset() throws {
        var input = LayoutInput(
            viewportHeight: 250, itemHeights: [30, 80, 120, 45, 200, 60], spacing: 4, topInset: 3,
            bottomInset: 5, prefetchThreshold: 90)
        let layout = try ChatLayout(input)
        for offset in [0.0, 17.5, 120, 300, 900] {
            input.scrollOffset = offset
            #expect(try layout.scrolled(to: offset) == ChatLayout(input))
        }
    }

    @Test func hundredThousandItemsLineUpExactly() throws {
        // Not a timing assertion (speed is the benchmark's job): the
        // benchmark's size still yields consistent positions and visibility.
        let heights = (0..<100_000).map { Double(24 + ($0 * 37) % 300) }
        let layout = try ChatLayout(
            LayoutInput(viewportHeight: 800, itemHeights: heights, spacing: 8, scrollOffset: 1_000_000))
        #expect(layout.items.count == 100_000)
        let last = try #require(layout.items.last)
        #expect(last.topEdgeFromBottom == layout.contentHeight)
        #expect(layout.visible.map { bruteForceVisible(layout, offset: 1_000_000) == Array($0.indices) } == true)
    }
}
