import ScrollbackLayout
import ScrollbackModels

// The one mapping between the layout calculator's types and the wire types,
// shared by `POST /v1/layout` and `scrollback layout`. It lives here rather
// than in ScrollbackModels because that module does not depend on
// ScrollbackLayout (an iOS client can take either one alone).

extension LayoutInput {
    /// The calculator's input for a request; absent sizes are 0.
    public init(_ request: LayoutRequest) {
        self.init(
            viewportHeight: request.viewportHeight,
            itemHeights: request.itemHeights,
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

/// Why a layout request was refused, with the code and sentence a client
/// sees (HTTP 422) or the CLI prints.
public enum LayoutRequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// More than ``APILimits/maxLayoutItems`` item heights.
    case tooManyItems(count: Int)
    /// A size the calculator rejects (negative, overflowing, ...).
    case invalidInput(LayoutError)

    public var code: APIErrorCode {
        switch self {
        case .tooManyItems: .tooManyItems
        case .invalidInput: .invalidLayoutInput
        }
    }

    public var message: String {
        switch self {
        case .tooManyItems(let count):
            "item_heights may hold at most \(APILimits.maxLayoutItems) items (got \(count));"
                + " lay out the loaded window of the conversation, not all of it."
        case .invalidInput(let error):
            error.message
        }
    }

    public var description: String { message }
}

/// Computing a layout for a wire request, with the limits of the API.
public enum LayoutRequests {
    /// Validates and computes the layout for `request`.
    public static func layout(for request: LayoutRequest) throws(LayoutRequestError) -> ChatLayout {
        guard request.itemHeights.count <= APILimits.maxLayoutItems else {
            throw .tooManyItems(count: request.itemHeights.count)
        }
        do {
            return try ChatLayout(LayoutInput(request))
        } catch {
            throw .invalidInput(error)
        }
    }

    /// ``layout(for:)`` in wire form.
    public static func response(for request: LayoutRequest) throws(LayoutRequestError) -> LayoutResponse {
        LayoutResponse(try layout(for: request))
    }
}
