import Foundation
import ScrollbackModels

/// An inbox feed's behaviour as a pure function: an event in, the state
/// changed and the effects to perform out. `InboxFeed` runs it (an
/// `EffectRunner`) and `InboxFeedEffects` performs the effects.
///
/// The list's rules are the `Inbox` value's and the subscription's are the
/// `Subscription`'s; this scopes the socket's inputs into both (a frame on
/// the subscribed socket is the list's, the socket coming and going is
/// both's), keeps the storage's copy of the first rows current before each
/// change is published, and ends the feed when the subscription ends.
enum InboxReducer {
    static func reduce(_ state: inout InboxState, _ event: InboxEvent) -> [InboxFeedEffect] {
        var step = InboxStep()
        step.handle(event, &state)
        return step.effects
    }
}

/// One event's reduction: the effects it answers with, in order.
struct InboxStep {
    var effects: [InboxFeedEffect] = []

    mutating func handle(_ event: InboxEvent, _ s: inout InboxState) {
        switch event {
        case .start:
            guard s.phase == .idle else { return }
            s.phase = .running
            // The rows on disk show before anything is asked of the server.
            effects.append(s.hasStorage ? .restore : .subscribe)
        case .restored(let rows, let failure):
            guard s.isRunning else { return }
            s.stored = failure == nil ? rows : nil
            if !rows.isEmpty { apply(.restored(rows), &s) }
            effects.append(.subscribe)
        case .live(let input):
            guard s.isRunning else { return effects.append(.steps([.finish(nil)])) }
            live(input, &s)
        case .pageAnswered(let request, let answer):
            switch answer {
            case .success(let list): apply(.pageLoaded(list, for: request), &s)
            case .failure: apply(.pageFailed(request), &s)
            }
        case .unreadCountsAnswered(let answer):
            switch answer {
            case .success(let counts): apply(.unreadCountsLoaded(counts), &s)
            case .failure: apply(.unreadCountsFailed, &s)
            }
        case .conversationAnswered(let id, let answer):
            switch answer {
            case .success(let conversation): apply(.conversationFetched(conversation), &s)
            case .failure(.notFound): apply(.conversationNotVisible(id), &s)
            case .failure: apply(.conversationFetchFailed(id), &s)
            }
        case .loadMore:
            apply(.moreRequested, &s)
        case .stored(let rows, let failure):
            // A write that threw left the storage as it was: the next change writes.
            if failure != nil, s.stored == rows { s.stored = nil }
        case .subscriptionEnded(let failure):
            end(failure, &s)
        case .stop:
            end(nil, &s)
        }
    }

    // MARK: The subscription

    /// An input of the socket, scoped into the subscription and the list:
    /// the list says where a new subscription resumes, its frames are the
    /// list's while the socket is subscribed, and the loss of the socket
    /// is the list's too. A subscription that finishes ends the feed.
    private mutating func live(_ input: LiveProtocol.Input, _ s: inout InboxState) {
        if case .opened = input, s.subscription.phase == .connecting { apply(.connected, &s) }
        let subscribed = s.subscription.isSubscribing
        let steps = s.subscription.handle(input)
        if case .received(let frame) = input, subscribed {
            // `inbox_subscribed` is all the inbox waits for: nothing to catch up first.
            if s.subscription.topic.isConfirmed(by: frame) { s.subscription.goLive() }
            apply(.frame(frame), &s)
        }
        if steps.contains(.disconnect) { apply(.connectionDropped, &s) }
        // Its losses are the list's (`connectionDropped`), not events of their own.
        effects.append(.steps(steps.filter { if case .emit = $0 { false } else { true } }))
        for case .finish(let failure) in steps { end(failure, &s) }
    }

    /// Stops the feed: for good, with why when it failed.
    private mutating func end(_ failure: ScrollbackError?, _ s: inout InboxState) {
        guard s.phase != .stopped else { return }
        s.phase = .stopped
        s.failure = failure
        effects.append(.end)
    }

    // MARK: The list

    /// Applies an action to the list: when it changed, the storage's rows
    /// are written and then the change is published (whatever a reader
    /// sees of the list, the storage holds already); what the list asks
    /// for is fetched, and where it resumes is its subscription's.
    private mutating func apply(_ action: InboxAction, _ s: inout InboxState) {
        guard s.isRunning else { return }
        let before = s.inbox
        let update = s.inbox.apply(action)
        if s.inbox != before {
            keep(&s)
            effects.append(.publish(s.inbox, update.change))
        }
        for effect in update.effects {
            switch effect {
            case .subscribe(let after): s.subscription.topic = .inbox(after: after)
            case .loadPage(let request): effects.append(.loadPage(request))
            case .loadUnreadCounts: effects.append(.loadUnreadCounts)
            case .fetchConversation(let id): effects.append(.fetchConversation(id))
            }
        }
    }

    /// Writes the first rows of the list to the storage when they changed.
    /// The write is taken to have worked; `stored` says when it did not.
    private mutating func keep(_ s: inout InboxState) {
        guard s.hasStorage, s.inbox.isLoaded else { return }
        let rows = Array(s.inbox.conversations.prefix(s.storedRows))
        guard rows != s.stored else { return }
        s.stored = rows
        effects.append(.store(rows))
    }
}
