// The box model of attachments. Late-loading pictures are what makes chat
// lists jump: a cell laid out before its image arrives grows when it does.
// The server records every picture's pixel size when it is uploaded, so the
// box a picture will take is known before any of its bytes are downloaded,
// and an estimate that includes it does not change when the picture appears.

/// What the layout needs to know of one attachment: its kind and, for a
/// picture or video, its size in pixels as displayed (orientation applied).
public struct LayoutAttachment: Sendable, Hashable {
    /// The kinds of attachment, spelled as the HTTP API spells them.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case image, video, file
    }

    public var kind: Kind
    /// Pixels, as displayed; `nil` when not known.
    public var pixelWidth: Int?
    public var pixelHeight: Int?

    public init(kind: Kind, pixelWidth: Int? = nil, pixelHeight: Int? = nil) {
        self.kind = kind
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
    }

    /// An attachment whose kind is named as on the wire (`image`, `video`,
    /// `file`); any other name is laid out as a file.
    public init(kindName: String, pixelWidth: Int?, pixelHeight: Int?) {
        self.init(kind: Kind(rawValue: kindName) ?? .file, pixelWidth: pixelWidth, pixelHeight: pixelHeight)
    }

    /// The pixel size a picture or video is shown at (scaled down to fit):
    /// `nil` for a file, and for a picture or video without both sides known
    /// and above 0, which are shown as a row.
    public var mediaSize: (width: Int, height: Int)? {
        guard kind != .file, let pixelWidth, let pixelHeight, pixelWidth > 0, pixelHeight > 0 else { return nil }
        return (pixelWidth, pixelHeight)
    }
}

/// The box an attachment takes in a message, in points.
public struct AttachmentBox: Sendable, Hashable {
    public enum Shape: String, Sendable, Hashable {
        /// A picture or video at its pixel size, scaled down to fit.
        case media
        /// A fixed-height row: a file, or a picture or video of unknown size.
        case row
    }

    public var shape: Shape
    public var width: Double
    public var height: Double

    public init(shape: Shape, width: Double, height: Double) {
        self.shape = shape
        self.width = width
        self.height = height
    }
}

/// A message as the height model sees it: its text and its attachments.
public struct LayoutMessage: Sendable, Hashable {
    public var text: String
    public var attachments: [LayoutAttachment]

    public init(text: String, attachments: [LayoutAttachment] = []) {
        self.text = text
        self.attachments = attachments
    }
}

/// A message's estimated height and the parts it adds up from.
public struct MessageEstimate: Sendable, Hashable {
    /// The text bubble: `lines * lineHeight + 2 * verticalPadding`, or 0 for
    /// a message of attachments only (empty text).
    public var textHeight: Double
    /// One box per attachment, in the message's order, stacked under the text.
    public var attachmentBoxes: [AttachmentBox]
    /// `textHeight + sum(box heights) + attachmentSpacing * max(boxes - 1, 0)`:
    /// a valid item height for ``LayoutInput``.
    public var height: Double

    public init(textHeight: Double, attachmentBoxes: [AttachmentBox], height: Double) {
        self.textHeight = textHeight
        self.attachmentBoxes = attachmentBoxes
        self.height = height
    }
}

extension TextMetrics {
    /// The message column in a viewport this wide: `viewportWidth *
    /// maxWidthFraction`, the widest a bubble (and so an attachment) may be.
    public func columnWidth(viewportWidth: Double) throws(LayoutError) -> Double {
        try validate()
        guard isValidSize(viewportWidth) else { throw .invalidViewportWidth(viewportWidth) }
        return viewportWidth * maxWidthFraction
    }

    /// The box `attachment` takes in a viewport `viewportWidth` points wide.
    ///
    /// A picture or video of `w` × `h` pixels (``LayoutAttachment/mediaSize``;
    /// one pixel is shown as one point) is scaled **down, never up**, to fit
    /// the column (`C = viewportWidth * maxWidthFraction`) and
    /// ``maxAttachmentHeight`` (`M`), aspect ratio kept:
    /// - `w <= C` and `h <= M`: `w × h`, as it is;
    /// - else, when the width limits it (`h * C <= w * M`): `C × (h * C / w)`;
    /// - else the height limits it: `(w * M / h) × M`.
    /// Each side is then clamped to the column (or `M`) and to its pixel size,
    /// which only ever removes a rounding error, so a box is never wider than
    /// the column, taller than `M`, or larger than the picture.
    ///
    /// A file, or a picture or video whose size is not known, is a row as
    /// wide as the column and ``attachmentRowHeight`` tall.
    public func attachmentBox(for attachment: LayoutAttachment, viewportWidth: Double) throws(LayoutError)
        -> AttachmentBox
    {
        box(for: attachment, column: try columnWidth(viewportWidth: viewportWidth))
    }

    /// ``attachmentBox(for:viewportWidth:)`` for each of `attachments`, in order.
    public func attachmentBoxes(for attachments: [LayoutAttachment], viewportWidth: Double) throws(LayoutError)
        -> [AttachmentBox]
    {
        let column = try columnWidth(viewportWidth: viewportWidth)
        return attachments.map { box(for: $0, column: column) }
    }

    /// A message's estimated height, from its text and its attachments, in a
    /// viewport `viewportWidth` points wide. The one rule of every estimate:
    /// text-only messages, page hints and timelines all come here.
    ///
    /// - The text bubble is `lines * lineHeight + 2 * verticalPadding` (see
    ///   the type's documentation), except that a message with attachments
    ///   and empty text has no bubble (0). A message with neither is one
    ///   empty line, as before attachments existed.
    /// - The attachments' boxes (``attachmentBox(for:viewportWidth:)``) stack
    ///   under the text, ``attachmentSpacing`` apart; the bubble's own
    ///   vertical padding separates the text from the first one.
    /// - `height = textHeight + sum(box heights) + attachmentSpacing *
    ///   max(attachments - 1, 0)`, added left to right (the text height, each
    ///   box's height in order, then the gaps).
    ///
    /// So a message's height never decreases when an attachment is added,
    /// except from the empty message without any (one line) to a message of
    /// one small picture.
    public func estimate(text: String, attachments: [LayoutAttachment] = [], viewportWidth: Double)
        throws(LayoutError) -> MessageEstimate
    {
        let column = try columnWidth(viewportWidth: viewportWidth)
        return estimate(
            LayoutMessage(text: text, attachments: attachments), column: column,
            charactersPerLine: unvalidatedCharactersPerLine(viewportWidth: viewportWidth))
    }

    /// The height of ``estimate(text:attachments:viewportWidth:)``: a valid
    /// item height for ``LayoutInput``.
    public func estimatedHeight(of text: String, attachments: [LayoutAttachment], viewportWidth: Double)
        throws(LayoutError) -> Double
    {
        try estimate(text: text, attachments: attachments, viewportWidth: viewportWidth).height
    }

    /// ``estimate(text:attachments:viewportWidth:)`` of `message`.
    public func estimate(_ message: LayoutMessage, viewportWidth: Double) throws(LayoutError) -> MessageEstimate {
        try estimate(text: message.text, attachments: message.attachments, viewportWidth: viewportWidth)
    }

    /// The estimates of a page of messages, in the same order (newest first
    /// for a page from the server).
    public func estimates(of messages: [LayoutMessage], viewportWidth: Double) throws(LayoutError)
        -> [MessageEstimate]
    {
        let column = try columnWidth(viewportWidth: viewportWidth)
        let perLine = unvalidatedCharactersPerLine(viewportWidth: viewportWidth)
        return messages.map { estimate($0, column: column, charactersPerLine: perLine) }
    }

    /// The heights of ``estimates(of:viewportWidth:)``.
    public func estimatedHeights(of messages: [LayoutMessage], viewportWidth: Double) throws(LayoutError)
        -> [Double]
    {
        try estimates(of: messages, viewportWidth: viewportWidth).map(\.height)
    }

    private func estimate(_ message: LayoutMessage, column: Double, charactersPerLine: Int) -> MessageEstimate {
        let boxes = message.attachments.map { box(for: $0, column: column) }
        let textHeight =
            message.text.isEmpty && !boxes.isEmpty
            ? 0 : textHeight(lines: Self.lineCount(of: message.text, charactersPerLine: charactersPerLine))
        // Added left to right, as documented: the text, each box in order, the gaps.
        let height =
            boxes.reduce(textHeight) { $0 + $1.height } + attachmentSpacing * Double(Swift.max(boxes.count - 1, 0))
        return MessageEstimate(textHeight: textHeight, attachmentBoxes: boxes, height: height)
    }

    private func box(for attachment: LayoutAttachment, column: Double) -> AttachmentBox {
        guard let size = attachment.mediaSize else {
            return AttachmentBox(shape: .row, width: column, height: attachmentRowHeight)
        }
        let w = Double(size.width)
        let h = Double(size.height)
        let maxHeight = maxAttachmentHeight
        if w <= column && h <= maxHeight {
            return AttachmentBox(shape: .media, width: w, height: h)
        }
        // Comparing cross products rather than ratios keeps the choice to
        // one rounding per side; the division then happens once.
        if h * column <= w * maxHeight {
            return AttachmentBox(
                shape: .media, width: Swift.min(column, w), height: Swift.min(h * column / w, maxHeight, h))
        }
        return AttachmentBox(
            shape: .media, width: Swift.min(w * maxHeight / h, column, w), height: Swift.min(maxHeight, h))
    }
}
