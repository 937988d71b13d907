import Foundation
import ScrollbackModels

/// Everything that changes an inbox.
public enum InboxAction: Sendable, Equatable {
    /// The list as an offline store last kept it, before anything is
    /// loaded: shown at once, each row until the first pass over the list
    /// confirms it or goes past it without listing it.
    case restored([Conversation])
    /// A socket was opened and authenticated: the inbox subscribes on it.
    case connected
    /// The socket was lost.
    case connectionDropped
    /// A frame of the socket; frames that are not about the inbox are ignored.
    case frame(ServerFrame)
    /// A page of `GET /v1/conversations` answered a `loadPage` effect.
    case pageLoaded(ConversationList, for: InboxPageRequest)
    /// A `loadPage` effect failed (after its retries).
    case pageFailed(InboxPageRequest)
    /// The user scrolled near the end of the list: the next page, if any.
    case moreRequested
    /// `GET /v1/conversations/{id}` answered a `fetchConversation` effect.
    case conversationFetched(Conversation)
    /// The fetch answered 404: the user is no longer a member.
    case conversationNotVisible(UUID)
    /// The fetch failed otherwise (after its retries): it is asked for again.
    case conversationFetchFailed(UUID)
    /// `GET /v1/unread` answered a `loadUnreadCounts` effect.
    case unreadCountsLoaded(UnreadCounts)
    /// It failed (after its retries, and a pause): asked for again.
    case unreadCountsFailed
}

/// What the owner of an inbox should do next; the inbox does no I/O.
public enum InboxEffect: Sendable, Equatable {
    /// Send `subscribe_inbox` with this `after` on the socket just connected.
    case subscribe(after: String?)
    /// Fetch a page of the list (`GET /v1/conversations?cursor=`; nil: from
    /// the top) and answer with `pageLoaded` or `pageFailed`.
    case loadPage(InboxPageRequest)
    /// Fetch one conversation (`GET /v1/conversations/{id}`): a line arrived
    /// for one the list does not hold, without its title and members.
    case fetchConversation(UUID)
    /// Fetch the user's unread totals (`GET /v1/unread`) and answer with
    /// `unreadCountsLoaded` or `unreadCountsFailed`: the list is not all
    /// loaded, so it cannot count them itself.
    case loadUnreadCounts
}

/// One page asked for: the list's cursor, and which pass over the list it
/// belongs to (an answer to an abandoned pass is ignored).
public struct InboxPageRequest: Sendable, Hashable {
    /// The `next_cursor` of the page before; nil for the top of the list.
    public var cursor: String?
    public var pass: Int

    public init(cursor: String?, pass: Int) {
        self.cursor = cursor
        self.pass = pass
    }
}

/// The answer to an action: how the rows changed, and what to do next.
public struct InboxUpdate: Sendable, Equatable {
    public var change: InboxChange
    public var effects: [InboxEffect]
}
