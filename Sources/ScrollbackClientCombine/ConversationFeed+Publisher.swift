import OpenCombineShim
import ScrollbackClient

extension ConversationFeed {
    /// The feed's state as a lazy publisher: nothing happens until a
    /// subscriber arrives, which starts the feed (if it is not running yet)
    /// and receives its current state, then every later one. A subscriber
    /// that asks for values slowly gets the newest state, not a backlog.
    /// Cancelling ends the delivery, not the feed; the publisher finishes
    /// when the feed ends.
    public var statePublisher: AnyPublisher<State, Never> {
        Deferred { () -> AnyPublisher<State, Never> in
            // Holds the newest state until there is demand for it; nil
            // until the subscription's first.
            let subject = SubjectBox(CurrentValueSubject<State?, Never>(nil))
            let box = TaskBox()
            return subject.subject.compactMap { $0 }.handleEvents(
                receiveSubscription: { _ in
                    self.start()
                    box.task = self.observe(
                        onUpdate: { state, _ in subject.subject.send(state) },
                        onEnd: { subject.subject.send(completion: .finished) })
                },
                receiveCancel: { box.task?.cancel() }
            ).eraseToAnyPublisher()
        }.eraseToAnyPublisher()
    }
}
