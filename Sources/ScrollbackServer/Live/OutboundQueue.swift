import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels

/// The frames waiting for one socket, bounded: the fan-out puts frames here
/// without waiting, and the socket's writer, on its event loop, takes them
/// out at the pace the client reads (as long as the connection takes more
/// bytes). A client that falls behind is closed (with
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
///
/// The writer is not a task waiting on the queue: `push` and `close` call
/// their `wake` when the queue has something and no drain is due yet, and
/// the drain takes items until `take` finds none (which ends it) or the
/// connection takes no more for now (the drain is then still due, and
/// resumes when it does).
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
        var frames = CircularBuffer<ByteBuffer>(initialCapacity: OutboundQueue.idleCapacity)
        var bytes = 0
        var aboveSoftSince: ContinuousClock.Instant?
        /// When the writer last took a frame (or the queue was created).
        var lastTaken: ContinuousClock.Instant
        /// Set once: the close that ends the queue, sent after the frames
        /// still queued (a shutdown) or instead of them (a slow client).
        var closing: Item?
        /// A drain was asked for (`wake`) and has not yet found the queue empty.
        var drainDue = false
        var finished = false

        /// Whether the caller must wake the writer: the first item since
        /// the last drain found the queue empty.
        mutating func takeWake() -> Bool {
            defer { drainDue = true }
            return !drainDue
        }
    }

    private let state: NIOLockedValueBox<State>
    private let limits: Limits
    /// The room for frames a queue starts with, and goes back to when a
    /// burst that made it grow has been written.
    static let idleCapacity = 4
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

    /// Queues a frame, unless the queue is closing or the client is too
    /// slow; `wake` is called (outside the lock) when the writer must drain.
    @discardableResult
    func push(_ frame: ByteBuffer, wake: () -> Void = {}) -> PushResult {
        let now = self.now()
        let (result, mustWake): (PushResult, Bool) = state.withLockedValue { state in
            guard state.closing == nil, !state.finished else { return (.closing, false) }
            let bytes = state.bytes + frame.readableBytes
            let lagging =
                (bytes > limits.hardBytes && now - state.lastTaken > limits.stall)
                || (bytes > limits.softBytes && state.aboveSoftSince.map { now - $0 > limits.grace } == true)
            if lagging {
                state.frames.removeAll()
                state.bytes = 0
                state.closing = .close(code: StreamCloseCode.tooSlow, reason: "too slow: resume from your last seq")
                return (.tooSlow, state.takeWake())
            }
            state.bytes = bytes
            if bytes > limits.softBytes, state.aboveSoftSince == nil { state.aboveSoftSince = now }
            state.frames.append(frame)
            return (.queued, state.takeWake())
        }
        if mustWake { wake() }
        return result
    }

    /// Ends the queue with a close frame: after the frames already queued
    /// when `draining`, otherwise at once. Only the first close counts.
    func close(code: Int, reason: String, draining: Bool, wake: () -> Void = {}) {
        let mustWake = state.withLockedValue { state -> Bool in
            guard state.closing == nil, !state.finished else { return false }
            if !draining {
                state.frames.removeAll()
                state.bytes = 0
            }
            state.closing = .close(code: code, reason: reason)
            return state.takeWake()
        }
        if mustWake { wake() }
    }

    /// The queue is closing: a close was asked for, or the client fell behind.
    var isClosing: Bool { state.withLockedValue { $0.closing != nil || $0.finished } }

    /// Ends the queue without a close frame (the socket is gone).
    func finish() {
        state.withLockedValue { state in
            state.finished = true
            state.frames.removeAll()
            state.bytes = 0
        }
    }

    /// The next item for the writer; nil when there is none, which ends the
    /// drain (the next `push` or `close` wakes the writer again), and for
    /// good once the queue is finished or its close was taken.
    func take() -> Item? {
        state.withLockedValue { state in
            if state.finished { return nil }
            if let frame = state.frames.popFirst() {
                if state.frames.isEmpty, state.frames.capacity > Self.idleCapacity {
                    // A burst grew the buffer; an idle socket keeps a small one.
                    state.frames = CircularBuffer(initialCapacity: Self.idleCapacity)
                }
                state.lastTaken = self.now()
                state.bytes -= frame.readableBytes
                if state.bytes <= limits.softBytes { state.aboveSoftSince = nil }
                return .frame(frame)
            }
            if let closing = state.closing {
                state.finished = true
                return closing
            }
            state.drainDue = false
            return nil
        }
    }

    /// Frames and bytes waiting.
    var depth: (frames: Int, bytes: Int) {
        state.withLockedValue { ($0.frames.count, $0.bytes) }
    }

    /// How many frames the queue has room for before it grows.
    var room: Int {
        state.withLockedValue { $0.frames.capacity }
    }
}
