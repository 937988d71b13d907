// Wire types of the layout calculator over HTTP (`POST /v1/layout`, the
// `scrollback layout` command) and of the page hints on a history page. The
// arithmetic lives in ScrollbackLayout, which this module does not import:
// the mapping between the two is in ScrollbackServer/LayoutMapping.swift.

/// `POST /v1/layout`: what the layout calculator needs, in points.
///
/// `viewport_height` is required, and the items in one of two forms:
/// `item_heights` (heights the client measured or estimated itself) or
/// `items` (a text and attachments per message, whose heights the server
/// estimates with the page hints' model, attachments included). The sizes
/// default to 0, and without `scroll_offset` the response has no visible
/// range and `load_older` is false.
public struct LayoutRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case viewportHeight = "viewport_height"
        case itemHeights = "item_heights"
        case items
        case viewportWidth = "viewport_width"
        case metrics
        case spacing
        case topInset = "top_inset"
        case bottomInset = "bottom_inset"
        case scrollOffset = "scroll_offset"
        case prefetchThreshold = "prefetch_threshold"
    }

    /// One message of `items`: its text and its attachments, newest message first.
    public struct Item: Codable, Sendable, Equatable {
        enum CodingKeys: String, CodingKey {
            case text, attachments
        }

        /// The body (default empty: a message of attachments only).
        public var text: String
        /// At most ``APILimits/maxAttachmentsPerMessage`` (default none).
        public var attachments: [ItemAttachment]

        public init(text: String = "", attachments: [ItemAttachment] = []) {
            self.text = text
            self.attachments = attachments
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            text = try container.decodeIfPresent(String.self, forKey: .text) ?? ""
            attachments = try container.decodeIfPresent([ItemAttachment].self, forKey: .attachments) ?? []
        }
    }

    /// An attachment of an item, as an ``Attachment`` describes it: a
    /// picture's or video's size in pixels as displayed, when known.
    public struct ItemAttachment: Codable, Sendable, Equatable {
        public var kind: AttachmentKind
        public var width: Int?
        public var height: Int?

        public init(kind: AttachmentKind, width: Int? = nil, height: Int? = nil) {
            self.kind = kind
            self.width = width
            self.height = height
        }
    }

    /// Height of the visible area of the scroll view.
    public var viewportHeight: Double
    /// Item heights, newest first (index 0 = newest message); `nil` when
    /// the request gives `items` instead.
    public var itemHeights: [Double]?
    /// Messages to estimate, newest first, instead of `item_heights`.
    public var items: [Item]?
    /// With `items`: the width their text and attachments are laid out in
    /// (default 390, as on the page hints).
    public var viewportWidth: Double?
    /// With `items`: parameters of the height model by their names on the
    /// page hints (`line_height`, `max_attachment_height`, ...); the others
    /// keep their defaults.
    public var metrics: [String: Double]?
    /// Gap between two adjacent items (default 0).
    public var spacing: Double?
    /// Space above the oldest item (default 0).
    public var topInset: Double?
    /// Space below the newest item (default 0).
    public var bottomInset: Double?
    /// Distance scrolled up from the newest message (0 = pinned to the bottom).
    public var scrollOffset: Double?
    /// Ask for the next older page when the top of the content is closer than this.
    public var prefetchThreshold: Double?

    public init(
        viewportHeight: Double, itemHeights: [Double], spacing: Double? = nil, topInset: Double? = nil,
        bottomInset: Double? = nil, scrollOffset: Double? = nil, prefetchThreshold: Double? = nil
    ) {
        self.viewportHeight = viewportHeight
        self.itemHeights = itemHeights
        self.spacing = spacing
        self.topInset = topInset
        self.bottomInset = bottomInset
        self.scrollOffset = scrollOffset
        self.prefetchThreshold = prefetchThreshold
    }

    /// A request of messages whose heights the server estimates.
    public init(
        viewportHeight: Double, items: [Item], viewportWidth: Double? = nil, metrics: [String: Double]? = nil,
        spacing: Double? = nil, topInset: Double? = nil, bottomInset: Double? = nil, scrollOffset: Double? = nil,
        prefetchThreshold: Double? = nil
    ) {
        self.init(
            viewportHeight: viewportHeight, itemHeights: [], spacing: spacing, topInset: topInset,
            bottomInset: bottomInset, scrollOffset: scrollOffset, prefetchThreshold: prefetchThreshold)
        self.itemHeights = nil
        self.items = items
        self.viewportWidth = viewportWidth
        self.metrics = metrics
    }

    // A request without either form of items is a malformed body (400),
    // reported as the missing `item_heights` it was before `items` existed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        viewportHeight = try container.decode(Double.self, forKey: .viewportHeight)
        itemHeights = try container.decodeIfPresent([Double].self, forKey: .itemHeights)
        items = try container.decodeIfPresent([Item].self, forKey: .items)
        if itemHeights == nil && items == nil {
            throw DecodingError.keyNotFound(
                CodingKeys.itemHeights,
                .init(codingPath: container.codingPath, debugDescription: "Give `item_heights` or `items`."))
        }
        viewportWidth = try container.decodeIfPresent(Double.self, forKey: .viewportWidth)
        metrics = try container.decodeIfPresent([String: Double].self, forKey: .metrics)
        spacing = try container.decodeIfPresent(Double.self, forKey: .spacing)
        topInset = try container.decodeIfPresent(Double.self, forKey: .topInset)
        bottomInset = try container.decodeIfPresent(Double.self, forKey: .bottomInset)
        scrollOffset = try container.decodeIfPresent(Double.self, forKey: .scrollOffset)
        prefetchThreshold = try container.decodeIfPresent(Double.self, forKey: .prefetchThreshold)
    }
}

/// The answer of `POST /v1/layout` (and the output of `scrollback layout`).
public struct LayoutResponse: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case contentHeight = "content_height"
        case bottomPadding = "bottom_padding"
        case isScrollable = "is_scrollable"
        case items
        case visible
        case loadOlder = "load_older"
    }

    /// Where one item sits; offsets are measured from the bottom and from the
    /// top of the scroll content (`max(content_height, viewport_height)` tall).
    public struct Item: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case index
        case offsetFromBottom = "offset_from_bottom"
        case offsetFromTop = "offset_from_top"
        case height
    }

        public var index: Int
        public var offsetFromBottom: Double
        public var offsetFromTop: Double
        public var height: Double

        public init(index: Int, offsetFromBottom: Double, offsetFromTop: Double, height: Double) {
            self.index = index
            self.offsetFromBottom = offsetFromBottom
            self.offsetFromTop = offsetFromTop
            self.height = height
        }
    }

    /// The visible items, newest (`first`) to oldest (`last`), both inclusive.
    public struct Visible: Codable, Sendable, Equatable {
        public var first: Int
        public var last: Int

        public init(first: Int, last: Int) {
            self.first = first
            self.last = last
        }
    }

    public var contentHeight: Double
    public var bottomPadding: Double
    public var isScrollable: Bool
    public var items: [Item]
    /// `nil` (encoded as `null`) without a scroll offset or when nothing is visible.
    public var visible: Visible?
    public var loadOlder: Bool

    public init(
        contentHeight: Double, bottomPadding: Double, isScrollable: Bool, items: [Item], visible: Visible?,
        loadOlder: Bool
    ) {
        self.contentHeight = contentHeight
        self.bottomPadding = bottomPadding
        self.isScrollable = isScrollable
        self.items = items
        self.visible = visible
        self.loadOlder = loadOlder
    }

    // `visible` is always present, `null` when there is none: clients test for it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(contentHeight, forKey: .contentHeight)
        try container.encode(bottomPadding, forKey: .bottomPadding)
        try container.encode(isScrollable, forKey: .isScrollable)
        try container.encode(items, forKey: .items)
        try container.encode(visible, forKey: .visible)
        try container.encode(loadOlder, forKey: .loadOlder)
    }
}

/// Server-side estimates for a history page, present on
/// `GET /v1/conversations/{id}/messages` only when the caller sends
/// `viewport_height`: how tall each returned message will probably be, and
/// the layout those estimates give. Clients replace them with measured
/// heights as soon as the cells are on screen.
public struct PageLayoutHints: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case estimated
        case viewportHeight = "viewport_height"
        case viewportWidth = "viewport_width"
        case itemHeights = "item_heights"
        case contentHeight = "content_height"
        case bottomPadding = "bottom_padding"
        case metrics
    }

    /// The height model and spacing the estimates were computed with (defaults
    /// filled in), so a client can tell which assumptions it got.
    public struct Metrics: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case fontSize = "font_size"
        case lineHeight = "line_height"
        case averageCharacterWidth = "average_character_width"
        case horizontalPadding = "horizontal_padding"
        case verticalPadding = "vertical_padding"
        case maxWidthFraction = "max_width_fraction"
        case maxAttachmentHeight = "max_attachment_height"
        case attachmentRowHeight = "attachment_row_height"
        case attachmentSpacing = "attachment_spacing"
        case spacing
    }

        public var fontSize: Double
        public var lineHeight: Double
        public var averageCharacterWidth: Double
        public var horizontalPadding: Double
        public var verticalPadding: Double
        public var maxWidthFraction: Double
        /// Tallest a picture or video is shown.
        public var maxAttachmentHeight: Double
        /// Height of a file's row (or of a picture of unknown size).
        public var attachmentRowHeight: Double
        /// Gap between two attachments of one message.
        public var attachmentSpacing: Double
        /// Gap between two messages.
        public var spacing: Double

        public init(
            fontSize: Double, lineHeight: Double, averageCharacterWidth: Double, horizontalPadding: Double,
            verticalPadding: Double, maxWidthFraction: Double, maxAttachmentHeight: Double,
            attachmentRowHeight: Double, attachmentSpacing: Double, spacing: Double
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
            self.spacing = spacing
        }
    }

    /// Always `true`: these are estimates, not measurements.
    public var estimated: Bool
    /// The viewport the estimates are for (`viewport_width` defaults to 390).
    public var viewportHeight: Double
    public var viewportWidth: Double
    /// One estimated height per returned message, in the page's order
    /// (newest first): its text and its attachments' boxes.
    public var itemHeights: [Double]
    /// `sum(item_heights) + spacing * (n - 1)`.
    public var contentHeight: Double
    /// `max(viewport_height - content_height, 0)`.
    public var bottomPadding: Double
    public var metrics: Metrics

    public init(
        estimated: Bool = true, viewportHeight: Double, viewportWidth: Double, itemHeights: [Double],
        contentHeight: Double, bottomPadding: Double, metrics: Metrics
    ) {
        self.estimated = estimated
        self.viewportHeight = viewportHeight
        self.viewportWidth = viewportWidth
        self.itemHeights = itemHeights
        self.contentHeight = contentHeight
        self.bottomPadding = bottomPadding
        self.metrics = metrics
    }
}

// Page hints ride on history pages, so they write their own JSON too (see
// `JSONWritable`). Their numbers are finite: the server computes them from
// bounded inputs.

extension PageLayoutHints: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("bottom_padding")
        writer.number(bottomPadding)
        writer.key("content_height")
        writer.number(contentHeight)
        writer.key("estimated")
        writer.bool(estimated)
        writer.key("item_heights")
        writer.array(itemHeights)
        writer.key("metrics")
        metrics.write(to: &writer)
        writer.key("viewport_height")
        writer.number(viewportHeight)
        writer.key("viewport_width")
        writer.number(viewportWidth)
        writer.endObject()
    }
}

extension PageLayoutHints.Metrics: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("attachment_row_height")
        writer.number(attachmentRowHeight)
        writer.key("attachment_spacing")
        writer.number(attachmentSpacing)
        writer.key("average_character_width")
        writer.number(averageCharacterWidth)
        writer.key("font_size")
        writer.number(fontSize)
        writer.key("horizontal_padding")
        writer.number(horizontalPadding)
        writer.key("line_height")
        writer.number(lineHeight)
        writer.key("max_attachment_height")
        writer.number(maxAttachmentHeight)
        writer.key("max_width_fraction")
        writer.number(maxWidthFraction)
        writer.key("spacing")
        writer.number(spacing)
        writer.key("vertical_padding")
        writer.number(verticalPadding)
        writer.endObject()
    }
}
