import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

/// First in every HTTP connection's pipeline: counts the bytes the client
/// sends and applies ``RequestTimer``; the ``RequestBoundaryObserver``
/// further down tells it where requests begin and end. A request that
/// does not arrive in time is answered 408 (when no answer has begun) and
/// the connection closed.
///
/// It also caps every request's body, on every route: Hummingbird reads
/// (and discards) the rest of a body the route did not read, with no
/// limit, so a route that never reads its body (typing, a 401, a GET)
/// would otherwise take gigabytes of a chunked one. Past the limit, the
/// request is answered 413 when no answer has begun, and the connection
/// closed either way; what the client still sends goes no further. The
/// close lingers a little (``lingerBytes``, ``lingerTime``): a client
/// still sending its body then reads the answer rather than a reset.
final class SlowClientGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    static let name = "scrollback.slow-client-guard"

    private var timer: RequestTimer
    private let origin = NIODeadline.now()
    private var check: RepeatedTask?
    private let onTimedOut: @Sendable () -> Void
    /// Whether the server is shutting down gracefully.
    private var quiescing = false
    private let maxBodyBytes: Int
    /// The cap of an upload's bytes (``UploadBodies``).
    private let maxUploadBytes: Int
    /// The cap of the request under way: one of the two above.
    private var bodyLimit: Int
    private let onBodyTooLarge: @Sendable () -> Void
    private let onMalformed: @Sendable () -> Void
    /// The body bytes of the request under way, as decoded (chunk framing
    /// not counted).
    private var bodyBytes = 0
    /// Whether the answer to the request under way has begun.
    private var answerBegan = false
    /// The connection is being closed for a body over the limit: what the
    /// client still sends goes no further, and the server's own answer (if
    /// any comes) is not written after the 413.
    private(set) var cut = false
    /// Bytes dropped since the cut.
    private var dropped = 0
    /// After a cut, the most the client may still send, and the longest
    /// it is waited for, before the connection closes.
    static let lingerBytes = 1024 * 1024
    static let lingerTime = TimeAmount.seconds(1)
    /// Set while the handler is in the pipeline, for the cut (which the
    /// observer further down triggers).
    private var context: ChannelHandlerContext?

    init(
        limits: RequestTimer.Limits, maxBodyBytes: Int = APILimits.maxRequestBodyBytes,
        maxUploadBytes: Int = Int(APILimits.maxUploadBytes),
        onTimedOut: @escaping @Sendable () -> Void = {}, onBodyTooLarge: @escaping @Sendable () -> Void = {},
        onMalformed: @escaping @Sendable () -> Void = {}
    ) {
        timer = RequestTimer(limits: limits, now: .zero)
        self.maxBodyBytes = maxBodyBytes
        self.maxUploadBytes = maxUploadBytes
        self.bodyLimit = maxBodyBytes
        self.onTimedOut = onTimedOut
        self.onBodyTooLarge = onBodyTooLarge
        self.onMalformed = onMalformed
    }

    private var now: Duration { .nanoseconds((NIODeadline.now() - origin).nanoseconds) }

    /// How often the timer is consulted: a quarter of the shortest limit,
    /// between 50 ms and 1 s.
    private var interval: TimeAmount {
        let limits = timer.limits
        let shortest = min(limits.headerTimeout, limits.bodyTimeout, limits.idleTimeout) / 4
        let clamped = min(max(shortest, .milliseconds(50)), .seconds(1))
        return .nanoseconds(Int64(clamped / .nanoseconds(1)))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        check = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let (handler, context) = loopBound.value
            guard !handler.closeIfQuiescingAndIdle(context: context) else { return }
            handler.apply(handler.timer.verdict(now: handler.now), context: context)
        }
    }

    /// A graceful shutdown began (SIGTERM): a connection no request is using
    /// is closed now, and one whose request is under way once it has been
    /// answered. The HTTP handlers further down do the same, but not before
    /// a connection's first request has been read (until then the WebSocket
    /// upgrade handler holds the pipeline and drops the event), so without
    /// this a client that connected and sent nothing kept the server from
    /// stopping until the idle timeout.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            quiescing = true
            if closeIfQuiescingAndIdle(context: context) { return }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Closes the connection, once what was written before has gone out,
    /// when the server is stopping and no request is using it.
    private func closeIfQuiescingAndIdle(context: ChannelHandlerContext) -> Bool {
        guard quiescing, timer.isIdle else { return false }
        check?.cancel()
        check = nil
        quiescing = false
        closing = true
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in loopBound.value.closeQuietly(context) }
        return true
    }

    /// Closes a connection that no request is using as a client's own
    /// close would end it: the WebSocket upgrade's negotiation, still
    /// waiting for a first request, ends as for input closed (a trace line)
    /// rather than as a handler removed under it (an error line for every
    /// idle connection).
    /// (What the decoder makes of a head cut short by it is not answered.)
    private func closeQuietly(_ context: ChannelHandlerContext) {
        closing = true
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        context.close(promise: nil)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !cut else {
            dropped += unwrapInboundIn(data).readableBytes
            if dropped > Self.lingerBytes { context.close(promise: nil) }
            return
        }
        timer.read(bytes: unwrapInboundIn(data).readableBytes, now: now)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !cut else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        context.write(data, promise: promise)
    }

    /// A request's head arrived; `upload` says whether it sends an
    /// upload's bytes, whose cap is the largest upload's, `unbounded`
    /// whether its body has no cap (an import).
    func headReceived(upload: Bool, unbounded: Bool = false) {
        timer.headReceived(now: now)
        bodyBytes = 0
        bodyLimit = unbounded ? Int.max : upload ? maxUploadBytes : maxBodyBytes
        answerBegan = false
    }

    func requestEnded() { timer.requestEnded(now: now) }
    func responseBegan() { answerBegan = true }
    func responseEnded() {
        timer.responseEnded(now: now)
        if let reason = malformedAfterAnswer, let context {
            malformedAfterAnswer = nil
            // Once the end of this answer has gone past this handler (it is
            // on its way down the pipeline now).
            let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
            context.eventLoop.execute { loopBound.value.answerMalformed(reason) }
        }
    }

    /// Why the request after the one being answered cannot be read
    /// (``MalformedRequestCatcher``): its 400 follows the answer.
    private var malformedAfterAnswer: String?
    /// The server is closing the connection itself, with no answer.
    private var closing = false

    /// A request's framing cannot be read (``MalformedRequestCatcher``):
    /// answered 400 and the connection closed, at once or, when an earlier
    /// request on the connection is still being answered (they were sent
    /// together), after that answer.
    func refuseMalformed(_ reason: String) {
        guard !cut, !closing, context != nil else { return }
        onMalformed()
        guard timer.isIdle else {
            malformedAfterAnswer = reason
            return
        }
        answerMalformed(reason)
    }

    private func answerMalformed(_ reason: String) {
        guard !cut, let context else { return }
        cut = true
        check?.cancel()
        check = nil
        let answer = CannedResponse.bytes(
            status: "400 Bad Request", code: .badRequest,
            message: "The request cannot be read: \(reason). The connection is closed.")
        context.writeAndFlush(wrapOutboundOut(answer)).whenComplete { _ in context.close(promise: nil) }
    }

    /// `bytes` more of the request's body arrived. The part that passes
    /// the limit still goes on (a route reading the body then refuses it
    /// itself, quietly); nothing after it does.
    func bodyReceived(bytes: Int) {
        bodyBytes += bytes
        guard !cut, bodyBytes > bodyLimit, let context else { return }
        cut = true
        check?.cancel()
        check = nil
        onBodyTooLarge()
        // Written past this handler's own `write`, which now refuses the
        // server's answer; an answer already begun is flushed, not followed.
        let answer = answerBegan ? ByteBuffer() : CannedResponse.payloadTooLarge(limit: bodyLimit)
        context.writeAndFlush(wrapOutboundOut(answer), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: Self.lingerTime) { loopBound.value.close(promise: nil) }
    }

    /// The connection became a live-stream socket.
    func exempt() {
        timer.exempt()
        check?.cancel()
        check = nil
    }

    private func apply(_ verdict: RequestTimer.Verdict, context: ChannelHandlerContext) {
        switch verdict {
        case .keep:
            return
        case .close:
            check?.cancel()
            closeQuietly(context)
        case .timeOut:
            check?.cancel()
            onTimedOut()
            let limits = timer.limits
            let answer = CannedResponse.bytes(
                status: "408 Request Timeout", code: .requestTimeout,
                message: """
                    The request did not arrive in time: its head is due within \(limits.headerTimeout.seconds) s, \
                    and its body at \(limits.minReceiveRate) bytes a second or more after \(limits.bodyTimeout.seconds) s.
                    """)
            context.writeAndFlush(wrapOutboundOut(answer)).whenComplete { _ in context.close(promise: nil) }
        }
    }

    /// Stops timing the connection on `channel` (a WebSocket upgrade).
    static func exempt(_ channel: any Channel) {
        channel.pipeline.handler(type: SlowClientGuard.self).whenSuccess { $0.exempt() }
    }
}
