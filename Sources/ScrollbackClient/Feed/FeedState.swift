import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// A conversation feed's whole state as one value: what the screen shows
/// (`visible`, the `ConversationFeed.State` apps read), the live
/// subscription, the fetches under way, the outbox's send in flight and
/// what the storage holds. `FeedReducer` changes it; nothing else does.
struct FeedState: Sendable, Equatable {
    /// Not started, running, or stopped for good.
    enum Phase: Sendable, Equatable { case idle, running, stopped }

    let conversationId: UUID
    /// The user the feed sends as.
    let userId: String
    /// The most messages of the window the storage keeps (the newest).
    let storedMessageLimit: Int
    /// Whether there is a storage to write to: a feed without one skips
    /// every diff of what it would hold.
    let hasStorage: Bool

    var visible: ConversationFeed.State
    /// The live subscription, a child of the timeline: the timeline decides
    /// what is missing, the subscription where to resume.
    var live: LiveProtocol
    var phase: Phase = .idle
    /// Older and newer pages and catch-ups under way: asked for again, they
    /// are not fetched twice.
    var fetching: [TimelineEffect] = []
    /// Gap fills under way, by number: each where its next page is read after.
    var fills: [Int: GapFill] = [:]
    var nextFill = 0
    /// The send of the outbox under way (one at a time, oldest first).
    var inFlight: String?
    /// Outbox entries the server has that the storage still holds: they
    /// leave it with the next write of the window (or a write of their own).
    var acknowledged: [String] = []
    /// The window as the storage holds it: as read at the start, or as last
    /// written. Nil when unknown (nothing held, or a write failed): the next
    /// write then writes the whole window.
    var onDisk: StoredWindow?
    /// The storage was told to drop the conversation: nothing more is written.
    var forgotten = false
    /// Numbers the openings and jumps asked for: the answer of one
    /// superseded by another is dropped.
    var jumps = 0
    /// Numbers the windows a jump put in place: a page or a fill asked for
    /// by an earlier window is dropped when it answers.
    var windows = 0
    /// The users a `presence` frame told of since the last read of presence
    /// began (newer than that read), and which read is the last.
    var presenceFramed: Set<String> = []
    var presenceReads = 0

    init(
        conversationId: UUID, userId: String, storedMessageLimit: Int, hasStorage: Bool,
        settings: TimelineLayoutSettings, retry: RetryPolicy, subscribeTimeout: Duration,
        seed: UInt64 = .random(in: .min ... .max)
    ) {
        self.conversationId = conversationId
        self.userId = userId
        self.storedMessageLimit = storedMessageLimit
        self.hasStorage = hasStorage
        self.visible = ConversationFeed.State(timeline: Timeline(conversationId: conversationId, settings: settings))
        self.live = LiveProtocol(
            conversationId: conversationId, after: nil, retry: retry, subscribeTimeout: subscribeTimeout, seed: seed,
            completeness: .window)
    }

    var isRunning: Bool { phase == .running }
}

/// The page a feed opens with, the row to put in the middle of the screen,
/// the first unread message when it opens there, and the read marker that
/// says so.
struct FirstPage: Sendable, Equatable {
    var page: MessagePage
    var focus: Int64?
    var firstUnread: Int64?
    var readSeq: Int64?
}

/// Everything that happens to a feed: what the app and the user do, and the
/// answer of every effect it asked for.
enum FeedEvent: Sendable, Equatable {
    // What the app and the user do.
    case start(ConversationFeed.Opening)
    case jump(ConversationFeed.Opening)
    case view(ConversationFeed.ViewAction)
    case loadOlder
    case loadNewer
    case send(PendingSend)
    case change(MessageChange, clientId: String)
    case retry(clientId: String)
    case discard(clientId: String)
    /// `markRead()` was answered.
    case markedRead(ReadMarker)
    case stop

    // Answers.
    /// What the storage held as the feed starts (`restore`).
    case restored(ConversationFeed.Opening, window: StoredWindow?, outbox: [OutboxEntry], failure: String?)
    /// A write of the storage was made; `failure` says why it threw.
    case stored(StorageWrite, failure: String?)
    /// The page an opening or a jump asked for; nil once cancelled.
    case opened(ConversationFeed.Opening, jump: Int, initial: Bool, Result<FirstPage, ScrollbackError>?)
    /// This user's read marker as the feed opens.
    case markerRead(Conversation, ConversationFeed.Opening)
    /// A page or a change set the timeline asked for, as the action it is.
    case fetched(TimelineEffect, window: Int, Result<TimelineAction, ScrollbackError>?)
    /// One page of gap fill `fill`, fetched after `after`.
    case filled(fill: Int, after: Int64, window: Int, Result<MessagePage, ScrollbackError>?)
    case presenceRead(read: Int, Result<[MemberPresence], ScrollbackError>?)
    /// An entry of the outbox was sent: stored, or refused; nil once cancelled.
    case sent(OutboxEntry, Result<ScrollbackClient.SendResult, ScrollbackError>?)
    /// An input of the live subscription (its answer is the steps to take;
    /// the events they deliver are the feed's at once).
    case live(LiveProtocol.Input)
    /// The subscription ended: for good, or with why.
    case subscriptionEnded(ScrollbackError?)
}

/// One call of the feed's storage.
enum StorageWrite: Sendable, Equatable {
    case put(OutboxEntry)
    case remove([String])
    /// One change of the window, and the window the storage holds after it.
    case save(WindowChanges, StoredWindow)
    case forget
}

/// Everything a feed asks to be done, as values: `ConversationFeed` performs
/// them and hands their answers back as events.
enum FeedEffect: Sendable, Equatable {
    /// Read what the storage holds of the conversation: `.restored`.
    case restore(ConversationFeed.Opening)
    /// Call the storage: `.stored`.
    case store(StorageWrite)
    /// Fetch the page an opening or a jump shows, until answered: `.opened`.
    case open(ConversationFeed.Opening, jump: Int, initial: Bool)
    /// Read this user's read marker, until answered: `.markerRead`.
    case readMarker(ConversationFeed.Opening)
    /// Fetch what the timeline asked for, until answered: `.fetched`.
    case fetch(TimelineEffect, window: Int)
    /// Fetch one page of a gap fill, until answered: `.filled`.
    case fillPage(fill: Int, after: Int64, window: Int)
    /// Read the members' presence, until answered: `.presenceRead`.
    case readPresence(read: Int)
    /// Send an entry of the outbox, holding its lane, until answered: `.sent`.
    case deliver(OutboxEntry)
    /// Run the live subscription on the shared socket: `.live`, then `.subscriptionEnded`.
    case subscribe
    /// Hand the update streams a state and the update that led to it.
    case publish(ConversationFeed.State, TimelineUpdate)
    /// Answer the callers waiting for a send.
    case settle(clientId: String, Result<ScrollbackClient.SendResult, ScrollbackError>)
    /// Cancel every effect under way, end the update streams, and answer
    /// every caller still waiting with `cancelled`.
    case end
    /// The answer of the event to its caller (a steps list, an update, a refusal).
    case answer(FeedAnswer)
}

/// What an event answers its caller at once.
enum FeedAnswer: Sendable, Equatable {
    /// The steps the live subscription takes.
    case steps([LiveProtocol.Step])
    /// How the rows changed.
    case update(TimelineUpdate)
}
