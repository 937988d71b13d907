// Anchor preservation: after the list changes, find the scroll offset that
// keeps what the reader was looking at in the same place on screen.

/// A change to the list of items, in the list's newest-first order.
public enum LayoutChange: Sendable, Equatable {
    /// New messages arrived. `heights` is newest first; the new items take
    /// indices `0..<heights.count` and every existing index grows by that count.
    case insertedNewest(heights: [Double])
    /// An older page arrived. `heights` is newest first, as the server
    /// returns pages; it is appended after the current oldest item, so
    /// existing indices do not change.
    case appendedOlder(heights: [Double])
    /// The item at `index` was re-measured (an image loaded, a message was
    /// edited). It keeps its bottom edge: it grows or shrinks upwards, moving
    /// only the items older than it.
    case heightChanged(index: Int, newHeight: Double)
    /// The item at `index` was deleted; older items move down into its place.
    case removed(index: Int)

    /// The item heights after this change, or the change's invalid field
    /// (`change.index`, `change.heights[i]`, `change.height`).
    public func applied(to heights: [Double]) throws(LayoutError) -> [Double] {
        switch self {
        case .insertedNewest(let new):
            try Self.validate(new)
            return new + heights
        case .appendedOlder(let page):
            try Self.validate(page)
            return heights + page
        case .heightChanged(let index, let newHeight):
            guard heights.indices.contains(index) else {
                throw .changeIndexOutOfRange(index: index, itemCount: heights.count)
            }
            guard isValidSize(newHeight) else { throw .invalidNewHeight(newHeight) }
            var result = heights
            result[index] = newHeight
            return result
        case .removed(let index):
            guard heights.indices.contains(index) else {
                throw .changeIndexOutOfRange(index: index, itemCount: heights.count)
            }
            var result = heights
            result.remove(at: index)
            return result
        }
    }

    /// Where the item that had index `oldIndex` before the change is after
    /// it; `nil` for the removed item.
    public func newIndex(forOldIndex oldIndex: Int) -> Int? {
        switch self {
        case .insertedNewest(let new): oldIndex + new.count
        case .appendedOlder, .heightChanged: oldIndex
        case .removed(let removed):
            oldIndex == removed ? nil : (oldIndex < removed ? oldIndex : oldIndex - 1)
        }
    }

    private static func validate(_ heights: [Double]) throws(LayoutError) {
        for index in heights.indices where !isValidSize(heights[index]) {
            throw .invalidChangeHeight(index: index, value: heights[index])
        }
    }
}

/// The item whose on-screen position an ``AnchoredUpdate`` preserves.
public struct ScrollAnchor: Sendable, Equatable {
    /// The anchor's index before the change.
    public var oldIndex: Int
    /// The anchor's index after the change.
    public var newIndex: Int
    /// Distance from the bottom of the viewport to the anchor's bottom edge
    /// before the change (negative when that edge was below the viewport).
    public var distanceFromViewportBottom: Double

    /// Creates an anchor description.
    public init(oldIndex: Int, newIndex: Int, distanceFromViewportBottom: Double) {
        self.oldIndex = oldIndex
        self.newIndex = newIndex
        self.distanceFromViewportBottom = distanceFromViewportBottom
    }
}

/// The result of applying a ``LayoutChange`` while keeping the reader's place.
public struct AnchoredUpdate: Sendable, Equatable {
    /// The layout after the change, seen from ``scrollOffset`` (so its
    /// `visible` and `loadOlder` describe the corrected position).
    public var layout: ChatLayout
    /// The corrected scroll offset, always within `0...layout.maxScrollOffset`.
    public var scrollOffset: Double
    /// The item kept in place; `nil` when the reader was pinned to the bottom
    /// or no item was left to anchor to.
    public var anchor: ScrollAnchor?
    /// `true` when the reader was pinned (offset 0) and so stays pinned.
    public var wasPinned: Bool
    /// How far, in points, the anchor ended up above (positive) or below
    /// (negative) its old on-screen position because the ideal offset was
    /// outside the valid scroll range and had to be clamped; 0 when the
    /// position was preserved exactly.
    public var anchorDisplacement: Double

    /// Creates an update description.
    public init(
        layout: ChatLayout, scrollOffset: Double, anchor: ScrollAnchor?, wasPinned: Bool,
        anchorDisplacement: Double
    ) {
        self.layout = layout
        self.scrollOffset = scrollOffset
        self.anchor = anchor
        self.wasPinned = wasPinned
        self.anchorDisplacement = anchorDisplacement
    }
}

extension ChatLayout {
    /// Applies `change` and returns the scroll offset that keeps what the
    /// reader was looking at in the same place on screen.
    ///
    /// - A reader pinned to the bottom (`scrollOffset == 0`) stays pinned:
    ///   the result is offset 0 and a newly inserted message is in view.
    /// - Otherwise the anchor is the newest item whose top edge is above the
    ///   viewport's bottom edge, i.e. the lowest item on screen (or, when the
    ///   viewport shows only a gap, the first item above it; when it is above
    ///   every item, the oldest item), skipping an item that the change
    ///   removes. The new offset puts the anchor's bottom edge at the same
    ///   distance from the viewport's bottom as before: `newBottom(anchor) -
    ///   (oldBottom(anchor) - scrollOffset)`.
    /// - Clamping: the result is clamped to `0...maxScrollOffset` of the new
    ///   layout. When the ideal offset lies outside (the content shrank below
    ///   the reader's position, or it no longer fills the viewport and the
    ///   items move to the top), exact preservation is impossible: the reader
    ///   sees the top (or the bottom) of the content instead, and
    ///   ``AnchoredUpdate/anchorDisplacement`` says how far the anchor moved.
    ///   An overscrolled input offset (above the top) is clamped the same way.
    ///
    /// - Parameter scrollOffset: The reader's offset before the change;
    ///   `nil` uses ``LayoutInput/scrollOffset``, or 0 when that is `nil` too.
    /// - Throws: ``LayoutError/invalidScrollOffset(_:)`` or the change's own
    ///   errors (index out of range, invalid heights).
    public func applying(
        _ change: LayoutChange, scrollOffset: Double? = nil
    ) throws(LayoutError) -> AnchoredUpdate {
        let offset = scrollOffset ?? input.scrollOffset ?? 0
        guard isValidSize(offset) else { throw .invalidScrollOffset(offset) }

        var newInput = input
        newInput.itemHeights = try change.applied(to: input.itemHeights)
        newInput.scrollOffset = nil
        let unscrolled = try ChatLayout(newInput)

        func finish(_ desired: Double, anchor: ScrollAnchor?, pinned: Bool) throws(LayoutError)
            -> AnchoredUpdate
        {
            let clamped = Swift.min(Swift.max(desired, 0), unscrolled.maxScrollOffset)
            return AnchoredUpdate(
                layout: try unscrolled.scrolled(to: clamped),
                scrollOffset: clamped,
                anchor: anchor,
                wasPinned: pinned,
                anchorDisplacement: desired - clamped
            )
        }

        if offset == 0 {
            return try finish(0, anchor: nil, pinned: true)
        }
        guard let oldIndex = anchorIndex(at: offset, skipping: change),
            let newIndex = change.newIndex(forOldIndex: oldIndex)
        else {
            return try finish(offset, anchor: nil, pinned: false)
        }
        let distance = items[oldIndex].offsetFromBottom - offset
        let desired = unscrolled.items[newIndex].offsetFromBottom - distance
        let anchor = ScrollAnchor(
            oldIndex: oldIndex, newIndex: newIndex, distanceFromViewportBottom: distance)
        return try finish(desired, anchor: anchor, pinned: false)
    }

    /// The anchor rule of ``applying(_:scrollOffset:)``, in this layout.
    private func anchorIndex(at offset: Double, skipping change: LayoutChange) -> Int? {
        let removed: Int? = if case .removed(let index) = change { index } else { nil }
        var candidate = items.partitionPoint { $0.topEdgeFromBottom > offset }
        if candidate == removed { candidate += 1 }
        if candidate >= items.count {
            candidate = items.count - 1
            if candidate == removed { candidate -= 1 }
        }
        return candidate >= 0 ? candidate : nil
    }
}
