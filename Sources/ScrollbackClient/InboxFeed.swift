import Foundation
import NIOConcurrencyHelpers
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
/// token provider fails: `failure` says so). Errors on the way (a page, a
/// socket) are retried. Its interface is `ConversationFeed`'s: `start()`,
/// `updates`, `stop()`.
public final class InboxFeed: Sendable {
    /// A state of the inbox and how its rows changed to get there.
    public typealias Update = (inbox: Inbox, change: InboxChange)

    private let broadcast: InboxBroadcast
    private let runner: InboxRunner
    private let storage: (any InboxStorage)?
    /// `idle` before `start()`, `stopped` after `stop()`.
    private let task = NIOLockedValueBox<Run>(.idle)

    private enum Run {
        case idle
        case running(Task<Void, Never>)
        case stopped
    }

    /// A feed of the user of `client`, not started yet; `pageSize` is the
    /// number of conversations a page of the list asks for (nil: the
    /// server's default).
    ///
    /// With a `storage`, `start()` shows the rows it kept at once (each
    /// until the first pass over the list confirms it or goes past it), and
    /// the first `storedRows` rows are written back as the list changes.
    public init(client: ScrollbackClient, pageSize: Int? = nil, storage: (any InboxStorage)? = nil, storedRows: Int = 100) {
        let broadcast = InboxBroadcast()
        self.broadcast = broadcast
        self.storage = storage
        self.runner = InboxRunner(
            client: client, pageSize: pageSize, broadcast: broadcast, storage: storage, storedRows: max(storedRows, 0))
    }

    deinit {
        stop()
    }

    /// Subscribes the inbox and loads the first page, then keeps the list
    /// current. Once only; a stopped feed does not start again.
    public func start() {
        task.withLockedValue { run in
            guard case .idle = run else { return }
            // The rows on disk show before `start()` returns.
            let rows = (try? storage?.inboxRows()) ?? []
            if !rows.isEmpty {
                var inbox = Inbox()
                let update = inbox.apply(.restored(rows))
                broadcast.publish(inbox, update.change)
            }
            let runner = self.runner
            run = .running(Task { await runner.run(restoring: rows) })
        }
    }

    /// The inbox now.
    public var inbox: Inbox { broadcast.inbox }

    /// Why the feed ended by itself; nil while it runs and after `stop()`.
    public var failure: ScrollbackError? { broadcast.failure }

    /// The inbox now (its change: every row inserted), then after each
    /// change, in order; finishes when the feed ends. Each access is a
    /// stream of its own.
    public var updates: AsyncStream<Update> {
        broadcast.observe()
    }

    /// Loads the next page of the list, if there is one and none is loading:
    /// call it when the user scrolls near the end.
    public func loadMore() {
        runner.submit(.moreRequested)
    }

    /// Closes the socket and ends every `updates` stream.
    public func stop() {
        let previous = task.withLockedValue { run in
            defer { run = .stopped }
            return run
        }
        switch previous {
        case .running(let task): task.cancel()
        case .idle: broadcast.end(failure: nil)
        case .stopped: break
        }
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

/// What a feed publishes: its latest state, and the streams of those who
/// follow it. Synchronous, so that an app reads the state without waiting
/// and a stream that starts after the end finishes at once.
final class InboxBroadcast: Sendable {
    private struct State {
        var inbox = Inbox()
        var failure: ScrollbackError?
        var ended = false
        var observers: [AsyncStream<InboxFeed.Update>.Continuation] = []
    }

    private let state = NIOLockedValueBox(State())

    var inbox: Inbox { state.withLockedValue { $0.inbox } }
    var failure: ScrollbackError? { state.withLockedValue { $0.failure } }

    func observe() -> AsyncStream<InboxFeed.Update> {
        let (stream, observer) = AsyncStream.makeStream(of: InboxFeed.Update.self)
        state.withLockedValue { state in
            observer.yield((state.inbox, InboxChange(from: [], to: state.inbox.conversations)))
            if state.ended { observer.finish() } else { state.observers.append(observer) }
        }
        return stream
    }

    func publish(_ inbox: Inbox, _ change: InboxChange) {
        state.withLockedValue { state in
            state.inbox = inbox
            // A stream whose consumer stopped is dropped.
            state.observers.removeAll { observer in
                if case .terminated = observer.yield((inbox, change)) { true } else { false }
            }
        }
    }

    func end(failure: ScrollbackError?) {
        let observers = state.withLockedValue { state in
            state.failure = failure
            state.ended = true
            defer { state.observers = [] }
            return state.observers
        }
        for observer in observers { observer.finish() }
    }
}

/// Runs an inbox: the one owner of its state, it applies what the socket,
/// the HTTP calls and the app report, and performs the effects.
actor InboxRunner {
    private var inbox = Inbox()
    private var failure: ScrollbackError?
    private let client: ScrollbackClient
    private let pageSize: Int?
    private let broadcast: InboxBroadcast
    private let storage: (any InboxStorage)?
    private let storedRows: Int
    /// The rows the storage holds, as last read or written.
    private var saved: [Conversation] = []
    /// Actions from the app and effects to start, in the order they came.
    private let work: AsyncStream<Work>
    private let workSink: AsyncStream<Work>.Continuation

    private enum Work {
        case action(InboxAction)
        case effect(InboxEffect)
    }

    init(
        client: ScrollbackClient, pageSize: Int?, broadcast: InboxBroadcast, storage: (any InboxStorage)?,
        storedRows: Int
    ) {
        self.client = client
        self.pageSize = pageSize
        self.broadcast = broadcast
        self.storage = storage
        self.storedRows = storedRows
        (work, workSink) = AsyncStream.makeStream(of: Work.self)
    }

    nonisolated func submit(_ action: InboxAction) {
        workSink.yield(.action(action))
    }

    func run(restoring rows: [Conversation]) async {
        if !rows.isEmpty {
            saved = rows
            apply(.restored(rows))
        }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.connectAndRead() }
            // Each effect is performed by a task of its own; they all end with the feed.
            for await item in work {
                switch item {
                case .action(let action): apply(action)
                case .effect(let effect): group.addTask { await self.perform(effect) }
                }
            }
            group.cancelAll()
        }
        broadcast.end(failure: failure)
    }

    /// Applies an action, publishes the new state, queues the effects and
    /// returns the frames to send on the socket (the subscription, when connected).
    @discardableResult
    private func apply(_ action: InboxAction) -> [ClientFrame] {
        let before = inbox
        let update = inbox.apply(action)
        if inbox != before {
            // On disk before it is shown, as the conversation feed does: whatever
            // a reader sees of the list, the store holds already.
            keep()
            broadcast.publish(inbox, update.change)
        }
        var frames: [ClientFrame] = []
        for effect in update.effects {
            if case .subscribe(let after) = effect {
                frames.append(.subscribeInbox(after: after))
            } else {
                workSink.yield(.effect(effect))
            }
        }
        return frames
    }

    /// Writes the first rows of the list to the storage when they changed.
    /// A write that fails is tried again with the next change.
    private func keep() {
        guard let storage, inbox.isLoaded else { return }
        let rows = Array(inbox.conversations.prefix(storedRows))
        guard rows != saved, (try? storage.saveInbox(rows)) != nil else { return }
        saved = rows
    }

    private func end(_ error: ScrollbackError) {
        failure = error
        workSink.finish()
    }

    // MARK: HTTP

    private func perform(_ effect: InboxEffect) async {
        let client = client
        switch effect {
        case .subscribe:
            break  // sent by the socket as it connects
        case .loadPage(let request):
            do {
                let list = try await client.retrying { [pageSize] () async throws(ScrollbackError) in
                    try await client.conversations(limit: pageSize, cursor: request.cursor)
                }
                apply(.pageLoaded(list, for: request))
            } catch {
                if await pausedAfterFailure() { apply(.pageFailed(request)) }
            }
        case .loadUnreadCounts:
            do {
                let counts = try await client.retrying { () async throws(ScrollbackError) in
                    try await client.unreadCounts()
                }
                apply(.unreadCountsLoaded(counts))
            } catch {
                if await pausedAfterFailure() { apply(.unreadCountsFailed) }
            }
        case .fetchConversation(let id):
            do {
                let conversation = try await client.retrying { () async throws(ScrollbackError) in
                    try await client.conversation(id)
                }
                apply(.conversationFetched(conversation))
            } catch {
                if case .notFound = error {
                    apply(.conversationNotVisible(id))
                } else if await pausedAfterFailure() {
                    apply(.conversationFetchFailed(id))
                }
            }
        }
    }

    /// Waits as long as the retry policy's last attempt would have before a
    /// failed request is asked for again; false when the feed is stopping.
    private nonisolated func pausedAfterFailure() async -> Bool {
        do {
            try await client.waitToRetry(client.retry.delay(afterFailure: client.retry.maxAttempts))
            return true
        } catch {
            return false
        }
    }

    // MARK: Socket

    /// Keeps the inbox subscribed on the client's shared socket,
    /// subscribing again with backoff and jitter after each loss, until the
    /// feed stops or the token provider fails.
    private nonisolated func connectAndRead() async {
        let connection = client.connection
        let (events, sink) = AsyncStream.makeStream(of: LiveProtocol.Input.self)
        let subscriber = await connection.join(.inbox, inbox: sink)
        var iterator = events.makeAsyncIterator()
        var failures = 0
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            var wait: Duration = .zero
            var suspended = false
            do {
                try await session(attempt, subscriber, &iterator, sink)
            } catch is Suspended {
                suspended = true
            } catch ScrollbackError.rateLimited(_, let after?, _) {
                wait = .milliseconds(Int(after * 1000))
            } catch let failure as TokenProviderFailed {
                await end(.unauthorized(message: "The token provider failed: \(failure.reason)"))
                break
            } catch {
                // Dropped, refused or not subscribed in time: subscribe again.
            }
            await connection.release(subscriber)
            if await drop() { failures = 0 }
            if suspended {
                // No socket while the app is in the background; back in the
                // foreground, subscribe at once with the backoff reset.
                while let event = await iterator.next() {
                    if case .foregrounded = event { break }
                }
                failures = 0
                continue
            }
            failures += 1
            wait = max(wait, client.retry.delay(afterFailure: failures))
            try? await client.waitToRetry(wait)
        }
        sink.finish()
        await connection.leave(subscriber)
    }

    /// One subscription, from asking for the socket to its loss (or the
    /// feed stopping). A socket on which the inbox is not subscribed in time
    /// (a hung upgrade, a stalled database, a server that answers nothing)
    /// is given up.
    private nonisolated func session(
        _ attempt: Int, _ subscriber: LiveConnection.Subscriber,
        _ events: inout AsyncStream<LiveProtocol.Input>.Iterator, _ sink: AsyncStream<LiveProtocol.Input>.Continuation
    ) async throws {
        let connection = client.connection
        let deadline = Task { [subscribeTimeout = client.subscribeTimeout] in
            guard (try? await Task.sleep(for: subscribeTimeout)) != nil else { return }
            sink.yield(.timerFired(.subscribeDeadline(attempt: attempt)))
        }
        defer { deadline.cancel() }
        await connection.want(subscriber)
        while let event = await events.next() {
            switch event {
            case .opened:
                for frame in await apply(.connected) { await connection.send(frame, from: subscriber) }
            case .received(let frame):
                try await receive(frame)
            case .timerFired(.subscribeDeadline(let number)) where number == attempt:
                guard await inbox.isLive else {
                    throw ScrollbackError.transport(message: "The inbox was not subscribed within \(client.subscribeTimeout).")
                }
            case .tokenUnavailable(let reason):
                throw TokenProviderFailed(reason: reason)
            case .closed, .failed:
                return
            case .backgrounded:
                throw Suspended()
            default:
                continue
            }
        }
    }

    /// The app went to the background: the socket is given up until it comes back.
    private struct Suspended: Error {}

    /// The app's token provider failed: no socket can be opened, the feed ends.
    private struct TokenProviderFailed: Error {
        var reason: String
    }

    /// Applies a frame of the socket. An error before `inbox_subscribed` is
    /// the subscription failing: the socket is given up and tried again.
    private func receive(_ frame: ServerFrame) throws {
        if case .error(let code, let message, _, let retryAfter) = frame, !inbox.isLive {
            throw code == .rateLimited
                ? ScrollbackError.rateLimited(code: code, retryAfter: retryAfter.map(Double.init), message: message)
                : ScrollbackError.unavailable(code: code, retryAfter: retryAfter.map(Double.init), message: message)
        }
        apply(.frame(frame))
    }

    /// Applies the loss of the socket; whether the inbox had been live on it.
    private func drop() -> Bool {
        let wasLive = inbox.isLive
        apply(.connectionDropped)
        return wasLive
    }
}
