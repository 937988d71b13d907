import Foundation
import OpenCombineShim
import ScrollbackClient

extension ScrollbackClient.Publishers {
    /// The user's inbox, live (`InboxFeed`): the empty inbox first, then
    /// each state as it changes (each once). Lazy: the feed starts when a subscriber
    /// arrives and stops when it cancels; every subscription runs a feed of
    /// its own. It fails only when the feed fails for good (the token
    /// provider fails).
    public func inbox(pageSize: Int? = nil) -> AnyPublisher<Inbox, ScrollbackError> {
        Deferred { () -> AnyPublisher<Inbox, ScrollbackError> in
            // The current state, so a state published before the subscriber
            // was ready is not lost.
            let subject = InboxSubject()
            let feed = client.inboxFeed(
                pageSize: pageSize, onUpdate: { inbox, _ in subject.subject.send(inbox) },
                onEnd: { error in subject.subject.send(completion: error.map { .failure($0) } ?? .finished) })
            return subject.subject.removeDuplicates().handleEvents(receiveCancel: { feed.stop() })
                .eraseToAnyPublisher()
        }.eraseToAnyPublisher()
    }
}

/// The subject an inbox publisher forwards the feed's states to.
// Unchecked: a CurrentValueSubject may be sent to from any thread (Combine and
// OpenCombine serialize it under its own lock); it is only not marked Sendable.
private final class InboxSubject: @unchecked Sendable {
    let subject = CurrentValueSubject<Inbox, ScrollbackError>(Inbox())
}
