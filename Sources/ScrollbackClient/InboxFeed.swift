import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import WSClient

/// The user's conversation list, live: an `Inbox` kept current by the inbox
/// stream, for an app to bind its inbox screen to.
///
/// It subscribes the inbox on a socket, waits for `inbox_subscribed`, loads
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
    /// Nil before `start()`; `stopped` once stopped.
    private let task = NIOLockedValueBox<Run>(.idle)

    private enum Run {
        case idle
        case running(Task<Void, Never>)
        case stopped
    }

    /// A feed of the user of `client`, not started yet; `pageSize` is the
    /// number of conversations a page of the list asks for (nil: the
    /// server's default).
    public init(client: ScrollbackClient, pageSize: Int? = nil) {
        let broadcast = InboxBroadcast()
        self.broadcast = broadcast
        self.runner = InboxRunner(client: client, pageSize: pageSize, broadcast: broadcast)
    }

    deinit {
        stop()
    }

    /// Subscribes the inbox and loads the first page, then keeps the list
    /// current. Once only; a stopped feed does not start again.
    public func start() {
        task.withLockedValue { run in
            guard case .idle = run else { return }
            let runner = self.runner
            run = .running(Task { await runner.run() })
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
    public func inboxFeed(pageSize: Int? = nil) -> InboxFeed {
        InboxFeed(client: self, pageSize: pageSize)
    }

    /// The user's inbox, live, through completion handlers: `onUpdate` with
    /// the state now and then each later state and how its rows changed, in
    /// order, then `onEnd` once (nil after `stop()`). Both are called on an
    /// arbitrary thread. The feed is started.
    @discardableResult
    public func inboxFeed(
        pageSize: Int? = nil, onUpdate: @escaping @Sendable (Inbox, InboxChange) -> Void,
        onEnd: @escaping @Sendable (ScrollbackError?) -> Void
    ) -> InboxFeed {
        let feed = InboxFeed(client: self, pageSize: pageSize)
        let updates = feed.updates
        Task {
            for await (inbox, change) in updates { onUpdate(inbox, change) }
            onEnd(feed.failure)
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
    /// Actions from the app and effects to start, in the order they came.
    private let work: AsyncStream<Work>
    private let workSink: AsyncStream<Work>.Continuation

    private enum Work {
        case action(InboxAction)
        case effect(InboxEffect)
    }

    init(client: ScrollbackClient, pageSize: Int?, broadcast: InboxBroadcast) {
        self.client = client
        self.pageSize = pageSize
        self.broadcast = broadcast
        (work, workSink) = AsyncStream.makeStream(of: Work.self)
    }

    nonisolated func submit(_ action: InboxAction) {
        workSink.yield(.action(action))
    }

    func run() async {
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
        if inbox != before { broadcast.publish(inbox, update.change) }
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
            try await Task.sleep(for: client.retry.delay(afterFailure: client.retry.maxAttempts))
            return true
        } catch {
            return false
        }
    }

    // MARK: Socket

    /// Keeps a socket open and the inbox subscribed on it, reconnecting with
    /// backoff and jitter, until the feed stops or the token provider fails.
    private nonisolated func connectAndRead() async {
        var failures = 0
        while !Task.isCancelled {
            let bearer: String
            do {
                bearer = try await client.token()
            } catch {
                return await end(.unauthorized(message: "The token provider failed: \(error)"))
            }
            var wait: Duration = .zero
            do {
                try await session(bearer: bearer)
            } catch ScrollbackError.rateLimited(let after?, _) {
                wait = .milliseconds(Int(after * 1000))
            } catch {
                // Dropped, refused or not subscribed in time: connect again.
            }
            if await drop() { failures = 0 }
            failures += 1
            wait = max(wait, client.retry.delay(afterFailure: failures))
            try? await Task.sleep(for: wait)
        }
    }

    /// One socket, from connecting to its loss (or the feed stopping).
    private nonisolated func session(bearer: String) async throws {
        let client = client
        let attempt = ConnectionAttempt()
        // The socket's handler runs in the connection's own task, which the
        // feed's cancellation does not reach: stopping is told to it.
        let (stopping, stop) = AsyncStream.makeStream(of: Never.self)
        try await withTaskCancellationHandler {
            _ = try await attempt.run(upgradeTimeout: client.subscribeTimeout) {
                try await WebSocketClient.connect(
                    url: client.streamURL, configuration: ScrollbackClient.socketConfiguration,
                    logger: ScrollbackClient.socketLogger
                ) { inbound, outbound, _ in
                    // An attempt given up while its upgrade hung must not touch the inbox.
                    guard attempt.upgraded() else { return }
                    try await outbound.send(.auth(token: bearer))
                    for frame in await self.apply(.connected) { try await outbound.send(frame) }
                    try await withThrowingTaskGroup(of: Bool.self) { group in
                        group.addTask {
                            try await self.read(inbound)
                            return true
                        }
                        // Stopping closes the socket as the protocol asks: the
                        // server's answer ends the reader (or the wait does).
                        group.addTask {
                            for await _ in stopping {}
                            try? await outbound.close(.normalClosure, reason: "stopped")
                            try await Task.sleep(for: ScrollbackClient.socketConfiguration.closeTimeout)
                            return true
                        }
                        // A socket that is not subscribed in time (a stalled
                        // database, a server that answers nothing) is given up.
                        group.addTask {
                            try await Task.sleep(for: client.subscribeTimeout)
                            return false
                        }
                        while let ended = try await group.next(), !ended {
                            guard await self.inbox.isLive else {
                                throw ScrollbackError.transport(
                                    message: "The inbox was not subscribed within \(client.subscribeTimeout).")
                            }
                        }
                        group.cancelAll()
                    }
                }
            }
        } onCancel: {
            stop.finish()
        }
    }

    /// Applies the socket's frames until it closes.
    private nonisolated func read(_ inbound: WebSocketInboundStream) async throws {
        for try await message in inbound.messages(maxSize: APILimits.maxStreamFrameBytes * 4) {
            guard case .text(let text) = message,
                let frame = try? ScrollbackJSON.decoder().decode(ServerFrame.self, from: Data(text.utf8))
            else { continue }
            try await receive(frame)
        }
    }

    /// Applies a frame of the socket. An error before `inbox_subscribed` is
    /// the subscription failing: the socket is given up and tried again.
    private func receive(_ frame: ServerFrame) throws {
        if case .error(let code, let message, _, let retryAfter) = frame, !inbox.isLive {
            throw code == .rateLimited
                ? ScrollbackError.rateLimited(retryAfter: retryAfter.map(Double.init), message: message)
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

extension WebSocketOutboundWriter {
    /// Sends a frame of the live stream as a JSON text frame.
    fileprivate func send(_ frame: ClientFrame) async throws {
        try await write(.text(String(decoding: try ScrollbackJSON.encoder().encode(frame), as: UTF8.self)))
    }
}


/// One connection attempt of an inbox socket. WSClient's connect has no
/// timeout of its own, and a connection that was accepted but never answers
/// its upgrade (a server in the middle of shutting down, a proxy whose
/// backend is gone) would wait forever: past `upgradeTimeout` without an
/// upgrade the attempt is given up (its task is left to end with its
/// connection) and the stream tries again.
final class ConnectionAttempt: Sendable {
    private enum Phase { case connecting, upgraded, abandoned }
    private let phase = NIOLockedValueBox(Phase.connecting)

    /// Called when the upgrade succeeded; false if the attempt was given up.
    func upgraded() -> Bool {
        phase.withLockedValue { phase in
            guard phase == .connecting else { return false }
            phase = .upgraded
            return true
        }
    }

    private func abandon() -> Bool {
        phase.withLockedValue { phase in
            guard phase == .connecting else { return false }
            phase = .abandoned
            return true
        }
    }

    func run<T: Sendable>(upgradeTimeout: Duration, _ connect: @escaping @Sendable () async throws -> T) async throws -> T {
        let once = NIOLockedValueBox<CheckedContinuation<T, any Error>?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            once.withLockedValue { $0 = continuation }
            let work = Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await connect())
                } catch {
                    result = .failure(error)
                }
                once.withLockedValue { $0.take() }?.resume(with: result)
            }
            Task {
                try? await Task.sleep(for: upgradeTimeout)
                guard self.abandon() else { return }
                work.cancel()
                once.withLockedValue { $0.take() }?.resume(
                    throwing: ScrollbackError.transport(message: "The WebSocket upgrade got no answer within \(upgradeTimeout)."))
            }
        }
    }
}
