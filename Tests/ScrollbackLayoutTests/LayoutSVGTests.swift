import ScrollbackLayout
import Testing

/// The SVG picture of a layout.
@Suite struct LayoutSVGTests {
    /// A short conversation: 3 items, 182 points of content on a 600-point
    /// screen, so 418 points of padding.
    let short = LayoutInput(
        viewportHeight: 600, itemHeights: [40, 60, 50], spacing: 8, topInset: 10, bottomInset: 6)
    /// A long conversation scrolled up into history.
    let long = LayoutInput(
        viewportHeight: 600, itemHeights: (0..<40).map { Double(40 + ($0 * 29) % 90) }, spacing: 8,
        topInset: 10, bottomInset: 6, scrollOffset: 700, prefetchThreshold: 300)

    func occurrences(of needle: String, in text: String) -> Int {
        text.split(separator: needle, omittingEmptySubsequences: false).count - 1
    }

    @Test func shortConversationShowsTheShadedPaddingWithItsHeight() throws {
        let svg = LayoutSVG().render(try ChatLayout(short))
        #expect(occurrences(of: #"class="bottom-padding""#, in: svg) == 1)
        #expect(svg.contains(#"fill="url(#padding-hatch)""#))
        #expect(svg.contains(">bottom padding 418</text>"))
    }

    @Test func longConversationHasNoPaddingBand() throws {
        let layout = try ChatLayout(long)
        #expect(layout.bottomPadding == 0)
        let svg = LayoutSVG().render(layout)
        #expect(!svg.contains("bottom-padding"))
        #expect(!svg.contains("bottom padding"))
    }

    @Test func everyItemIsABubbleLabelledWithItsIndex() throws {
        let layout = try ChatLayout(long)
        let svg = LayoutSVG().render(layout)
        #expect(occurrences(of: #"<g class="item"#, in: svg) == 40)
        for index in [0, 17, 39] {
            #expect(svg.contains(#"data-index="\#(index)""#))
            #expect(svg.contains(">#\(index)</text>"))
        }
        #expect(occurrences(of: "<rect", in: svg) > 40)
    }

    @Test func visibleWindowIsOutlinedAndItsItemsHighlighted() throws {
        let layout = try ChatLayout(long)
        let visible = try #require(layout.visible)
        let svg = LayoutSVG().render(layout)
        #expect(occurrences(of: #"class="viewport""#, in: svg) == 1)
        #expect(occurrences(of: #"<g class="item visible""#, in: svg) == visible.count)
        let loadOlder = layout.loadOlder ? "yes" : "no"
        #expect(svg.contains("scroll offset 700, visible #\(visible.first)-#\(visible.last), load older: \(loadOlder)"))
    }

    @Test func withoutAScrollOffsetTheViewportSitsAtTheBottom() throws {
        let svg = LayoutSVG(maxDrawingHeight: nil).render(try ChatLayout(short))
        #expect(occurrences(of: #"class="viewport""#, in: svg) == 1)
        #expect(svg.contains("pinned to the newest message"))
        #expect(!svg.contains("item visible"))
        #expect(svg.contains(">offset 0</text>"))
    }

    @Test func documentIsAStandaloneSVG() throws {
        let svg = LayoutSVG(title: "Short <chat> & \"friends\"").render(try ChatLayout(short))
        #expect(svg.hasPrefix(#"<svg xmlns="http://www.w3.org/2000/svg""#))
        #expect(svg.hasSuffix("</svg>\n"))
        #expect(occurrences(of: "<g ", in: svg) == occurrences(of: "</g>", in: svg))
        #expect(occurrences(of: "<text", in: svg) == occurrences(of: "</text>", in: svg))
        #expect(svg.contains("Short &lt;chat&gt; &amp; &quot;friends&quot;"))
        #expect(!svg.contains("nan") && !svg.contains("inf"))
    }

    @Test func tallLayoutsAreScaledDownToTheMaximumHeight() throws {
        let layout = try ChatLayout(LayoutInput(viewportHeight: 600, itemHeights: Array(repeating: 100, count: 100)))
        let svg = LayoutSVG(maxDrawingHeight: 1000).render(layout)
        let height = try #require(rootAttribute("height", in: svg))
        #expect(height > 1000 && height < 1100)  // drawing plus header and margins
        let unbounded = LayoutSVG(maxDrawingHeight: nil).render(layout)
        #expect(try #require(rootAttribute("height", in: unbounded)) > 10_000)
    }

    func rootAttribute(_ name: String, in svg: String) -> Double? {
        guard let start = svg.firstRange(of: " \(name)=\"")?.upperBound,
            let end = svg[start...].firstIndex(of: "\"")
        else { return nil }
        return Double(svg[start..<end])
    }

    @Test(arguments: [
        (12.0, "12"), (12.5, "12.5"), (0.125, "0.13"), (-3.25, "-3.25"), (-0.001, "0"), (1234.567, "1234.57"),
        (0.05, "0.05"), (100.1, "100.1"), (-7, "-7"), (Double.nan, "0"), (Double.infinity, "0"),
    ])
    func numbersAreFormattedCompactlyWithoutFoundation(_ value: Double, _ expected: String) {
        #expect(LayoutSVG.format(value) == expected)
    }
}
