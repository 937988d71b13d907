import ScrollbackLayout
import ScrollbackModels
import ScrollbackStore

/// Page hints on `GET /v1/conversations/{id}/messages`: with `viewport_height`
/// the page carries estimated message heights (``TextMetrics``: each
/// message's text and the boxes of its attachments, from their stored pixel
/// sizes) and the layout they give; with `limit=fill` the page holds just
/// enough messages to cover two screens.
///
/// Query parameters, all optional, all decimals written with digits, at
/// most one decimal point and an optional exponent (no sign):
/// - `viewport_height` (points, > 0, <= 100000) switches the hints on;
/// - `viewport_width` (same range; default 390, an iPhone's width in points);
/// - `font_size`, `line_height`, `average_character_width`,
///   `horizontal_padding`, `vertical_padding`, `max_width_fraction`,
///   `max_attachment_height`, `attachment_row_height`, `attachment_spacing`:
///   the height model, defaults and ranges of ``TextMetrics/standard``;
/// - `spacing` (gap between messages, default 8, <= 10000);
/// - `limit=fill` (needs `viewport_height`).
/// Every one of them except `limit` needs `viewport_height`; alone it is
/// refused rather than silently ignored.
struct PageHintRequest {
    static let defaultViewportWidth = LayoutRequests.defaultViewportWidth
    static let defaultSpacing = 8.0
    static let maximumViewportLength = APILimits.maxHintViewportLength
    /// `limit=fill` reads at most this many messages and never returns more.
    static let fillReadLimit = APILimits.pageLimit.upperBound

    struct Estimation {
        var viewportHeight: Double
        var viewportWidth: Double
        var metrics: TextMetrics
        var spacing: Double
    }

    /// `nil` when the caller sent no `viewport_height`: the page stays exactly as it was.
    let estimation: Estimation?
    /// `limit=fill` was given.
    let fill: Bool

    /// The store limit to read with, when the hints decide it; `nil` means
    /// "use the `limit` parameter as usual".
    var fetchLimit: Int? { fill ? Self.fillReadLimit : nil }

    init(_ query: QueryParameters) throws {
        let fill = try query.single("limit") == "fill"
        let viewportRequirement = "a number of points > 0 and <= \(Int(Self.maximumViewportLength))"
        let viewportHeight = try query.decimal("viewport_height", requirement: viewportRequirement) {
            $0 > 0 && $0 <= Self.maximumViewportLength
        }
        let viewportWidth = try query.decimal("viewport_width", requirement: viewportRequirement) {
            $0 > 0 && $0 <= Self.maximumViewportLength
        }
        let spacing = try query.decimal(
            "spacing", requirement: "a number of points >= 0 and <= \(Int(TextMetrics.maximumLength))"
        ) { $0 <= TextMetrics.maximumLength }
        // The metric's own range is checked by TextMetrics.validate below, so
        // its message and the library's stay one and the same.
        var metricValues: [TextMetrics.Field: Double] = [:]
        for field in TextMetrics.Field.allCases {
            let requirement = field.requirement
            metricValues[field] = try query.decimal(field.rawValue, requirement: requirement) { _ in true }
        }

        guard let viewportHeight else {
            if fill {
                throw APIError.badRequest(
                    .invalidParameter,
                    "`limit=fill` needs `viewport_height` (points): the page is cut to cover two screens of that height.")
            }
            let stray = (viewportWidth != nil ? ["viewport_width"] : []) + (spacing != nil ? ["spacing"] : [])
                + TextMetrics.Field.allCases.filter { metricValues[$0] != nil }.map(\.rawValue)
            if let first = stray.first {
                throw APIError.badRequest(
                    .invalidParameter, "`\(first)` only applies together with `viewport_height`.")
            }
            self.estimation = nil
            self.fill = false
            return
        }

        let metrics = TextMetrics.standard.replacing(metricValues)
        do {
            try metrics.validate()
        } catch {
            throw APIError.badRequest(.invalidParameter, error.message + ".")
        }
        self.estimation = Estimation(
            viewportHeight: viewportHeight, viewportWidth: viewportWidth ?? Self.defaultViewportWidth,
            metrics: metrics, spacing: spacing ?? Self.defaultSpacing)
        self.fill = fill
    }

    /// The smallest page `limit=N` would return for `anchor` whose estimated
    /// content (`sum(heights) + spacing * (n - 1)`) reaches `target`, cut
    /// from `page` (read with `limit=200`); all of it when even that falls short.
    static func smallestPage(
        cutFrom page: MessagePage, anchor: PageAnchor, covering target: Double, spacing: Double,
        height: (Message) -> Double
    ) -> MessagePage {
        guard !page.messages.isEmpty else { return page }
        for count in 1..<page.messages.count {
            let candidate = page.narrowed(to: count, anchor: anchor)
            let content = candidate.messages.map(height).reduce(0, +) + spacing * Double(max(candidate.messages.count - 1, 0))
            if content >= target { return candidate }
        }
        return page
    }

    /// The page as the caller asked for it: unchanged without hints; with
    /// hints, cut to fill (for `limit=fill`) and carrying `layout`.
    func apply(to page: MessagePage, anchor: PageAnchor) throws -> MessagePage {
        guard let estimation else { return page }
        var page = page
        var heights: [Double]
        do {
            heights = try estimation.metrics.estimatedHeights(
                of: page.messages.map(LayoutMessage.init), viewportWidth: estimation.viewportWidth)
        } catch {
            throw APIError.badRequest(.invalidParameter, error.message + ".")
        }
        if fill {
            let heightBySeq = Dictionary(uniqueKeysWithValues: zip(page.messages.map(\.seq), heights))
            page = Self.smallestPage(
                cutFrom: page, anchor: anchor, covering: 2 * estimation.viewportHeight, spacing: estimation.spacing
            ) { heightBySeq[$0.seq]! }
            heights = page.messages.map { heightBySeq[$0.seq]! }
        }
        let layout: ChatLayout
        do {
            layout = try ChatLayout(
                LayoutInput(
                    viewportHeight: estimation.viewportHeight, itemHeights: heights, spacing: estimation.spacing))
        } catch {
            throw APIError.badRequest(.invalidParameter, error.message + ".")
        }
        let metrics = estimation.metrics
        page.layout = PageLayoutHints(
            estimated: true, viewportHeight: estimation.viewportHeight, viewportWidth: estimation.viewportWidth,
            itemHeights: heights, contentHeight: layout.contentHeight, bottomPadding: layout.bottomPadding,
            metrics: PageLayoutHints.Metrics(
                fontSize: metrics.fontSize, lineHeight: metrics.lineHeight,
                averageCharacterWidth: metrics.averageCharacterWidth, horizontalPadding: metrics.horizontalPadding,
                verticalPadding: metrics.verticalPadding, maxWidthFraction: metrics.maxWidthFraction,
                maxAttachmentHeight: metrics.maxAttachmentHeight, attachmentRowHeight: metrics.attachmentRowHeight,
                attachmentSpacing: metrics.attachmentSpacing, spacing: estimation.spacing))
        return page
    }
}
