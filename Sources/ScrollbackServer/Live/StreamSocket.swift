import Foundation
import HummingbirdWebSocket
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import ScrollbackModels

/// One live-stream socket as the hub and the server see it: its bounded
/// outbound queue, the client's messages waiting for their answer, who it
/// belongs to once authenticated, and how it is closed. What it is
/// subscribed to is the hub's to know (`LiveRouting`).
final class StreamSocket: Sendable, NIOScheduledCallbackHandler {
    let id: Int
    let queue: OutboundQueue
    private let channel: any Channel
    private let counters: LiveCounters
    private let state = NIOLockedValueBox(State())

    private struct State {
        var user: UserID?
        var expires: Date?
        /// The `iat` of the token it signed in with last, if it had one.
        var issuedAt: Date?
        /// A frame is being handled: a shutdown waits for its answer.
        var handling = false
        var shuttingDown = false
        var shutdownGrace: Duration = .seconds(5)
        var closing = false
        /// The next check of the socket's authentication, on its event loop.
        var watch: NIOScheduledCallback?
        var watchStopped = false
        /// The time given for the first `auth` frame.
        var authSeconds = 0
        /// The client's messages waiting for their answer, in order.
        var received: [WebSocketMessage] = []
        /// Who answers them, once the socket is admitted.
        var answerer: StreamSession?
        /// A task answers them now.
        var answering = false
        /// Someone waits for the last answer (`answeredAll`).
        var answered: CheckedContinuation<Void, Never>?
    }

    private static let ids = NIOLockedValueBox(0)

    init(channel: any Channel, counters: LiveCounters, limits: OutboundQueue.Limits) {
        id = Self.ids.withLockedValue {
            $0 += 1
            return $0
        }
        queue = OutboundQueue(limits: limits)
        self.channel = channel
        self.counters = counters
    }

    // MARK: Sending

    /// Queues a frame without waiting; a client that has fallen too far
    /// behind is closed instead (`tooSlow`).
    func send(_ frame: ServerFrameBytes) {
        if queue.push(frame.buffer, wake: wakeWriter) == .tooSlow {
            counters.closedTooSlow()
            close(code: StreamCloseCode.tooSlow, reason: "too slow: resume from your last seq")
        }
    }

    func send(_ frame: ServerFrame) {
        send(ServerFrameBytes(frame))
    }

    // MARK: The writer

    /// Asks the socket's event loop to write what its queue holds.
    private func wakeWriter() {
        channel.eventLoop.execute { self.drain() }
    }

    /// The socket's writer, on its event loop (not a task: an idle socket
    /// holds no writer at all): writes the queued frames while the
    /// connection takes more bytes, and stops when it takes no more for now
    /// (the client reads slower than frames come), to go on when it does
    /// (`channelWritable`). A close at the end of the queue is sent in
    /// order; the channel handler then waits for the client's close
    /// (`StreamChannelHandler`).
    ///
    /// Frames are written to the channel directly, past the WebSocket
    /// handler's own writer: no extension (compression) is configured that
    /// it would apply.
    private func drain() {
        var unflushed = 0
        defer { if unflushed > 0 { channel.flush() } }
        while channel.isWritable {
            switch queue.take() {
            case nil:
                return
            case .frame(let buffer):
                channel.write(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
                unflushed += 1
                if unflushed == Self.framesPerFlush {
                    channel.flush()
                    unflushed = 0
                }
            case .close(let code, let reason):
                channel.writeAndFlush(
                    StreamChannelHandler.closeFrame(
                        WebSocketErrorCode(codeNumber: code), reason: reason, allocator: channel.allocator),
                    promise: nil)
                unflushed = 0
                return
            }
        }
    }

    /// The channel keeps every write until a flush hands it to the socket,
    /// and its list of pending writes keeps the room it ever grew to (two
    /// entries a frame): a flush every few frames keeps that list at its
    /// initial size when the client reads, instead of the size of the
    /// largest burst, for as long as the socket stays open.
    static let framesPerFlush = 4

    /// The connection takes bytes again: the writer goes on, if it stopped.
    func channelWritable() {
        drain()
    }

    /// Closes the socket: the frames already queued, then a close frame with
    /// `code`. A client that reads nothing never takes them, so the
    /// connection is cut after `grace` whatever happened (a client that reads
    /// has closed by then). Only the first close counts.
    func close(code: Int, reason: String, grace: Duration = .seconds(5)) {
        let first = state.withLockedValue { state in
            defer { state.closing = true }
            return !state.closing
        }
        guard first else { return }
        queue.close(code: code, reason: reason, draining: true, wake: wakeWriter)
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: TimeAmount(grace)) { channel.close(promise: nil) }
    }

    // MARK: The watch on its authentication

    /// Closes the socket when no `auth` frame came within `seconds`, and
    /// later when its token expires (a fresh token moves the expiry on).
    /// A callback scheduled on the socket's event loop, not a task: an idle
    /// socket holds one entry in its event loop's timers instead of a task
    /// and its stack (and the socket is that entry's handler, so it costs
    /// no allocation of its own).
    func watchAuthentication(within seconds: Int) {
        state.withLockedValue { $0.authSeconds = seconds }
        schedule(in: .seconds(Int64(seconds)))
    }

    /// Ends the watch (the socket closed).
    func stopWatch() {
        state.withLockedValue { state in
            state.watchStopped = true
            defer { state.watch = nil }
            return state.watch
        }?.cancel()
    }

    func handleScheduledCallback(eventLoop: some EventLoop) {
        let (stopped, seconds) = state.withLockedValue { state in
            defer { state.watch = nil }
            return (state.watchStopped || state.closing, state.authSeconds)
        }
        guard !stopped else { return }
        guard user != nil else {
            close(code: 1008, reason: "send an auth frame within \(seconds) seconds")
            return
        }
        checkExpiry()
    }

    private func checkExpiry() {
        guard let expires else { return }
        let left = expires.timeIntervalSinceNow
        guard left > 0 else {
            send(.error(code: .unauthorized, message: "The token expired: authenticate again.", ref: nil))
            close(code: StreamCloseCode.unauthorized, reason: "token expired")
            return
        }
        schedule(in: .milliseconds(Int64(min(left, 3600) * 1000) + 1))
    }

    private func schedule(in delay: TimeAmount) {
        guard let scheduled = try? channel.eventLoop.scheduleCallback(in: delay, handler: self) else { return }
        let stopped = state.withLockedValue { state in
            if !state.watchStopped { state.watch = scheduled }
            return state.watchStopped
        }
        if stopped { scheduled.cancel() }
    }

    // MARK: The client's messages

    /// At most this many of the client's messages wait for their answer;
    /// the channel reads no more from the connection until one is taken.
    static let maxReceived = 16

    /// Takes a message from the client (from the channel handler, in
    /// order), and starts a task to answer it if none runs and the socket
    /// was admitted. False when `maxReceived` messages wait.
    func received(_ message: WebSocketMessage) -> Bool {
        let (answerer, room) = state.withLockedValue { state in
            state.received.append(message)
            let start = !state.answering && state.answerer != nil
            if start { state.answering = true }
            return (start ? state.answerer : nil, state.received.count < Self.maxReceived)
        }
        if let answerer { Task { await answerer.answer(self) } }
        return room
    }

    /// The socket was admitted: `session` answers its messages from now on,
    /// those that came already first.
    func startAnswering(by session: StreamSession) {
        let start = state.withLockedValue { state in
            state.answerer = session
            guard !state.answering, !state.received.isEmpty else { return false }
            state.answering = true
            return true
        }
        if start { Task { await session.answer(self) } }
    }

    /// The next message to answer, for the task that answers them; nil when
    /// none waits, and that task ends.
    func nextReceived() -> WebSocketMessage? {
        let (message, resume, waiter) = state.withLockedValue { state -> (WebSocketMessage?, Bool, CheckedContinuation<Void, Never>?) in
            guard !state.received.isEmpty else {
                state.answering = false
                defer { state.answered = nil }
                return (nil, false, state.answered)
            }
            return (state.received.removeFirst(), state.received.count == Self.maxReceived - 1, nil)
        }
        waiter?.resume()
        if resume {
            let channel = self.channel
            channel.eventLoop.execute {
                (try? channel.pipeline.syncOperations.handler(type: StreamChannelHandler.self))?.resumeReading()
            }
        }
        return message
    }

    /// Returns once every message that came is answered (after the
    /// connection closed: none comes any more).
    func answeredAll() async {
        await withCheckedContinuation { continuation in
            let wait = state.withLockedValue { state in
                if state.answering { state.answered = continuation }
                return state.answering
            }
            if !wait { continuation.resume() }
        }
    }

    // MARK: State

    var user: UserID? { state.withLockedValue { $0.user } }
    var expires: Date? { state.withLockedValue { $0.expires } }
    var issuedAt: Date? { state.withLockedValue { $0.issuedAt } }

    static let revokedMessage = "The token was revoked: sign in again for a new one."

    func authenticate(_ user: UserID, until expires: Date, issuedAt: Date?) {
        state.withLockedValue {
            $0.user = user
            $0.expires = expires
            $0.issuedAt = issuedAt
        }
    }

    /// Marks the start of handling a frame; false during a shutdown, when no
    /// new frame is taken on.
    func beginHandling() -> Bool {
        state.withLockedValue { state in
            guard !state.shuttingDown else { return false }
            state.handling = true
            return true
        }
    }

    /// Marks the end of handling a frame; a shutdown that waited for it
    /// closes the socket now, after the frames already queued.
    func endHandling() {
        let shuttingDown = state.withLockedValue { state in
            state.handling = false
            return state.shuttingDown
        }
        if shuttingDown { closeForShutdown() }
    }

    /// Closes with 1001 once the frame being handled (if any) is answered,
    /// cutting the connection after `grace` at the latest.
    func beginShutdown(grace: Duration) {
        let idle = state.withLockedValue { state in
            state.shuttingDown = true
            state.shutdownGrace = grace
            return !state.handling
        }
        if idle { closeForShutdown() }
    }

    private func closeForShutdown() {
        close(code: 1001, reason: "server shutting down", grace: state.withLockedValue { $0.shutdownGrace })
    }
}
