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
    /// The profiles of the users the rows name (each last sender, the
    /// other member of each one-to-one), by id, as the client's
    /// `ProfileCache` has them: a rename or a new avatar (`user_updated`)
    /// changes them. Read a row's with `lastSender(of:)` and `peer(of:)`.
    public var profiles: [String: UserProfile] { shown.profiles }

    public let feed: InboxFeed
    /// The user the list is for: `peer(of:)` is the other member.
    public let userId: String?
    private var shown = ShownProfiles()
    @ObservationIgnored private var reading: Task<Void, Never>?
    @ObservationIgnored private var following: Task<Void, Never>?

    /// A model of `feed`; with `userId` (the user the list is for),
    /// `peer(of:)` names the other member of a one-to-one.
    public init(feed: InboxFeed, userId: String? = nil) {
        self.feed = feed
        self.userId = userId
    }

    /// The profile of `userId`: as the rows show it, else the client's
    /// cache's, else the bare one (the id: show it, and its initials).
    public func profile(of userId: String) -> UserProfile {
        shown.profiles[userId] ?? feed.profiles.profile(of: userId)
    }

    /// The profile of the sender of the row's last message; nil while it
    /// has none, or when the system wrote it.
    public func lastSender(of conversation: Conversation) -> UserProfile? {
        guard let sender = conversation.lastMessage?.sender, !sender.isEmpty else { return nil }
        return profile(of: sender)
    }

    /// The profile of the other member of a one-to-one conversation (two
    /// members, this model's `userId` one of them); nil for any other.
    public func peer(of conversation: Conversation) -> UserProfile? {
        guard let userId, conversation.members.count == 2, conversation.members.contains(userId),
            let other = conversation.members.first(where: { $0 != userId })
        else { return nil }
        return profile(of: other)
    }

    /// Starts the feed and follows it. Once only; `stop()` ends both.
    public func start() {
        guard reading == nil else { return }
        let feed = self.feed
        let profileUpdates = feed.profiles.updates
        following = Task { [weak self] in
            for await batch in profileUpdates {
                guard let self else { return }
                _ = self.shown.take(batch, named: Set(Inbox.namedUsers(self.conversations)))
            }
        }
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
        following?.cancel()
        feed.stop()
    }

    /// Loads the next page of the list.
    public func loadMore() { feed.loadMore() }

    private func show(_ inbox: Inbox, failure: ScrollbackError?) {
        if conversations != inbox.conversations {
            conversations = inbox.conversations
            _ = shown.show(Set(Inbox.namedUsers(conversations)), from: feed.profiles)
        }
        if unreadCount != inbox.unreadCount { unreadCount = inbox.unreadCount }
        if unreadConversations != inbox.unreadConversations { unreadConversations = inbox.unreadConversations }
        if unreadMentions != inbox.unreadMentions { unreadMentions = inbox.unreadMentions }
        if isLive != inbox.isLive { isLive = inbox.isLive }
        if isLoaded != inbox.isLoaded { isLoaded = inbox.isLoaded }
        if hasMore != inbox.hasMore { hasMore = inbox.hasMore }
        if self.failure != failure { self.failure = failure }
    }
}
