/// How new what a client holds of one conversation is, as one value with
/// its rules: every version the kit tracks (what a window is current as of,
/// where its live subscription carries every change from, the highest
/// version seen, which pages ask for as `min_version`) is one of these, so
/// the rule that moves it is written once.
///
/// Versions are dense per conversation: each send, edit and deletion takes
/// the next one. What is held is current as of `current` (every change up
/// to it is applied); a live subscription carries every change after
/// `liveFrom`, so changes seen live move `current` on only once it has
/// caught up to `liveFrom`, and what lies between is fetched
/// (`GET .../changes?since_version=current`).
public struct KnownVersion: Sendable, Equatable {
    /// Everything held is current as of this version.
    public private(set) var current: Int64 = 0
    /// The version from which changes seen live keep what is held current:
    /// the live subscription's (its `subscribed` frame's), or the highest
    /// seen when rows read before it joined; nil before the first
    /// subscription and after its loss.
    public private(set) var liveFrom: Int64?
    /// The highest version seen anywhere: a write's answer, a page, a
    /// change set, a live frame. A page read later must be at least this
    /// new (`min_version`).
    public private(set) var seen: Int64 = 0

    public init() {}

    /// A version seen that says nothing of what is held (a write's answer,
    /// a frame passed on): it raises only `seen`.
    public mutating func saw(_ version: Int64) {
        seen = max(seen, version)
    }

    /// A change applied as it came live: what is held is current through
    /// it, once it was current up to where the subscription began.
    public mutating func sawLive(_ version: Int64) {
        saw(version)
        guard let liveFrom, current >= liveFrom else { return }
        current = max(current, version)
    }

    /// Every change up to `version` is applied to what is held (a change
    /// set, or a page that is the whole of what is held).
    public mutating func caughtUp(to version: Int64) {
        saw(version)
        current = max(current, version)
    }

    /// What is held was replaced by a read at `version` (a jump's page):
    /// it is current as of that version, whatever was applied to what it
    /// replaced. Changes seen after it (`seen` above it) are to be fetched.
    public mutating func replaced(at version: Int64) {
        saw(version)
        current = version
    }

    /// Rows read at `version` joined what is held (an older page, a gap's
    /// page): when the read is older than what is held, the rows it
    /// brought may lack changes applied meanwhile (a change to a row not
    /// held is not kept), so what is held is current only as of the read,
    /// and changes seen live move it on again only once what lies between
    /// the read and them is fetched: as after a subscription from `seen`.
    public mutating func joined(readAt version: Int64) {
        guard version < current else { return saw(version) }
        current = version
        if let liveFrom { self.liveFrom = max(liveFrom, seen) }
    }

    /// A subscription is live from `version` on: the version to catch up
    /// from when what is held is older, or nil when it is current.
    public mutating func subscribed(at version: Int64) -> Int64? {
        liveFrom = version
        return current < version ? current : nil
    }

    /// The subscription was lost: no change is carried live until the
    /// next `subscribed(at:)`, so changes seen meanwhile (a resumed
    /// subscription's backlog) raise only `seen`: what was missed before
    /// them is fetched from `current`.
    public mutating func unsubscribed() {
        liveFrom = nil
    }

    /// Whether what is held is current as of `version`.
    public func isCurrent(asOf version: Int64) -> Bool {
        current >= version
    }
}
