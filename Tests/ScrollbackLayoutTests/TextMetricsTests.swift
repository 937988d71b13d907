import PropertyBased
import ScrollbackLayout
import Testing

/// The text-height estimator used for page hints.
@Suite struct TextMetricsTests {
    let metrics = TextMetrics.standard
    /// An iPhone-sized screen: bubbles up to 292.5 points, 268.5 of text,
    /// floor(268.5 / 8.5) = 31 characters per line.
    let width = 390.0
    /// One line of text plus 8 points of padding above and below.
    let oneLine = 22.0 + 16

    @Test func defaultsAreTheDocumentedBodyFontMetrics() {
        #expect(metrics.fontSize == 17)
        #expect(metrics.lineHeight == 22)
        #expect(metrics.averageCharacterWidth == 8.5)
        #expect(metrics.horizontalPadding == 12)
        #expect(metrics.verticalPadding == 8)
        #expect(metrics.maxWidthFraction == 0.75)
        #expect(TextMetrics() == metrics)
    }

    @Test func charactersPerLineFollowTheBubbleWidth() throws {
        #expect(try metrics.charactersPerLine(viewportWidth: width) == 31)
        #expect(try metrics.charactersPerLine(viewportWidth: 1024) == 87)  // (768 - 24) / 8.5 = 87.5
    }

    @Test func emptyTextStillTakesOneLine() throws {
        #expect(try metrics.estimatedHeight(of: "", viewportWidth: width) == oneLine)
    }

    @Test func textWrapsWhenItExceedsALine() throws {
        let full = String(repeating: "a", count: 31)
        #expect(try metrics.estimatedHeight(of: full, viewportWidth: width) == oneLine)
        #expect(try metrics.estimatedHeight(of: full + "b", viewportWidth: width) == oneLine + 22)
        #expect(
            try metrics.estimatedHeight(of: String(repeating: "a", count: 94), viewportWidth: width) == oneLine + 66)
    }

    @Test func explicitNewlinesStartNewLines() throws {
        #expect(try metrics.estimatedHeight(of: "a\nb\nc", viewportWidth: width) == oneLine + 44)
        #expect(try metrics.estimatedHeight(of: "trailing\n", viewportWidth: width) == oneLine + 22)
        #expect(try metrics.estimatedHeight(of: "\n\n", viewportWidth: width) == oneLine + 44)
        // A Windows line break is one break, not two.
        #expect(try metrics.estimatedHeight(of: "a\r\nb", viewportWidth: width) == oneLine + 22)
        // A long paragraph wraps on its own; the next paragraph starts fresh.
        let paragraph = String(repeating: "x", count: 40)
        #expect(try metrics.estimatedHeight(of: paragraph + "\nshort", viewportWidth: width) == oneLine + 44)
    }

    @Test func emojiAndCombiningMarksCountAsOneCharacter() {
        #expect(TextMetrics.lineCount(of: String(repeating: "👍🏽", count: 4), charactersPerLine: 4) == 1)
        #expect(TextMetrics.lineCount(of: String(repeating: "e\u{301}", count: 5), charactersPerLine: 4) == 2)
    }

    @Test func narrowViewportShowsOneCharacterPerLine() throws {
        #expect(try metrics.charactersPerLine(viewportWidth: 0) == 1)
        #expect(try metrics.estimatedHeight(of: "abc", viewportWidth: 10) == oneLine + 44)
    }

    @Test func customMetricsChangeTheEstimate() throws {
        let compact = TextMetrics(
            lineHeight: 10, averageCharacterWidth: 5, horizontalPadding: 0, verticalPadding: 1, maxWidthFraction: 1)
        #expect(try compact.charactersPerLine(viewportWidth: 50) == 10)
        #expect(try compact.estimatedHeight(of: String(repeating: "z", count: 25), viewportWidth: 50) == 32)
    }

    @Test func pageEstimatesMatchSingleEstimatesAndFeedTheLayout() throws {
        let texts = ["hi", String(repeating: "long ", count: 30), "one\ntwo"]
        let heights = try metrics.estimatedHeights(of: texts, viewportWidth: width)
        #expect(heights == (try texts.map { try metrics.estimatedHeight(of: $0, viewportWidth: width) }))
        let layout = try ChatLayout(LayoutInput(viewportHeight: 800, itemHeights: heights, spacing: 4))
        #expect(layout.contentHeight == heights.reduce(0, +) + 8)
    }

    @Test func longerTextIsNeverShorter() async {
        let text = Gen.element(of: ["a", "b", " ", "\n", "é", "👍"]).compactMap { $0 }.array(of: 0...200)
        await propertyCheck(count: 200, input: text, Gen.element(of: ["x", "\n"]).compactMap { $0 }, points(0...1200)) {
            characters, extra, viewportWidth in
            let base = String(characters.joined())
            let shorter = try metrics.estimatedHeight(of: base, viewportWidth: viewportWidth)
            let longer = try metrics.estimatedHeight(of: base + extra, viewportWidth: viewportWidth)
            #expect(shorter >= oneLine)
            #expect(longer >= shorter)
        }
    }

    @Test(arguments: [-1, Double.nan, Double.infinity])
    func invalidViewportWidthIsRejected(_ width: Double) {
        let error = #expect(throws: LayoutError.self) { try metrics.estimatedHeight(of: "hi", viewportWidth: width) }
        #expect(error?.field == "viewport_width")
        #expect(error?.message == "viewport_width must be a finite number >= 0 (got \(width))")
    }

    @Test(arguments: TextMetrics.Field.allCases)
    func invalidMetricIsRejectedWithItsField(_ field: TextMetrics.Field) {
        for bad in [-1, Double.nan, 20_000] {
            var broken = TextMetrics.standard
            broken[field] = field == .maxWidthFraction && bad == 20_000 ? 1.5 : bad
            if !bad.isNaN { #expect(TextMetrics.standard.replacing([field: broken[field]]) == broken) }
            let error = #expect(throws: LayoutError.self) { try broken.estimatedHeight(of: "hi", viewportWidth: 390) }
            #expect(error?.field == field.rawValue)
        }
    }

    @Test func metricErrorMessagesSayWhatIsAllowed() {
        var broken = TextMetrics.standard
        broken.lineHeight = 0
        let error = #expect(throws: LayoutError.invalidTextMetric(.lineHeight, 0)) { try broken.validate() }
        #expect(error?.message == "line_height must be a finite number > 0 and <= 10000 (got 0.0)")
        broken = TextMetrics(maxWidthFraction: 0)
        let fraction = #expect(throws: LayoutError.self) { try broken.charactersPerLine(viewportWidth: 390) }
        #expect(fraction?.message == "max_width_fraction must be a number > 0 and <= 1 (got 0.0)")
    }
}
