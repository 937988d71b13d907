import Foundation
import HummingbirdWebSocket
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import ScrollbackModels

/// One live-stream socket as the hub and the server see it: its bounded
/// outbound queue, who it belongs to once authenticated, and how it is
/// closed. What it is subscribed to is the hub's to know (`LiveRouting`).
final class StreamSocket: Sendable {
    let id: Int
    let queue: OutboundQueue
    private let channel: any Channel
    private let outbound: WebSocketOutboundWriter
    private let counters: LiveCounters
    private let state = NIOLockedValueBox(State())

    private struct State {
        var user: UserID?
        var expires: Date?
        /// A frame is being handled: a shutdown waits for its answer.
        var handling = false
        var shuttingDown = false
        var shutdownGrace: Duration = .seconds(5)
        var closing = false
        /// The next check of the socket's authentication, on its event loop.
        var watch: Scheduled<Void>?
        var watchStopped = false
    }

    private static let ids = NIOLockedValueBox(0)

    init(channel: any Channel, outbound: WebSocketOutboundWriter, counters: LiveCounters, limits: OutboundQueue.Limits) {
        id = Self.ids.withLockedValue {
            $0 += 1
            return $0
        }
        queue = OutboundQueue(limits: limits)
        self.channel = channel
        self.outbound = outbound
        self.counters = counters
    }

    // MARK: Sending

    /// Queues a frame without waiting; a client that has fallen too far
    /// behind is closed instead (`tooSlow`).
    func send(_ frame: ServerFrameBytes) {
        if queue.push(frame.buffer) == .tooSlow {
            counters.closedTooSlow()
            close(code: StreamCloseCode.tooSlow, reason: "too slow: resume from your last seq")
        }
    }

    func send(_ frame: ServerFrame) {
        send(ServerFrameBytes(frame))
    }

    /// Writes queued frames to the socket at the pace the client reads,
    /// until the queue ends; a close at the end of the queue is sent in order.
    func runWriter() async {
        while let item = await queue.next() {
            switch item {
            case .frame(let buffer):
                do {
                    try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: buffer)))
                } catch {
                    queue.finish()
                    return
                }
            case .close(let code, let reason):
                try? await outbound.close(WebSocketErrorCode(codeNumber: code), reason: reason)
                return
            }
        }
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
        queue.close(code: code, reason: reason, draining: true)
        let channel = self.channel
        channel.eventLoop.scheduleTask(in: TimeAmount(grace)) { channel.close(promise: nil) }
    }

    // MARK: The watch on its authentication

    /// Closes the socket when no `auth` frame came within `seconds`, and
    /// later when its token expires (a fresh token moves the expiry on).
    /// A check scheduled on the socket's event loop, not a task: an idle
    /// socket holds one timer instead of a task and its stack.
    func watchAuthentication(within seconds: Int) {
        schedule(in: .seconds(Int64(seconds))) { socket in
            guard socket.user != nil else {
                socket.close(code: 1008, reason: "send an auth frame within \(seconds) seconds")
                return
            }
            socket.checkExpiry()
        }
    }

    /// Ends the watch (the socket closed).
    func stopWatch() {
        state.withLockedValue { state in
            state.watchStopped = true
            defer { state.watch = nil }
            return state.watch
        }?.cancel()
    }

    private func checkExpiry() {
        guard let expires else { return }
        let left = expires.timeIntervalSinceNow
        guard left > 0 else {
            send(.error(code: .unauthorized, message: "The token expired: authenticate again.", ref: nil))
            close(code: StreamCloseCode.unauthorized, reason: "token expired")
            return
        }
        schedule(in: .milliseconds(Int64(min(left, 3600) * 1000) + 1)) { $0.checkExpiry() }
    }

    private func schedule(in delay: TimeAmount, _ check: @escaping @Sendable (StreamSocket) -> Void) {
        let scheduled = channel.eventLoop.scheduleTask(in: delay) { [weak self] in
            guard let self, !self.state.withLockedValue({ $0.watchStopped || $0.closing }) else { return }
            check(self)
        }
        let stopped = state.withLockedValue { state in
            if !state.watchStopped { state.watch = scheduled }
            return state.watchStopped
        }
        if stopped { scheduled.cancel() }
    }

    // MARK: State

    var user: UserID? { state.withLockedValue { $0.user } }
    var expires: Date? { state.withLockedValue { $0.expires } }

    func authenticate(_ user: UserID, until expires: Date) {
        state.withLockedValue {
            $0.user = user
            $0.expires = expires
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
