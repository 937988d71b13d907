import Foundation
import ScrollbackModels

/// An inbox feed's whole state as one value: the list (`Inbox`, what apps
/// read), its subscription on the shared socket, what the storage holds and
/// why the feed ended. `InboxReducer` changes it; nothing else does.
struct InboxState: Sendable, Equatable {
    /// Not started, running, or stopped for good.
    enum Phase: Sendable, Equatable { case idle, running, stopped }

    /// The most rows of the list the storage keeps (the first).
    let storedRows: Int
    /// Whether there is a storage to read and write.
    let hasStorage: Bool

    var inbox = Inbox()
    /// The inbox's subscription: the lifecycle every subscriber of the
    /// socket follows; the inbox says where it resumes.
    var subscription: Subscription
    var phase: Phase = .idle
    /// The rows the storage holds: as read at the start, or as last
    /// written. Nil when unknown (the read or a write failed): the next
    /// change writes them.
    var stored: [Conversation]?
    /// Why the feed ended by itself; nil while it runs and after `stop()`.
    var failure: ScrollbackError?

    init(
        storedRows: Int, hasStorage: Bool, retry: RetryPolicy, subscribeTimeout: Duration,
        seed: UInt64 = .random(in: .min ... .max)
    ) {
        self.storedRows = max(storedRows, 0)
        self.hasStorage = hasStorage
        self.subscription = Subscription(
            topic: .inbox(after: nil), retry: retry, subscribeTimeout: subscribeTimeout, seed: seed)
    }

    var isRunning: Bool { phase == .running }
}

/// Everything that happens to an inbox feed: what the app does, and the
/// answer of every effect it asked for.
enum InboxEvent: Sendable, Equatable {
    // What the app does.
    case start
    /// The user scrolled near the end of the list.
    case loadMore
    case stop

    // Answers.
    /// The rows the storage held as the feed starts (`restore`); `failure`
    /// says why reading them threw.
    case restored([Conversation], failure: String?)
    /// A write of the storage was made; `failure` says why it threw.
    case stored([Conversation], failure: String?)
    /// An input of the subscription (its answer is the steps to take).
    case live(LiveProtocol.Input)
    /// The subscription's runner ended: for good, or with why.
    case subscriptionEnded(ScrollbackError?)
    /// A page of the list, or why it could not be had.
    case pageAnswered(InboxPageRequest, Result<ConversationList, ScrollbackError>)
    /// The user's unread totals, or why they could not be had.
    case unreadCountsAnswered(Result<UnreadCounts, ScrollbackError>)
    /// One conversation, or why it could not be had (`notFound`: the user
    /// is no longer a member).
    case conversationAnswered(UUID, Result<Conversation, ScrollbackError>)
}

/// Everything an inbox feed asks to be done, as values: `InboxFeedEffects`
/// performs them and hands their answers back as events.
enum InboxFeedEffect: Sendable, Equatable {
    /// Read the rows the storage holds: `.restored`.
    case restore
    /// Write the first rows of the list to the storage: `.stored`.
    case store([Conversation])
    /// Run the subscription on the shared socket as the inbox: `.live`, then
    /// `.subscriptionEnded`.
    case subscribe
    /// The steps the subscription takes, answering the `.live` input of its runner.
    case steps([LiveProtocol.Step])
    /// `GET /v1/conversations?cursor=`: `.pageAnswered`.
    case loadPage(InboxPageRequest)
    /// `GET /v1/unread`: `.unreadCountsAnswered`.
    case loadUnreadCounts
    /// `GET /v1/conversations/{id}`: `.conversationAnswered`.
    case fetchConversation(UUID)
    /// Hand the update streams the inbox and how its rows changed.
    case publish(Inbox, InboxChange)
    /// Cancel every effect under way and end the update streams.
    case end
}
