import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// What a `ConversationFeed` shows and is told: its state, where it opens,
/// how its connection stands, and what the list on screen does.
extension ConversationFeed {
    /// Everything a screen shows of the conversation.
    public struct State: Sendable, Equatable {
        /// The loaded window: rows newest first, their layout and the scroll offset.
        public internal(set) var timeline: Timeline
        public internal(set) var connection: Connection = .idle
        /// An older page is being fetched (for a spinner above the oldest row).
        public internal(set) var isLoadingOlder = false
        /// A newer page is being fetched (for a spinner below the newest row
        /// of a window detached from the live edge).
        public internal(set) var isLoadingNewer = false
        /// The first message that was unread when the feed opened at
        /// `.firstUnread` (the "new messages" divider goes above it): from
        /// the storage's read marker at once, then from the server's.
        public internal(set) var firstUnreadSeq: Int64?
        /// This user's read marker as the feed opened: the storage's at
        /// once (when it holds one), then the server's once it answers. It
        /// does not move as the user reads (`readSeqs` does).
        public internal(set) var readSeqAtOpen: Int64?
        /// How far each member has read, as far as this feed has seen: from
        /// the live stream, and this user's from `markRead()` too.
        public internal(set) var readSeqs: [String: Int64] = [:]
        /// The last refusal the feed could not retry past: a fetch that
        /// failed for good, or why the live stream ended.
        public internal(set) var failure: ScrollbackError?
        /// Who of the members is online, and when the others were last
        /// seen, by user id: read each time the stream is live (after every
        /// reconnect), then kept current by the stream's `presence` frames.
        public internal(set) var presence: [String: MemberPresence] = [:]
        /// The last error of the feed's storage, if it has one: the feed then
        /// goes on from memory, and what it could not write is written with
        /// the next change that succeeds.
        public internal(set) var storageFailure: String?
        /// The sends waiting in the outbox or refused, oldest first, by
        /// client id (their echoes are the timeline's pending rows).
        public internal(set) var outbox: [OutboxEntry] = []

        mutating func noteRead(_ user: String, through seq: Int64) {
            readSeqs[user] = max(readSeqs[user] ?? 0, seq)
        }
    }

    /// Where a feed opens the conversation.
    public enum Opening: Sendable, Equatable {
        /// At the newest message (from the storage's window, when it holds one).
        case newest
        /// Around a message (a search hit, a reply's parent, a mention),
        /// its row in the middle of the screen.
        case message(Int64)
        /// At the first message the user has not read, in the middle of the
        /// screen; at the newest when everything is read.
        case firstUnread
    }

    public enum Connection: Sendable, Equatable {
        /// Not started.
        case idle
        /// Loading the newest page and subscribing.
        case connecting
        /// Subscribed and caught up: changes arrive as they happen.
        case live
        /// The live stream was lost; it reconnects by itself and catches up.
        case reconnecting(reason: String)
        /// Stopped, or the live stream ended for good (the user was removed
        /// from the conversation, or `failure` says why).
        case ended
    }

    /// What the list on screen tells the feed.
    public enum ViewAction: Sendable, Equatable {
        /// The reader scrolled: the distance from the bottom of the content.
        case scrolled(offsetFromBottom: Double)
        /// A row was measured on screen.
        case heightMeasured(TimelineItem.ID, Double)
        /// The list's viewport changed size.
        case viewportResized(height: Double)

        var timelineAction: TimelineAction {
            switch self {
            case .scrolled(let offset): .scrolled(offsetFromBottom: offset)
            case .heightMeasured(let id, let height): .heightMeasured(id, height)
            case .viewportResized(let height): .viewportResized(height: height)
            }
        }
    }
}
