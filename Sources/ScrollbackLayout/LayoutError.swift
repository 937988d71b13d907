/// Why the layout calculator rejected its input.
///
/// Every case is something the caller sent wrong, never an internal failure:
/// the server maps any `LayoutError` to HTTP 422 and uses ``message`` as the
/// body's human sentence and ``field`` as the offending field. Both name fields
/// the way the HTTP API spells them (snake_case: `viewport_height`,
/// `item_heights[3]`, `change.index`, ...), so a client developer can find
/// the value to fix without reading Swift.
///
/// The associated values carry what was received. Note that `Double.nan` is
/// never equal to itself, so two errors that both carry a NaN compare unequal;
/// compare ``field`` when that matters.
public enum LayoutError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `viewport_height` was negative, NaN or infinite.
    case invalidViewportHeight(Double)
    /// `item_heights[index]` was negative, NaN or infinite.
    case invalidItemHeight(index: Int, value: Double)
    /// `spacing` was negative, NaN or infinite.
    case invalidSpacing(Double)
    /// `top_inset` was negative, NaN or infinite.
    case invalidTopInset(Double)
    /// `bottom_inset` was negative, NaN or infinite.
    case invalidBottomInset(Double)
    /// `scroll_offset` was negative, NaN or infinite.
    case invalidScrollOffset(Double)
    /// `prefetch_threshold` was negative, NaN or infinite.
    case invalidPrefetchThreshold(Double)
    /// Every size was finite on its own, but together they add up to more
    /// than the largest finite `Double`, so no position could be computed.
    case contentHeightOverflow
    /// The sizes and their sum were finite, but an item's position was not:
    /// typically under a viewport close to the largest finite `Double`, the
    /// bottom padding plus the items below an item's top edge round past it.
    case positionOverflow
    /// A change (``LayoutChange``) named an item index that does not exist.
    case changeIndexOutOfRange(index: Int, itemCount: Int)
    /// `change.heights[index]` of an inserted or appended page was negative,
    /// NaN or infinite.
    case invalidChangeHeight(index: Int, value: Double)
    /// `change.height` of a ``LayoutChange/heightChanged(index:newHeight:)``
    /// was negative, NaN or infinite.
    case invalidNewHeight(Double)
    /// `viewport_width` given to the text-height estimator was negative, NaN
    /// or infinite.
    case invalidViewportWidth(Double)
    /// A ``TextMetrics`` field is outside its documented range.
    case invalidTextMetric(TextMetrics.Field, Double)

    /// The request field at fault, spelled as in the HTTP API
    /// (e.g. `item_heights[3]`).
    public var field: String {
        switch self {
        case .invalidViewportHeight: "viewport_height"
        case .invalidItemHeight(let index, _): "item_heights[\(index)]"
        case .invalidSpacing: "spacing"
        case .invalidTopInset: "top_inset"
        case .invalidBottomInset: "bottom_inset"
        case .invalidScrollOffset: "scroll_offset"
        case .invalidPrefetchThreshold: "prefetch_threshold"
        case .contentHeightOverflow: "item_heights"
        case .positionOverflow: "viewport_height"
        case .changeIndexOutOfRange: "change.index"
        case .invalidChangeHeight(let index, _): "change.heights[\(index)]"
        case .invalidNewHeight: "change.height"
        case .invalidViewportWidth: "viewport_width"
        case .invalidTextMetric(let metric, _): metric.rawValue
        }
    }

    /// One sentence that says which field is wrong, what it must be, and what
    /// was received, e.g. `item_heights[3] must be a finite number >= 0 (got -2.0)`.
    public var message: String {
        switch self {
        case .invalidViewportHeight(let value),
            .invalidSpacing(let value),
            .invalidTopInset(let value),
            .invalidBottomInset(let value),
            .invalidScrollOffset(let value),
            .invalidPrefetchThreshold(let value),
            .invalidItemHeight(_, let value),
            .invalidChangeHeight(_, let value),
            .invalidNewHeight(let value),
            .invalidViewportWidth(let value):
            return "\(field) must be a finite number >= 0 (got \(value))"
        case .contentHeightOverflow:
            return "item_heights, spacing, top_inset and bottom_inset add up to more than the"
                + " largest representable height; send sizes in points"
        case .positionOverflow:
            return "viewport_height with item_heights, spacing and the insets places items beyond the"
                + " largest representable height; send sizes in points"
        case .changeIndexOutOfRange(let index, let itemCount):
            if itemCount == 0 {
                return "change.index must name an existing item, but item_heights is empty (got \(index))"
            }
            return "change.index must be between 0 and \(itemCount - 1)"
                + " (item_heights has \(itemCount) items; got \(index))"
        case .invalidTextMetric(let metric, let value):
            return "\(metric.rawValue) must be \(metric.requirement) (got \(value))"
        }
    }

    /// Same as ``message``.
    public var description: String { message }
}
