import ScrollbackLayout
import ScrollbackMedia
import ScrollbackModels

// The one mapping between the layout calculator's types and the wire types,
// shared by `POST /v1/layout` and `scrollback layout`. It lives here rather
// than in ScrollbackModels because that module does not depend on
// ScrollbackLayout (an iOS client can take either one alone).

extension LayoutInput {
    /// The calculator's input for a request whose item heights are
    /// `itemHeights` (``LayoutRequests/itemHeights(for:)``); absent sizes are 0.
    public init(_ request: LayoutRequest, itemHeights: [Double]) {
        self.init(
            viewportHeight: request.viewportHeight,
            itemHeights: itemHeights,
            spacing: request.spacing ?? 0,
            topInset: request.topInset ?? 0,
            bottomInset: request.bottomInset ?? 0,
            scrollOffset: request.scrollOffset,
            prefetchThreshold: request.prefetchThreshold)
    }
}

extension LayoutResponse {
    /// The wire form of a computed layout.
    public init(_ layout: ChatLayout) {
        self.init(
            contentHeight: layout.contentHeight,
            bottomPadding: layout.bottomPadding,
            isScrollable: layout.isScrollable,
            items: layout.items.map {
                Item(
                    index: $0.index, offsetFromBottom: $0.offsetFromBottom, offsetFromTop: $0.offsetFromTop,
                    height: $0.height)
            },
            visible: layout.visible.map { Visible(first: $0.first, last: $0.last) },
            loadOlder: layout.loadOlder)
    }
}

extension LayoutAttachment {
    /// How the height model sees a stored attachment.
    init(_ attachment: Attachment) {
        self.init(kindName: attachment.kind.rawValue, pixelWidth: attachment.width, pixelHeight: attachment.height)
    }

    /// How the height model sees an attachment of a layout request.
    init(_ attachment: LayoutRequest.ItemAttachment) {
        self.init(kindName: attachment.kind.rawValue, pixelWidth: attachment.width, pixelHeight: attachment.height)
    }
}

extension LayoutMessage {
    /// How the height model sees a stored message: its body and attachments.
    init(_ message: Message) {
        self.init(text: message.body, attachments: message.attachments.map(LayoutAttachment.init))
    }
}

/// Why a layout request was refused, with the code and sentence a client
/// sees (HTTP 422) or the CLI prints.
public enum LayoutRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// More than ``APILimits/maxLayoutItems`` item heights or items.
    case tooManyItems(field: String, count: Int)
    /// A size the calculator rejects (negative, overflowing, ...).
    case invalidInput(LayoutError)
    /// A field of `metrics` out of its range.
    case invalidMetric(LayoutError)
    /// A name in `metrics` that is not one of the height model's.
    case unknownMetric(String)
    /// Both `item_heights` and `items`.
    case bothItemForms
    /// `viewport_width` or `metrics` next to `item_heights`, which they cannot change.
    case estimateParameterWithoutItems(field: String)
    /// More than ``APILimits/maxAttachmentsPerMessage`` attachments on `items[item]`.
    case tooManyAttachments(item: Int, count: Int)
    /// A picture's side outside 1...``LayoutRequests/maxAttachmentSide``.
    case invalidAttachmentSide(item: Int, attachment: Int, side: String, value: Int)
    /// A picture with a width but no height, or the reverse.
    case attachmentSideMissing(item: Int, attachment: Int, missing: String)

    public var code: APIErrorCode {
        switch self {
        case .tooManyItems: .tooManyItems
        default: .invalidLayoutInput
        }
    }

    public var message: String {
        switch self {
        case .tooManyItems(let field, let count):
            "\(field) may hold at most \(APILimits.maxLayoutItems) items (got \(count));"
                + " lay out the loaded window of the conversation, not all of it."
        case .invalidInput(let error):
            error.message
        case .invalidMetric(let error):
            "metrics." + error.message
        case .unknownMetric(let name):
            "metrics.\(name.prefix(64)) is not a parameter of the height model; the parameters are "
                + TextMetrics.Field.allCases.map(\.rawValue).joined(separator: ", ") + "."
        case .bothItemForms:
            "Give either item_heights (heights you measured) or items (messages whose heights the server"
                + " estimates), not both."
        case .estimateParameterWithoutItems(let field):
            "\(field) only applies to items; item_heights are used as they are."
        case .tooManyAttachments(let item, let count):
            "items[\(item)].attachments may hold at most \(APILimits.maxAttachmentsPerMessage) attachments,"
                + " as a message does (got \(count))."
        case .invalidAttachmentSide(let item, let attachment, let side, let value):
            "items[\(item)].attachments[\(attachment)].\(side) must be a whole number of pixels from 1 to"
                + " \(LayoutRequests.maxAttachmentSide) (got \(value))."
        case .attachmentSideMissing(let item, let attachment, let missing):
            "items[\(item)].attachments[\(attachment)] needs both width and height, or neither"
                + " (\(missing) is missing)."
        }
    }

    public var description: String { message }
}

/// Computing a layout for a wire request, with the limits of the API.
public enum LayoutRequests {
    /// The largest side in pixels of a picture in `items`: the largest an
    /// uploaded picture may have (``ImageLimits/standard``).
    public static let maxAttachmentSide = ImageLimits.standard.maxSide
    /// `viewport_width` of `items` when not given, as on the page hints.
    public static let defaultViewportWidth = 390.0

    /// The item heights of `request`: `item_heights` as given, or the
    /// estimates of `items` (text and attachment boxes, ``TextMetrics``).
    public static func itemHeights(for request: LayoutRequest) throws(LayoutRequestError) -> [Double] {
        if let heights = request.itemHeights {
            guard request.items == nil else { throw .bothItemForms }
            guard heights.count <= APILimits.maxLayoutItems else {
                throw .tooManyItems(field: "item_heights", count: heights.count)
            }
            if request.viewportWidth != nil { throw .estimateParameterWithoutItems(field: "viewport_width") }
            if request.metrics != nil { throw .estimateParameterWithoutItems(field: "metrics") }
            return heights
        }
        let items = request.items ?? []
        guard items.count <= APILimits.maxLayoutItems else { throw .tooManyItems(field: "items", count: items.count) }
        var overrides: [TextMetrics.Field: Double] = [:]
        for (name, value) in (request.metrics ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard let field = TextMetrics.Field(rawValue: name) else { throw .unknownMetric(name) }
            overrides[field] = value
        }
        let metrics = TextMetrics.standard.replacing(overrides)
        do {
            try metrics.validate()
        } catch {
            throw .invalidMetric(error)
        }
        var messages: [LayoutMessage] = []
        messages.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            guard item.attachments.count <= APILimits.maxAttachmentsPerMessage else {
                throw .tooManyAttachments(item: index, count: item.attachments.count)
            }
            for (position, attachment) in item.attachments.enumerated() {
                for (side, value) in [("width", attachment.width), ("height", attachment.height)] {
                    if let value, !(1...maxAttachmentSide).contains(value) {
                        throw .invalidAttachmentSide(item: index, attachment: position, side: side, value: value)
                    }
                }
                if (attachment.width == nil) != (attachment.height == nil) {
                    throw .attachmentSideMissing(
                        item: index, attachment: position, missing: attachment.width == nil ? "width" : "height")
                }
            }
            messages.append(LayoutMessage(text: item.text, attachments: item.attachments.map(LayoutAttachment.init)))
        }
        do {
            return try metrics.estimatedHeights(
                of: messages, viewportWidth: request.viewportWidth ?? defaultViewportWidth)
        } catch {
            throw .invalidInput(error)
        }
    }

    /// Validates and computes the layout for `request`.
    public static func layout(for request: LayoutRequest) throws(LayoutRequestError) -> ChatLayout {
        let heights = try itemHeights(for: request)
        do {
            return try ChatLayout(LayoutInput(request, itemHeights: heights))
        } catch {
            throw .invalidInput(error)
        }
    }

    /// ``layout(for:)`` in wire form.
    public static func response(for request: LayoutRequest) throws(LayoutRequestError) -> LayoutResponse {
        LayoutResponse(try layout(for: request))
    }
}
