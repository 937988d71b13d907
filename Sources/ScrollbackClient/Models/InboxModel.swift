import Foundation
import Observation
import ScrollbackModels

/// The conversation list's model for SwiftUI: it owns an `InboxFeed` and
/// mirrors it on the main actor as `@Observable` properties, with the total
/// unread count for a tab badge.
@MainActor @Observable
public final class InboxModel {
    /// Most recently active first.
    public private(set) var conversations: [Conversation] = []
    /// Unread messages over all the user's conversations, loaded or not
    /// (a tab badge; `Inbox.unreadCount`).
    public private(set) var unreadCount: Int64 = 0
    /// How many conversations have unread messages, loaded or not.
    public private(set) var unreadConversations: Int64 = 0
    /// Unread mentions of the user across the list.
    public private(set) var unreadMentions: Int64 = 0
    /// Subscribed live on the current socket.
    public private(set) var isLive = false
    /// Some page of the list has been loaded.
    public private(set) var isLoaded = false
    /// The list has more below what is loaded.
    public private(set) var hasMore = false
    public private(set) var failure: ScrollbackError?

    public let feed: InboxFeed
    @ObservationIgnored private var reading: Task<Void, Never>?

    public init(feed: InboxFeed) {
        self.feed = feed
    }

    /// Starts the feed and follows it. Once only; `stop()` ends both.
    public func start() {
        guard reading == nil else { return }
        let feed = self.feed
        let updates = feed.updates
        reading = Task { [weak self] in
            for await (inbox, _) in updates {
                guard let self else { return }
                self.show(inbox, failure: feed.failure)
            }
            self?.show(feed.inbox, failure: feed.failure)
        }
        feed.start()
    }

    public func stop() {
        reading?.cancel()
        feed.stop()
    }

    /// Loads the next page of the list.
    public func loadMore() { feed.loadMore() }

    private func show(_ inbox: Inbox, failure: ScrollbackError?) {
        if conversations != inbox.conversations { conversations = inbox.conversations }
        if unreadCount != inbox.unreadCount { unreadCount = inbox.unreadCount }
        if unreadConversations != inbox.unreadConversations { unreadConversations = inbox.unreadConversations }
        if unreadMentions != inbox.unreadMentions { unreadMentions = inbox.unreadMentions }
        if isLive != inbox.isLive { isLive = inbox.isLive }
        if isLoaded != inbox.isLoaded { isLoaded = inbox.isLoaded }
        if hasMore != inbox.hasMore { hasMore = inbox.hasMore }
        if self.failure != failure { self.failure = failure }
    }
}
