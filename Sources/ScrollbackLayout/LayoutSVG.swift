// Draws a ChatLayout as an SVG picture, for the README and for debugging a
// layout by eye (`scrollback layout --svg FILE`). Pure string building: no
// Foundation, numbers go through the small formatter at the bottom.

/// Renders a ``ChatLayout`` as a standalone SVG document.
///
/// The picture shows the whole scroll content as a column (top of the content
/// at the top of the picture), with:
/// - each item as a rounded "bubble" labelled `#index` (`class="item"`;
///   visible items also carry `visible` and a stronger colour),
/// - the bottom padding as a hatched band labelled `bottom padding N`
///   (`class="bottom-padding"`), only when the padding is > 0,
/// - the insets as faint bands (`class="inset"`),
/// - the viewport as a red outline over the content (`class="viewport"`), at
///   the layout's scroll offset, or at offset 0 (the first screen a reader
///   sees) when the layout has none,
/// - a two-line summary (item count, heights, visible range, load-older flag).
///
/// All coordinates are the layout's points times ``scale``.
public struct LayoutSVG: Sendable, Equatable {
    /// Pixels per point. Non-finite or non-positive values are treated as 1.
    public var scale: Double
    /// Upper bound for the drawing's height in pixels: a taller layout is
    /// scaled down to fit. `nil` = no bound.
    public var maxDrawingHeight: Double?
    /// Width of the drawn chat column in pixels.
    public var columnWidth: Double
    /// Optional first line of the picture (escaped for XML).
    public var title: String?

    /// Creates a renderer; by default 1 px per point, at most 1200 px tall,
    /// a 240 px wide column and no title.
    public init(
        scale: Double = 1, maxDrawingHeight: Double? = 1200, columnWidth: Double = 240,
        title: String? = nil
    ) {
        self.scale = scale
        self.maxDrawingHeight = maxDrawingHeight
        self.columnWidth = columnWidth
        self.title = title
    }

    private static let margin = 16.0
    private static let lineStep = 18.0
    private static let annotationWidth = 220.0

    /// The SVG document (UTF-8 text, ending with a newline).
    public func render(_ layout: ChatLayout) -> String {
        let offset = layout.input.scrollOffset ?? 0
        let viewport = layout.viewportHeight
        let contentTop = layout.scrollContentHeight
        // An overscrolled viewport reaches above the content: draw it whole.
        let pictureTop = Swift.max(contentTop, offset + viewport)

        var scale = self.scale.isFinite && self.scale > 0 ? self.scale : 1
        if let maxDrawingHeight, maxDrawingHeight > 0, pictureTop * scale > maxDrawingHeight {
            scale = maxDrawingHeight / pictureTop
        }
        let column = columnWidth.isFinite && columnWidth > 40 ? columnWidth : 240
        let margin = Self.margin
        let f = Self.format
        let headerLines = title == nil ? 2.0 : 3.0
        let drawingTop = margin + headerLines * Self.lineStep + 8
        let summary =
            "\(layout.items.count) items, content \(f(layout.contentHeight)), viewport \(f(viewport)), "
            + "padding \(f(layout.bottomPadding)), " + (layout.isScrollable ? "scrollable" : "not scrollable")
        let scrollLine: String
        if layout.input.scrollOffset != nil {
            let visible = layout.visible.map { "visible #\($0.first)-#\($0.last)" } ?? "no item visible"
            scrollLine =
                "scroll offset \(f(offset)), \(visible), load older: \(layout.loadOlder ? "yes" : "no")"
        } else {
            scrollLine = "viewport at offset 0 (pinned to the newest message)"
        }
        // Rough text widths (0.6 em per character) so the header is never cut off.
        let headerWidth = Swift.max(
            Double(title?.count ?? 0) * 15 * 0.6, Double(Swift.max(summary.count, scrollLine.count)) * 12 * 0.6)
        let width = Swift.max(margin + column + 16 + Self.annotationWidth + margin, margin + headerWidth + margin)
        let height = drawingTop + pictureTop * scale + margin
        let annotationX = margin + column + 16

        /// y of a point `distance` above the bottom of the scroll content.
        func y(_ distance: Double) -> Double { drawingTop + (pictureTop - distance) * scale }

        var svg = ""
        svg.reserveCapacity(1024 + layout.items.count * 200)
        svg += #"<svg xmlns="http://www.w3.org/2000/svg" width="\#(f(width))" height="\#(f(height))""#
        svg += #" viewBox="0 0 \#(f(width)) \#(f(height))" font-family="system-ui, -apple-system, sans-serif">"#
        svg += "\n"
        svg += """
            <defs><pattern id="padding-hatch" width="8" height="8" patternUnits="userSpaceOnUse" \
            patternTransform="rotate(45)"><rect width="8" height="8" fill="#eef0f3"/>\
            <line x1="0" y1="0" x2="0" y2="8" stroke="#b4bac4" stroke-width="3"/></pattern></defs>

            """
        svg += ##"<rect width="\##(f(width))" height="\##(f(height))" fill="#ffffff"/>"##
        svg += "\n"

        // Header.
        var headerY = margin + 12
        if let title {
            svg += text(Self.escape(title), x: margin, y: headerY, size: 15, weight: "bold")
            headerY += Self.lineStep
        }
        svg += text(summary, x: margin, y: headerY, size: 12)
        headerY += Self.lineStep
        svg += text(scrollLine, x: margin, y: headerY, size: 12)

        // Scroll content, insets and padding.
        svg += rect(
            class: "scroll-content", x: margin, y: y(contentTop), width: column, height: contentTop * scale,
            attributes: ##"fill="#f7f8fa" stroke="#c9ced6""##)
        let input = layout.input
        if input.topInset > 0 {
            svg += rect(
                class: "inset", x: margin, y: y(contentTop), width: column, height: input.topInset * scale,
                attributes: ##"fill="#e9f2ea""##)
        }
        if input.bottomInset > 0 {
            svg += rect(
                class: "inset", x: margin, y: y(layout.bottomPadding + input.bottomInset), width: column,
                height: input.bottomInset * scale, attributes: ##"fill="#e9f2ea""##)
        }
        if layout.bottomPadding > 0 {
            let paddingHeight = layout.bottomPadding * scale
            svg += rect(
                class: "bottom-padding", x: margin, y: y(layout.bottomPadding), width: column,
                height: paddingHeight, attributes: ##"fill="url(#padding-hatch)" stroke="#9aa3af""##)
            let label = "bottom padding \(f(layout.bottomPadding))"
            if paddingHeight >= 16 {
                svg += text(
                    label, x: margin + column / 2, y: y(layout.bottomPadding / 2) + 4, size: 12,
                    anchor: "middle", class: "bottom-padding-label", background: true)
            } else {
                svg += text(
                    label, x: annotationX, y: y(0) - 2, size: 11, class: "bottom-padding-label")
            }
        }

        // Items as chat bubbles, alternating sides.
        let bubbleWidth = column * 0.75
        for frame in layout.items {
            let isVisible = layout.visible?.contains(frame.index) ?? false
            let x = frame.index % 2 == 0 ? margin + column - bubbleWidth - 6 : margin + 6
            let top = y(frame.topEdgeFromBottom)
            let pixels = frame.height * scale
            let radius = Swift.min(10, pixels / 2)
            let fill = isVisible ? "#3b82f6" : "#bcd0ee"
            let labelFill = isVisible ? "#ffffff" : "#1f2937"
            svg += #"<g class="item\#(isVisible ? " visible" : "")" data-index="\#(frame.index)">"#
            svg += #"<rect x="\#(f(x))" y="\#(f(top))" width="\#(f(bubbleWidth))" height="\#(f(pixels))""#
            svg += #" rx="\#(f(radius))" fill="\#(fill)"/>"#
            if pixels >= 8 {
                let size = Swift.min(12, pixels * 0.8)
                svg += #"<text x="\#(f(x + bubbleWidth / 2))" y="\#(f(top + pixels / 2 + size * 0.35))""#
                svg += #" font-size="\#(f(size))" text-anchor="middle" fill="\#(labelFill)">"#
                svg += "#\(frame.index)</text>"
            }
            svg += "</g>\n"
        }

        // The viewport over the content, annotated on the right.
        let windowTop = offset + viewport
        svg += rect(
            class: "viewport", x: margin - 6, y: y(windowTop), width: column + 12, height: viewport * scale,
            attributes: ##"fill="none" stroke="#d0021b" stroke-width="2""##)
        svg += text(
            "viewport \(f(viewport))", x: annotationX, y: y(windowTop) + 12, size: 12, fill: "#d0021b",
            class: "viewport-label")
        svg += text(
            "offset \(f(offset))", x: annotationX, y: y(offset) - 4, size: 12, fill: "#d0021b",
            class: "viewport-label")
        if Swift.abs(windowTop - contentTop) * scale >= 16 {  // else the viewport label is there
            svg += text(
                "content top \(f(contentTop))", x: annotationX, y: y(contentTop) + 12, size: 11, fill: "#6b7280")
        }
        svg += "</svg>\n"
        return svg
    }

    private func rect(
        class className: String, x: Double, y: Double, width: Double, height: Double, attributes: String
    ) -> String {
        let f = Self.format
        return #"<rect class="\#(className)" x="\#(f(x))" y="\#(f(y))""#
            + #" width="\#(f(width))" height="\#(f(height))" \#(attributes)/>"# + "\n"
    }

    private func text(
        _ content: String, x: Double, y: Double, size: Double, anchor: String = "start",
        weight: String = "normal", fill: String = "#111827", class className: String? = nil,
        background: Bool = false
    ) -> String {
        let f = Self.format
        let classAttribute = className.map { #" class="\#($0)""# } ?? ""
        // A white halo keeps a label readable on top of the hatch pattern.
        let halo = background ? ##" stroke="#ffffff" stroke-width="4" paint-order="stroke""## : ""
        return #"<text\#(classAttribute) x="\#(f(x))" y="\#(f(y))" font-size="\#(f(size))" font-weight="\#(weight)""#
            + #" text-anchor="\#(anchor)" fill="\#(fill)"\#(halo)>\#(content)</text>"#
            + "\n"
    }

    /// Escapes `&`, `<`, `>`, `"` and `'` for XML text and attributes.
    public static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            default: result.append(character)
            }
        }
        return result
    }

    /// Formats a number for SVG without Foundation: rounded to at most two
    /// decimals, no trailing zeros, no exponent, no negative zero
    /// (`12`, `12.5`, `0.13`, `-3.25`). Magnitudes of 10^13 and above, which
    /// no drawing needs, fall back to Swift's own description; NaN and
    /// infinities, which SVG cannot express, become `0`.
    public static func format(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        let hundredths = value * 100
        guard Swift.abs(hundredths) < 1e15 else { return "\(value)" }
        // Round half away from zero by hand: `Double.rounded()` calls libm,
        // which a pure-Swift executable on Linux does not link by itself.
        var scaled = Int64(hundredths)  // truncates toward zero
        let remainder = hundredths - Double(scaled)  // exact below 2^53
        if remainder >= 0.5 { scaled += 1 } else if remainder <= -0.5 { scaled -= 1 }
        if scaled == 0 { return "0" }
        let magnitude = scaled.magnitude
        let whole = magnitude / 100
        let fraction = magnitude % 100
        var result = scaled < 0 ? "-" : ""
        result += String(whole)
        if fraction != 0 {
            result += "."
            result += fraction < 10 ? "0" : ""
            result += String(fraction % 10 == 0 ? fraction / 10 : fraction)
        }
        return result
    }
}
