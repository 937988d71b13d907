// The layout calculator for an inverted chat list: newest message at the
// bottom, history above it, and, when the messages do not fill the screen,
// packed at the top with a spacer ("bottom padding") underneath.
//
// Coordinates: every vertical position is a distance in points measured from
// the BOTTOM of the scroll content, because that is the edge that stays put
// in a chat (older pages grow the content upwards). The scroll offset is
// measured the same way: 0 = the viewport shows the bottom of the content
// (pinned to the newest message), larger = scrolled up into history.

/// Everything the layout calculator needs, in points.
///
/// Field names map one to one onto the HTTP API's snake_case fields
/// (`viewport_height`, `item_heights`, `spacing`, `top_inset`, `bottom_inset`,
/// `scroll_offset`, `prefetch_threshold`).
public struct LayoutInput: Sendable, Equatable {
    /// Height of the visible area of the scroll view.
    public var viewportHeight: Double
    /// Measured (or estimated) item heights, **newest first**: index 0 is the
    /// newest message, exactly the order in which the server returns pages,
    /// so an older page is appended at the end.
    public var itemHeights: [Double]
    /// Gap between two adjacent items (not before the first or after the last).
    public var spacing: Double
    /// Space above the oldest item, inside the content.
    public var topInset: Double
    /// Space below the newest item, inside the content (above the bottom padding).
    public var bottomInset: Double
    /// How far the reader has scrolled up from the newest message; 0 = pinned
    /// to the bottom. `nil` when the caller only wants positions; then
    /// ``ChatLayout/visible`` is `nil` and ``ChatLayout/loadOlder`` is `false`.
    ///
    /// Offsets beyond ``ChatLayout/maxScrollOffset`` (an overscroll at the
    /// top) are accepted as they are, not clamped: they describe where the
    /// viewport really is.
    public var scrollOffset: Double?
    /// Request the next older page when the distance from the top of the
    /// viewport to the top of the content is strictly below this many points.
    /// `nil` means "never prefetch" (``ChatLayout/loadOlder`` is `false`).
    public var prefetchThreshold: Double?

    /// Creates an input; every size defaults to 0 and the optional fields to `nil`.
    public init(
        viewportHeight: Double,
        itemHeights: [Double],
        spacing: Double = 0,
        topInset: Double = 0,
        bottomInset: Double = 0,
        scrollOffset: Double? = nil,
        prefetchThreshold: Double? = nil
    ) {
        self.viewportHeight = viewportHeight
        self.itemHeights = itemHeights
        self.spacing = spacing
        self.topInset = topInset
        self.bottomInset = bottomInset
        self.scrollOffset = scrollOffset
        self.prefetchThreshold = prefetchThreshold
    }

    /// Checks every field without computing a layout: each size must be a
    /// finite number >= 0. Throws the first problem found, in field order
    /// (viewport_height, spacing, top_inset, bottom_inset, scroll_offset,
    /// prefetch_threshold, then item_heights by index).
    public func validate() throws(LayoutError) {
        try validateScalars()
        for index in itemHeights.indices where !isValidSize(itemHeights[index]) {
            throw .invalidItemHeight(index: index, value: itemHeights[index])
        }
    }

    func validateScalars() throws(LayoutError) {
        guard isValidSize(viewportHeight) else { throw .invalidViewportHeight(viewportHeight) }
        guard isValidSize(spacing) else { throw .invalidSpacing(spacing) }
        guard isValidSize(topInset) else { throw .invalidTopInset(topInset) }
        guard isValidSize(bottomInset) else { throw .invalidBottomInset(bottomInset) }
        if let scrollOffset, !isValidSize(scrollOffset) { throw .invalidScrollOffset(scrollOffset) }
        if let prefetchThreshold, !isValidSize(prefetchThreshold) {
            throw .invalidPrefetchThreshold(prefetchThreshold)
        }
    }
}

/// `true` for a finite number >= 0. NaN fails both comparisons.
@inline(__always)
func isValidSize(_ value: Double) -> Bool {
    value >= 0 && value < .infinity
}

/// Where one item sits in the scroll content.
public struct ItemFrame: Sendable, Equatable {
    /// Position in ``LayoutInput/itemHeights`` (0 = newest).
    public var index: Int
    /// Distance from the bottom of the scroll content to the item's bottom
    /// edge: `bottomPadding + bottomInset + sum_{j<index}(height_j + spacing)`.
    public var offsetFromBottom: Double
    /// Distance from the top of the scroll content (whose total height is
    /// ``ChatLayout/scrollContentHeight``) to the item's top edge.
    public var offsetFromTop: Double
    /// The item's height, as given.
    public var height: Double

    /// Creates a frame.
    public init(index: Int, offsetFromBottom: Double, offsetFromTop: Double, height: Double) {
        self.index = index
        self.offsetFromBottom = offsetFromBottom
        self.offsetFromTop = offsetFromTop
        self.height = height
    }

    /// Distance from the bottom of the scroll content to the item's top edge.
    @inlinable
    public var topEdgeFromBottom: Double { offsetFromBottom + height }
}

/// The items a viewport shows: a contiguous run of indices, because items are
/// stacked without overlap.
public struct VisibleRange: Sendable, Equatable {
    /// The newest visible item (lowest index, nearest the bottom of the screen).
    public var first: Int
    /// The oldest visible item (highest index, nearest the top of the screen).
    public var last: Int

    /// Creates a range; `first` must not exceed `last`.
    public init(first: Int, last: Int) {
        precondition(first <= last, "VisibleRange needs first <= last")
        self.first = first
        self.last = last
    }

    /// `first...last`.
    public var indices: ClosedRange<Int> { first...last }
    /// Number of visible items.
    public var count: Int { last - first + 1 }
    /// Whether the item at `index` is visible.
    public func contains(_ index: Int) -> Bool { first <= index && index <= last }
}

/// The computed layout of an inverted chat list.
///
/// Build one with ``init(_:)``; it validates its input and runs in time linear
/// in the number of items (one pass to sum the heights, one to place them).
///
/// The rules, in points:
/// - `contentHeight = sum(heights) + spacing * max(n - 1, 0) + topInset + bottomInset`
/// - `bottomPadding = max(viewportHeight - contentHeight, 0)`: too few
///   messages sit at the top of the screen, with this spacer below them.
/// - `isScrollable = contentHeight > viewportHeight`
/// - the scroll content is `contentHeight + bottomPadding = max(contentHeight,
///   viewportHeight)` tall; item `i`'s bottom edge is
///   `bottomPadding + bottomInset + sum_{j<i}(h_j + spacing)` above its bottom.
///   Older items only ever stack on top, so once the content fills the
///   viewport (padding 0) appending an older page moves no existing item
///   relative to the bottom, bit for bit.
///
/// Visibility rule: with a scroll offset `o`, the viewport covers the window
/// `[o, o + viewportHeight]` measured from the bottom. An item is visible when
/// it overlaps the window's *interior*: `bottom < o + viewportHeight` and
/// `top > o`. An item that only touches the window's edge (its top edge exactly
/// at the viewport's bottom, or its bottom edge exactly at the viewport's top)
/// shows zero pixels and is not visible; a zero-height item is visible when it
/// lies strictly inside the window.
public struct ChatLayout: Sendable, Equatable {
    /// The input this layout was computed from.
    public let input: LayoutInput
    /// Sum of the heights, the spacing between items and both insets.
    public let contentHeight: Double
    /// Spacer under the newest item: `max(viewportHeight - contentHeight, 0)`.
    public let bottomPadding: Double
    /// `contentHeight > viewportHeight`.
    public let isScrollable: Bool
    /// One frame per item, in input order (index 0 = newest).
    public let items: [ItemFrame]
    /// The visible items at ``LayoutInput/scrollOffset``; `nil` when no offset
    /// was given or no item intersects the viewport.
    public let visible: VisibleRange?
    /// `true` when the next older page should be requested: a scroll offset
    /// and a threshold were given and ``distanceToTop`` is strictly below the
    /// threshold. A threshold of 0 therefore only fires on an overscroll past
    /// the top; a short conversation (padding > 0) fires for any threshold > 0.
    public let loadOlder: Bool

    /// The viewport height the layout was computed for.
    public var viewportHeight: Double { input.viewportHeight }
    /// Total height of the scroll content: `contentHeight + bottomPadding`,
    /// i.e. `max(contentHeight, viewportHeight)`.
    public var scrollContentHeight: Double { Swift.max(contentHeight, input.viewportHeight) }
    /// The largest valid scroll offset: `scrollContentHeight - viewportHeight`
    /// (0 when the content does not fill the viewport). Valid offsets are
    /// `0...maxScrollOffset`.
    public var maxScrollOffset: Double { Swift.max(contentHeight - input.viewportHeight, 0) }
    /// Distance from the top of the viewport to the top of the content at
    /// ``LayoutInput/scrollOffset`` (negative during an overscroll past the
    /// top); `nil` without a scroll offset.
    public var distanceToTop: Double? {
        input.scrollOffset.map { scrollContentHeight - ($0 + input.viewportHeight) }
    }

    /// Computes the layout, or throws the first invalid field (see
    /// ``LayoutInput/validate()`` for the order).
    public init(_ input: LayoutInput) throws(LayoutError) {
        try input.validateScalars()
        let heights = input.itemHeights
        let count = heights.count

        // Pass 1: validate and sum in one sweep.
        var sum = 0.0
        for index in 0..<count {
            let height = heights[index]
            guard isValidSize(height) else { throw .invalidItemHeight(index: index, value: height) }
            sum += height
        }
        let contentHeight =
            sum + input.spacing * Double(Swift.max(count - 1, 0)) + input.topInset + input.bottomInset
        guard contentHeight.isFinite else { throw .contentHeightOverflow }
        let bottomPadding = Swift.max(input.viewportHeight - contentHeight, 0)
        let scrollContentHeight = Swift.max(contentHeight, input.viewportHeight)

        // Pass 2: place the items bottom-up. Positions are accumulated in the
        // same order every time, so an item's position depends only on the
        // items newer than it (and the padding), never on older ones.
        let spacing = input.spacing
        let start = bottomPadding + input.bottomInset
        let frames = [ItemFrame](unsafeUninitializedCapacity: count) { buffer, initialized in
            var bottom = start
            for index in 0..<count {
                let height = heights[index]
                let top = bottom + height
                (buffer.baseAddress! + index).initialize(
                    to: ItemFrame(
                        index: index,
                        offsetFromBottom: bottom,
                        offsetFromTop: scrollContentHeight - top,
                        height: height
                    )
                )
                bottom = top + spacing
            }
            initialized = count
        }
        // Positions only grow with the index, so the oldest item's top edge
        // is the largest number in the layout: when it is finite, all are.
        // It can round past the largest Double even though the sum did not
        // (a viewport of nearly that height, padded down to the items), and
        // a layout must never hold an infinity (JSON cannot carry one).
        if let oldest = frames.last, !oldest.topEdgeFromBottom.isFinite { throw .positionOverflow }

        self.input = input
        self.contentHeight = contentHeight
        self.bottomPadding = bottomPadding
        self.isScrollable = contentHeight > input.viewportHeight
        self.items = frames
        (self.visible, self.loadOlder) = Self.viewportState(
            items: frames,
            scrollContentHeight: scrollContentHeight,
            viewportHeight: input.viewportHeight,
            scrollOffset: input.scrollOffset,
            prefetchThreshold: input.prefetchThreshold
        )
    }

    private init(copying layout: ChatLayout, input: LayoutInput) {
        self.input = input
        self.contentHeight = layout.contentHeight
        self.bottomPadding = layout.bottomPadding
        self.isScrollable = layout.isScrollable
        self.items = layout.items
        (self.visible, self.loadOlder) = Self.viewportState(
            items: layout.items,
            scrollContentHeight: layout.scrollContentHeight,
            viewportHeight: input.viewportHeight,
            scrollOffset: input.scrollOffset,
            prefetchThreshold: input.prefetchThreshold
        )
    }

    /// The same layout seen from another scroll offset (`nil` = none): only
    /// ``visible`` and ``loadOlder`` change, in O(log n) time, so a client can
    /// call this on every scroll event without laying out again.
    public func scrolled(to scrollOffset: Double?) throws(LayoutError) -> ChatLayout {
        if let scrollOffset, !isValidSize(scrollOffset) { throw .invalidScrollOffset(scrollOffset) }
        var input = self.input
        input.scrollOffset = scrollOffset
        return ChatLayout(copying: self, input: input)
    }

    private static func viewportState(
        items: [ItemFrame],
        scrollContentHeight: Double,
        viewportHeight: Double,
        scrollOffset: Double?,
        prefetchThreshold: Double?
    ) -> (VisibleRange?, Bool) {
        guard let offset = scrollOffset else { return (nil, false) }
        let windowTop = offset + viewportHeight
        // Bottom and top edges both grow with the index, so "top above the
        // window's bottom" holds for a suffix and "bottom below the window's
        // top" for a prefix: the visible items are their overlap.
        let first = items.partitionPoint { $0.topEdgeFromBottom > offset }
        let last = items.partitionPoint { !($0.offsetFromBottom < windowTop) } - 1
        let visible = first <= last ? VisibleRange(first: first, last: last) : nil
        let loadOlder = prefetchThreshold.map { scrollContentHeight - windowTop < $0 } ?? false
        return (visible, loadOlder)
    }
}

extension Array {
    /// The first index whose element satisfies `predicate`, for a predicate
    /// that is false for a prefix and true for the rest (binary search).
    func partitionPoint(_ predicate: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = low + (high - low) / 2
            if predicate(self[middle]) {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }
}
