import Foundation
import ScrollbackModels

/// Everything that changes a timeline. The timeline changes only through
/// these (`Timeline.apply(_:)`), so the same actions in any order that the
/// network could produce give the same rows.
public enum TimelineAction: Sendable, Equatable {
    /// A page of history arrived (newest, older, newer or around: any page).
    case pageLoaded(MessagePage)
    /// The window moves to a page (around a message, or the newest): what
    /// was loaded goes, the page's messages replace it, and the reader is
    /// put at `focus` (its row in the middle of the viewport; nil: at the
    /// bottom). A page that has newer messages beyond it leaves the window
    /// detached from the live edge until a newer page reaches it.
    case jumped(MessagePage, focus: Int64?)
    /// A `message` frame of the live stream.
    case liveMessage(Message)
    /// A `message_updated` frame: an edit or a deletion.
    case messageUpdated(Message)
    /// The `subscribed` frame: the conversation's last seq and version then.
    case subscribed(lastSeq: Int64, version: Int64)
    /// The live subscription was lost (the socket dropped, the app went to
    /// the background): changes are no longer carried live, so what arrives
    /// before the next `subscribed` (a resumed subscription's backlog) does
    /// not make the window current past what it missed meanwhile.
    case unsubscribed
    /// The live stream said more was missed than it replays.
    case resyncRequired(lastSeq: Int64)
    /// This client started sending a message: its local echo appears.
    case sendStarted(PendingSend)
    /// The server stored it (or had stored it before: a replay).
    case sendAcknowledged(clientId: String, message: Message)
    /// The send failed; the echo stays, marked failed, for a retry.
    case sendFailed(clientId: String, reason: String)
    /// A retry of a failed send started.
    case sendRetried(clientId: String)
    /// The user gave up a send the server refused: its echo goes.
    case sendDiscarded(clientId: String)
    /// A change set from `GET .../changes`.
    case changesApplied(ChangeSet)
    /// The user was removed from the conversation.
    case memberRemoved
    /// A row was measured on screen.
    case heightMeasured(TimelineItem.ID, Double)
    /// The reader scrolled: the distance from the bottom of the content.
    case scrolled(offsetFromBottom: Double)
    /// The list's viewport changed size.
    case viewportResized(height: Double)
}

/// What the owner of a timeline should do next; the timeline does no I/O.
public enum TimelineEffect: Sendable, Equatable {
    /// Fetch the page older than `before` (`GET .../messages?before=`).
    case loadOlder(before: Int64)
    /// Fetch the page newer than `after` (`GET .../messages?after=`), in a
    /// window detached from the live edge as the reader nears its bottom.
    case loadNewer(after: Int64)
    /// Fetch the messages after `after` up to `through` (a gap in the window:
    /// `GET .../messages?after=`), in as many pages as it takes.
    case fillGap(after: Int64, through: Int64)
    /// Fetch what changed after `sinceVersion` (`GET .../changes?since_version=`).
    case catchUp(sinceVersion: Int64)
}

/// How the rows changed, for a list to apply atomically: `removed` are
/// indices before the change, `inserted` and `updated` indices after it (as
/// `UICollectionView.performBatchUpdates` and `NSDiffableDataSource` expect).
public struct TimelineDiff: Sendable, Equatable {
    public var removed: [Int] = []
    public var inserted: [Int] = []
    public var updated: [Int] = []

    public init(removed: [Int] = [], inserted: [Int] = [], updated: [Int] = []) {
        self.removed = removed
        self.inserted = inserted
        self.updated = updated
    }

    public var isEmpty: Bool { removed.isEmpty && inserted.isEmpty && updated.isEmpty }
}

/// The answer to an action: how the rows changed, where the list should now
/// be scrolled so that what the reader looked at stays put, and what to do next.
public struct TimelineUpdate: Sendable, Equatable {
    public var diff: TimelineDiff
    /// The scroll offset (from the bottom) that keeps the reader's anchor in place.
    public var scrollOffset: Double
    public var effects: [TimelineEffect]

    public init(diff: TimelineDiff = TimelineDiff(), scrollOffset: Double, effects: [TimelineEffect] = []) {
        self.diff = diff
        self.scrollOffset = scrollOffset
        self.effects = effects
    }
}
