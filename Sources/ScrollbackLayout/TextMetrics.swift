// A deliberately simple height model for "page hints": before a client has
// measured anything, the server can estimate how tall a page of messages
// will be, e.g. to decide how many messages fill a screen. It is an estimate,
// not typesetting: no fonts, no kerning, no word boundaries. Attachments are
// boxes of a known size (AttachmentBox.swift), so a picture's height is known
// before any of its bytes are downloaded.

/// The height model behind ``estimate(text:attachments:viewportWidth:)``:
/// the text of a message bubble, and the boxes of its attachments.
///
/// **Text.** A bubble is at most `viewportWidth * maxWidthFraction` wide (the
/// message *column*). Inside it, `horizontalPadding` on each side leaves the
/// text width, which holds `floor(textWidth / averageCharacterWidth)`
/// characters per line (at least one). Each paragraph (text between explicit
/// newlines) wraps onto `ceil(characters / charactersPerLine)` lines, at least
/// one even when empty. The bubble is `lines * lineHeight + 2 *
/// verticalPadding` tall.
///
/// **Attachments** are laid out in the same column: see
/// ``attachmentBox(for:viewportWidth:)`` for one box and
/// ``estimate(text:attachments:viewportWidth:)`` for how text and boxes add up.
///
/// Wrapping by characters rather than words slightly underestimates long
/// messages (a word that does not fit moves whole to the next line); clients
/// replace estimates with measured heights as soon as cells are on screen.
/// Characters are counted as Swift `Character`s (grapheme clusters), so an
/// emoji or a letter with combining marks counts once.
public struct TextMetrics: Sendable, Equatable {
    /// Font size in points. Not used by the arithmetic itself; it documents
    /// which font the other metrics were taken from (the defaults fit the
    /// 17 pt iOS body font).
    public var fontSize: Double
    /// Height of one line of text (default 22).
    public var lineHeight: Double
    /// Average advance of one character (default 8.5, half the font size,
    /// typical for Latin text in a proportional font).
    public var averageCharacterWidth: Double
    /// Padding between the bubble's side and its text, on each side (default 12).
    public var horizontalPadding: Double
    /// Padding between the bubble's top or bottom and its text, on each side (default 8).
    public var verticalPadding: Double
    /// Widest a bubble may be, as a fraction of the viewport width (default
    /// 0.75): the message column, which attachments share with the text.
    public var maxWidthFraction: Double
    /// Tallest a picture or video may be shown, in points (default 320: about
    /// half an iPhone screen, so a tall photo never hides the whole
    /// conversation).
    public var maxAttachmentHeight: Double
    /// Height of the row that shows a file, or a picture or video whose size
    /// is not known (default 56: an icon, the name and the size).
    public var attachmentRowHeight: Double
    /// Gap between two attachments of one message, stacked vertically (default 4).
    public var attachmentSpacing: Double

    /// The metrics of a 17 pt body font: 22 pt lines, 8.5 pt average
    /// character width, 12 pt horizontal and 8 pt vertical padding, bubbles at
    /// most 75% of the viewport wide; pictures at most 320 pt tall, file rows
    /// 56 pt, 4 pt between attachments.
    public static let standard = TextMetrics()

    /// Creates a model; every parameter defaults to ``standard``'s value.
    public init(
        fontSize: Double = 17,
        lineHeight: Double = 22,
        averageCharacterWidth: Double = 8.5,
        horizontalPadding: Double = 12,
        verticalPadding: Double = 8,
        maxWidthFraction: Double = 0.75,
        maxAttachmentHeight: Double = 320,
        attachmentRowHeight: Double = 56,
        attachmentSpacing: Double = 4
    ) {
        self.fontSize = fontSize
        self.lineHeight = lineHeight
        self.averageCharacterWidth = averageCharacterWidth
        self.horizontalPadding = horizontalPadding
        self.verticalPadding = verticalPadding
        self.maxWidthFraction = maxWidthFraction
        self.maxAttachmentHeight = maxAttachmentHeight
        self.attachmentRowHeight = attachmentRowHeight
        self.attachmentSpacing = attachmentSpacing
    }

    /// The fields of ``TextMetrics``, named as the HTTP API spells them.
    public enum Field: String, Sendable, CaseIterable {
        case fontSize = "font_size"
        case lineHeight = "line_height"
        case averageCharacterWidth = "average_character_width"
        case horizontalPadding = "horizontal_padding"
        case verticalPadding = "vertical_padding"
        case maxWidthFraction = "max_width_fraction"
        case maxAttachmentHeight = "max_attachment_height"
        case attachmentRowHeight = "attachment_row_height"
        case attachmentSpacing = "attachment_spacing"

        /// The property this field names.
        public var keyPath: WritableKeyPath<TextMetrics, Double> {
            switch self {
            case .fontSize: \.fontSize
            case .lineHeight: \.lineHeight
            case .averageCharacterWidth: \.averageCharacterWidth
            case .horizontalPadding: \.horizontalPadding
            case .verticalPadding: \.verticalPadding
            case .maxWidthFraction: \.maxWidthFraction
            case .maxAttachmentHeight: \.maxAttachmentHeight
            case .attachmentRowHeight: \.attachmentRowHeight
            case .attachmentSpacing: \.attachmentSpacing
            }
        }

        /// What a valid value looks like, as used in ``LayoutError/message``.
        public var requirement: String {
            switch self {
            case .fontSize, .lineHeight, .averageCharacterWidth, .maxAttachmentHeight, .attachmentRowHeight:
                "a finite number > 0 and <= \(Int(TextMetrics.maximumLength))"
            case .horizontalPadding, .verticalPadding, .attachmentSpacing:
                "a finite number >= 0 and <= \(Int(TextMetrics.maximumLength))"
            case .maxWidthFraction:
                "a number > 0 and <= 1"
            }
        }
    }

    /// The value of `field`.
    public subscript(field: Field) -> Double {
        get { self[keyPath: field.keyPath] }
        set { self[keyPath: field.keyPath] = newValue }
    }

    /// This model with `values` in place of the fields they name (not validated).
    public func replacing(_ values: [Field: Double]) -> TextMetrics {
        var metrics = self
        for (field, value) in values { metrics[field] = value }
        return metrics
    }

    /// Upper bound for every length in the model, in points. Real metrics are
    /// tens of points; the bound keeps every estimate finite.
    public static let maximumLength: Double = 10_000

    /// Throws ``LayoutError/invalidTextMetric(_:_:)`` for the first field
    /// (in ``Field`` order) outside its range.
    public func validate() throws(LayoutError) {
        func positiveLength(_ value: Double) -> Bool { value > 0 && value <= Self.maximumLength }
        func length(_ value: Double) -> Bool { value >= 0 && value <= Self.maximumLength }
        guard positiveLength(fontSize) else { throw .invalidTextMetric(.fontSize, fontSize) }
        guard positiveLength(lineHeight) else { throw .invalidTextMetric(.lineHeight, lineHeight) }
        guard positiveLength(averageCharacterWidth) else {
            throw .invalidTextMetric(.averageCharacterWidth, averageCharacterWidth)
        }
        guard length(horizontalPadding) else {
            throw .invalidTextMetric(.horizontalPadding, horizontalPadding)
        }
        guard length(verticalPadding) else { throw .invalidTextMetric(.verticalPadding, verticalPadding) }
        guard maxWidthFraction > 0 && maxWidthFraction <= 1 else {
            throw .invalidTextMetric(.maxWidthFraction, maxWidthFraction)
        }
        guard positiveLength(maxAttachmentHeight) else {
            throw .invalidTextMetric(.maxAttachmentHeight, maxAttachmentHeight)
        }
        guard positiveLength(attachmentRowHeight) else {
            throw .invalidTextMetric(.attachmentRowHeight, attachmentRowHeight)
        }
        guard length(attachmentSpacing) else { throw .invalidTextMetric(.attachmentSpacing, attachmentSpacing) }
    }

    /// How many characters fit on one line of a bubble in a viewport this
    /// wide: `floor((viewportWidth * maxWidthFraction - 2 * horizontalPadding)
    /// / averageCharacterWidth)`, at least 1 (a very narrow viewport still
    /// shows one character per line).
    public func charactersPerLine(viewportWidth: Double) throws(LayoutError) -> Int {
        try validate()
        guard isValidSize(viewportWidth) else { throw .invalidViewportWidth(viewportWidth) }
        return unvalidatedCharactersPerLine(viewportWidth: viewportWidth)
    }

    /// Estimated height of a message showing `text` and no attachment in a
    /// viewport `viewportWidth` points wide: the text-only case of
    /// ``estimate(text:attachments:viewportWidth:)``, one rule for both.
    /// The result is a valid item height for ``LayoutInput``.
    public func estimatedHeight(of text: String, viewportWidth: Double) throws(LayoutError) -> Double {
        try estimate(text: text, viewportWidth: viewportWidth).height
    }

    /// ``estimatedHeight(of:viewportWidth:)`` for a page of messages, in the
    /// same order (newest first for a page from the server).
    public func estimatedHeights(of texts: [String], viewportWidth: Double) throws(LayoutError)
        -> [Double]
    {
        try estimatedHeights(of: texts.map { LayoutMessage(text: $0) }, viewportWidth: viewportWidth)
    }

    /// Number of lines `text` wraps onto at `charactersPerLine` characters per
    /// line: every paragraph between explicit line breaks (`\n`, `\r\n`, `\r`
    /// and other Unicode newlines) takes `ceil(count / charactersPerLine)`
    /// lines and at least one.
    public static func lineCount(of text: String, charactersPerLine: Int) -> Int {
        let perLine = Swift.max(charactersPerLine, 1)
        func lines(_ characters: Int) -> Int {
            characters == 0 ? 1 : (characters + perLine - 1) / perLine
        }
        var total = 0
        var run = 0
        for character in text {
            if character.isNewline {
                total += lines(run)
                run = 0
            } else {
                run += 1
            }
        }
        return total + lines(run)
    }

    func unvalidatedCharactersPerLine(viewportWidth: Double) -> Int {
        let textWidth = viewportWidth * maxWidthFraction - 2 * horizontalPadding
        let fitting = textWidth / averageCharacterWidth
        // Clamping first keeps the conversion safe for absurdly wide viewports;
        // for a value >= 1, Int's truncation is the floor (and, unlike
        // `rounded(.down)`, needs no libm, which pure-Swift Linux binaries lack).
        return Int(Swift.min(Swift.max(fitting, 1), 1_000_000_000))
    }

    /// The bubble's height for `lines` lines of text.
    func textHeight(lines: Int) -> Double {
        Double(lines) * lineHeight + 2 * verticalPadding
    }
}
