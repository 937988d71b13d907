import NIOConcurrencyHelpers

/// Runs a pure reducer: the one place a feed's state changes and its
/// effects are performed. An event reduces the state under one lock; each
/// effect it answers with is performed at once (local work such as the
/// storage, whose answer is the next event handled), as a task of the
/// runner (network work, whose answers come back as events), or once the
/// lock is released (answering callers). Nothing else holds or changes the
/// state, so every event sees the state the one before it left, and every
/// subscriber sees the states in the order they were made.
///
/// A runner serves one feed: ending it (``Work/end(then:)``) cancels exactly
/// the tasks it started. Its tasks hold it weakly, so a runner its owner
/// lets go of ends as its owner does.
final class EffectRunner<State: Sendable, Context: Sendable, Event: Sendable, Effect: Sendable>: Sendable {
    /// Hands an event to the runner from one of its tasks: the effects the
    /// event was answered with, or nil when the runner is gone.
    typealias Send = @Sendable (Event) -> [Effect]?

    /// How an effect is performed.
    enum Work: Sendable {
        /// Nothing to do (an answer for the caller, an update handed out already).
        case none
        /// Done at once, under the lock: its answer, if any, is the next event.
        case done(Event?)
        /// A task of the runner, handing its answers back as they come.
        case task(@Sendable (_ send: @escaping Send) async -> Void)
        /// Run once the lock is released.
        case afterwards(@Sendable () -> Void)
        /// Cancel every task of the runner (no new one starts), then run `then`
        /// once the lock is released.
        case end(then: @Sendable () -> Void)
    }

    private struct Core: Sendable {
        var state: State
        var context: Context
        var tasks: [Int: Task<Void, Never>] = [:]
        var nextTask = 0
        var isEnded = false
    }

    private let core: NIOLockedValueBox<Core>
    private let reduce: @Sendable (inout State, Event) -> [Effect]
    private let perform: @Sendable (Effect, inout Context) -> Work

    /// A runner of `reduce` from `state`; `perform` says how each effect is
    /// done, with `context` (what the effects keep that is not state: the
    /// update streams, the callers waiting) under the same lock.
    init(
        state: State, context: Context, reduce: @escaping @Sendable (inout State, Event) -> [Effect],
        perform: @escaping @Sendable (Effect, inout Context) -> Work
    ) {
        self.core = NIOLockedValueBox(Core(state: state, context: context))
        self.reduce = reduce
        self.perform = perform
    }

    /// The state now.
    var state: State { core.withLockedValue { $0.state } }

    /// Reads the state and changes the context, under the lock.
    func withCore<T>(_ body: (State, inout Context) -> T) -> T {
        core.withLockedValue { body($0.state, &$0.context) }
    }

    /// Handles `event`, and every event its effects answer at once; the
    /// effects `event` itself was answered with.
    @discardableResult
    func send(_ event: Event) -> [Effect] {
        send(event) { _, _ in () }.effects
    }

    /// Runs `preparing` on the state and the context, then handles `event`,
    /// all under the lock: a caller that must be waiting before the event
    /// can answer it (a send's promise) gets in first.
    func send<T>(_ event: Event, preparing: (State, inout Context) -> T) -> (value: T, effects: [Effect]) {
        var afterwards: [@Sendable () -> Void] = []
        var cancelled: [Task<Void, Never>] = []
        let result = core.withLockedValue { core -> (value: T, effects: [Effect]) in
            let value = preparing(core.state, &core.context)
            var events = [event]
            var first: [Effect]?
            var next = 0
            while next < events.count {
                let effects = reduce(&core.state, events[next])
                next += 1
                if first == nil { first = effects }
                for effect in effects {
                    switch perform(effect, &core.context) {
                    case .none:
                        break
                    case .done(let answer):
                        if let answer { events.append(answer) }
                    case .task(let work):
                        spawn(work, in: &core)
                    case .afterwards(let work):
                        afterwards.append(work)
                    case .end(let then):
                        core.isEnded = true
                        cancelled += core.tasks.values
                        core.tasks = [:]
                        afterwards.append(then)
                    }
                }
            }
            return (value, first ?? [])
        }
        for task in cancelled { task.cancel() }
        for work in afterwards { work() }
        return result
    }

    private func spawn(_ work: @escaping @Sendable (_ send: @escaping Send) async -> Void, in core: inout Core) {
        guard !core.isEnded else { return }
        let id = core.nextTask
        core.nextTask += 1
        core.tasks[id] = Task { [weak self] in
            await work { [weak self] event in self?.send(event) }
            self?.core.withLockedValue { _ = $0.tasks.removeValue(forKey: id) }
        }
    }
}
