import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels

/// The frames waiting for one socket, bounded: the fan-out puts frames here
/// without waiting, and the socket's own writer task takes them out at the
/// pace the client reads. A client that falls behind is closed (with
/// `StreamCloseCode.tooSlow`, so it resumes from its last seq) rather than
/// allowed to hold memory or slow anyone else: when the queue has stayed
/// above its soft limit for the grace period (it reads, but slower than the
/// conversation moves), or when it is above its hard limit and the writer
/// has taken nothing for the stall period (it stopped reading). Frames are
/// never dropped from a socket that stays open.
///
/// The hard limit alone never closes a socket: one read of the change feed
/// can queue a burst of hundreds of messages at once, larger than the limit,
/// for a client that keeps up perfectly well. Such a burst costs little
/// memory per socket, since every subscriber's queue holds the same buffers.
final class OutboundQueue: Sendable {
    struct Limits: Sendable {
        var softBytes = 256 * 1024
        var hardBytes = 1024 * 1024
        var grace: Duration = .seconds(5)
        var stall: Duration = .seconds(1)
    }

    enum Item: Sendable, Equatable {
        case frame(ByteBuffer)
        /// Send this close frame and stop.
        case close(code: Int, reason: String)
    }

    private struct State {
        var frames = CircularBuffer<ByteBuffer>()
        var bytes = 0
        var aboveSoftSince: ContinuousClock.Instant?
        /// When the writer last took a frame (or the queue was created).
        var lastTaken: ContinuousClock.Instant
        /// Set once: the close that ends the queue, sent after the frames
        /// still queued (a shutdown) or instead of them (a slow client).
        var closing: Item?
        var waiter: CheckedContinuation<Item?, Never>?
        var finished = false
    }

    private let state: NIOLockedValueBox<State>
    private let limits: Limits
    private let now: @Sendable () -> ContinuousClock.Instant

    /// `now` is the clock's reading; tests pass one they move by hand.
    init(limits: Limits = Limits(), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.limits = limits
        self.now = now
        state = NIOLockedValueBox(State(lastTaken: now()))
    }

    enum PushResult: Sendable, Equatable {
        case queued
        /// The queue is closing; the frame was not kept.
        case closing
        /// The client fell behind just now: the queue dropped what it held and
        /// closes with `tooSlow` (reported once).
        case tooSlow
    }

    /// Queues a frame, unless the queue is closing or the client is too slow.
    @discardableResult
    func push(_ frame: ByteBuffer) -> PushResult {
        let now = self.now()
        let (waiter, accepted, lagged): (CheckedContinuation<Item?, Never>?, Bool, Bool) = state.withLockedValue {
            state in
            guard state.closing == nil, !state.finished else { return (nil, false, false) }
            let bytes = state.bytes + frame.readableBytes
            let lagging =
                (bytes > limits.hardBytes && now - state.lastTaken > limits.stall)
                || (bytes > limits.softBytes && state.aboveSoftSince.map { now - $0 > limits.grace } == true)
            if lagging {
                state.frames.removeAll()
                state.bytes = 0
                state.closing = .close(code: StreamCloseCode.tooSlow, reason: "too slow: resume from your last seq")
                return (Self.takeWaiter(&state), false, true)
            }
            state.bytes = bytes
            if bytes > limits.softBytes, state.aboveSoftSince == nil { state.aboveSoftSince = now }
            guard let waiter = Self.takeWaiter(&state) else {
                state.frames.append(frame)
                return (nil, true, false)
            }
            state.bytes -= frame.readableBytes
            state.lastTaken = now
            return (waiter, true, false)
        }
        if let waiter {
            waiter.resume(returning: accepted ? .frame(frame) : state.withLockedValue { $0.closing })
        }
        return lagged ? .tooSlow : accepted ? .queued : .closing
    }

    /// Ends the queue with a close frame: after the frames already queued
    /// when `draining`, otherwise at once. Only the first close counts.
    func close(code: Int, reason: String, draining: Bool) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Item?, Never>? in
            guard state.closing == nil, !state.finished else { return nil }
            if !draining {
                state.frames.removeAll()
                state.bytes = 0
            }
            state.closing = .close(code: code, reason: reason)
            return Self.takeWaiter(&state)
        }
        waiter?.resume(returning: .close(code: code, reason: reason))
    }

    /// The queue is closing: a close was asked for, or the client fell behind.
    var isClosing: Bool { state.withLockedValue { $0.closing != nil || $0.finished } }

    /// Ends the queue without a close frame (the socket is gone).
    func finish() {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Item?, Never>? in
            state.finished = true
            state.frames.removeAll()
            state.bytes = 0
            return Self.takeWaiter(&state)
        }
        waiter?.resume(returning: nil)
    }

    /// The next item, waiting for one; nil once the queue is finished or its
    /// close was taken.
    func next() async -> Item? {
        await withCheckedContinuation { continuation in
            let item: Item?? = state.withLockedValue { state in
                if state.finished { return .some(nil) }
                if let frame = state.frames.popFirst() {
                    state.lastTaken = self.now()
                    state.bytes -= frame.readableBytes
                    if state.bytes <= limits.softBytes { state.aboveSoftSince = nil }
                    return .some(.frame(frame))
                }
                if let closing = state.closing {
                    state.finished = true
                    return .some(closing)
                }
                state.waiter = continuation
                return nil
            }
            if let item { continuation.resume(returning: item) }
        }
    }

    /// Frames and bytes waiting.
    var depth: (frames: Int, bytes: Int) {
        state.withLockedValue { ($0.frames.count, $0.bytes) }
    }

    /// The writer waiting for an item, if any. A waiter only exists while
    /// nothing is queued, so when the queue is closing it is handed the close
    /// (by the caller), and the queue is finished.
    private static func takeWaiter(_ state: inout State) -> CheckedContinuation<Item?, Never>? {
        defer { state.waiter = nil }
        if state.waiter != nil, state.closing != nil { state.finished = true }
        return state.waiter
    }
}
