import Foundation
import ScrollbackModels

/// The user's conversation list, live: an `Inbox` kept current by the inbox
/// stream, for an app to bind its inbox screen to.
///
/// It subscribes the inbox on the client's one socket (the one its live
/// streams and conversation feeds share), waits for `inbox_subscribed`, loads
/// the first page of `GET /v1/conversations`, and then applies every inbox
/// frame, fetching what the frames leave out (a conversation that just
/// became active, the list again after `resync_required`). A lost socket is
/// reconnected with backoff and resumes from the cursor of the last inbox
/// frame, so nothing changed meanwhile is missed. More of the list is loaded
/// when the user scrolls (`loadMore()`).
///
/// It runs from `start()` until `stop()`, or until it fails for good (the
/// token provider fails, or a fresh token is refused twice: `failure` says
/// so). Errors on the way (a page, a socket) are retried. Its interface is
/// `ConversationFeed`'s: `start()`, `updates`, `stop()`.
///
/// Its behaviour is a value, as `ConversationFeed`'s is: an `InboxState`
/// (the `Inbox`, its `Subscription`, what the storage holds) changed only
/// by `InboxReducer`, whose effects (the socket's steps, every request,
/// storage write and publish) are values that an `EffectRunner` performs,
/// handing their answers back as events.
public final class InboxFeed: Sendable {
    /// A state of the inbox and how its rows changed to get there.
    public typealias Update = (inbox: Inbox, change: InboxChange)

    private let runner: InboxFeedEffects.Runner
    /// The profiles of the client's users, which name the rows' users
    /// (the client's `profiles`).
    public let profiles: ProfileCache

    /// A feed of the user of `client`, not started yet; `pageSize` is the
    /// number of conversations a page of the list asks for (nil: the
    /// server's default).
    ///
    /// With a `storage`, `start()` shows the rows it kept at once (each
    /// until the first pass over the list confirms it or goes past it), and
    /// the first `storedRows` rows are written back as the list changes.
    public init(client: ScrollbackClient, pageSize: Int? = nil, storage: (any InboxStorage)? = nil, storedRows: Int = 100) {
        let state = InboxState(
            storedRows: storedRows, hasStorage: storage != nil, retry: client.retry,
            subscribeTimeout: client.subscribeTimeout)
        profiles = client.profiles
        let effects = InboxFeedEffects(client: client, storage: storage, pageSize: pageSize)
        runner = InboxFeedEffects.Runner(
            state: state, context: InboxBroadcast(), reduce: InboxReducer.reduce, perform: effects.perform)
    }

    deinit {
        stop()
    }

    /// Subscribes the inbox and loads the first page, then keeps the list
    /// current. Once only; a stopped feed does not start again.
    public func start() {
        runner.send(.start)
    }

    /// The inbox now.
    public var inbox: Inbox { runner.state.inbox }

    /// Why the feed ended by itself; nil while it runs and after `stop()`.
    public var failure: ScrollbackError? { runner.state.failure }

    /// The inbox now (its change: every row inserted), then after each
    /// change, in order; finishes when the feed ends. Each access is a
    /// stream of its own.
    public var updates: AsyncStream<Update> {
        runner.withCore { state, broadcast in broadcast.observe(state.inbox, ended: state.phase == .stopped) }
    }

    /// Loads the next page of the list, if there is one and none is loading:
    /// call it when the user scrolls near the end.
    public func loadMore() {
        runner.send(.loadMore)
    }

    /// Closes the socket and ends every `updates` stream.
    public func stop() {
        runner.send(.stop)
    }
}

extension ScrollbackClient {
    /// The user's inbox, live (see `InboxFeed`), not started yet: call
    /// `start()` once its `updates` are followed.
    public func inboxFeed(pageSize: Int? = nil, storage: (any InboxStorage)? = nil) -> InboxFeed {
        InboxFeed(client: self, pageSize: pageSize, storage: storage)
    }

    /// The user's inbox, live, through completion handlers: `onUpdate` with
    /// the state now and then each later state and how its rows changed, in
    /// order, then `onEnd` once (nil after `stop()`). Both are called on the
    /// client's `completionQueue` (the main queue by default). The feed is started.
    @discardableResult
    public func inboxFeed(
        pageSize: Int? = nil, onUpdate: @escaping @Sendable (Inbox, InboxChange) -> Void,
        onEnd: @escaping @Sendable (ScrollbackError?) -> Void
    ) -> InboxFeed {
        let feed = InboxFeed(client: self, pageSize: pageSize)
        let updates = feed.updates
        Task {
            for await (inbox, change) in updates { deliver { onUpdate(inbox, change) } }
            let failure = feed.failure
            deliver { onEnd(failure) }
        }
        feed.start()
        return feed
    }
}
