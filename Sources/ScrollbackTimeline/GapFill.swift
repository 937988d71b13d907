import ScrollbackModels

/// The one rule of filling a gap, for every owner of one (a conversation
/// feed's timeline, the ordered live stream): read the page after the
/// newest seq held, then after the newest that page brought, until
/// `through` is reached or a page brings nothing newer than what it was
/// read after (the server has nothing more up to `through`).
public struct GapFill: Sendable, Equatable {
    /// The next page is read after this seq.
    public private(set) var after: Int64
    /// The last seq the fill is for.
    public let through: Int64

    public init(after: Int64, through: Int64) {
        self.after = after
        self.through = through
    }

    /// Whether a page is still to be read.
    public var isOpen: Bool { after < through }

    /// The messages of `page` (read after `after`) that the fill brings,
    /// oldest first. The fill then reads after the newest of them, or is
    /// over when there is none.
    public mutating func take(_ page: MessagePage) -> [Message] {
        let brought = page.messages.filter { $0.seq > after && $0.seq <= through }.sorted { $0.seq < $1.seq }
        after = brought.last?.seq ?? through
        return brought
    }

    /// Whether this fill, under way, already covers the gap after `seq` through `last`.
    public func covers(after seq: Int64, through last: Int64) -> Bool {
        after <= seq && through >= last
    }
}
