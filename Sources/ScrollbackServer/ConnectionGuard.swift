import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

/// What one process accepts from its clients at the connection level (the
/// README's configuration table lists the variables).
public struct ConnectionLimits: Sendable, Equatable {
    /// `SCROLLBACK_MAX_CONNECTIONS`: open HTTP connections, live-stream
    /// sockets included; one more is answered 503 with `Retry-After` and
    /// closed.
    public var maxConnections: Int
    /// `SCROLLBACK_HEADER_TIMEOUT`, `SCROLLBACK_BODY_TIMEOUT`,
    /// `SCROLLBACK_MIN_RECEIVE_RATE` (bytes per second) and
    /// `SCROLLBACK_IDLE_TIMEOUT`: the rule of ``RequestTimer``.
    public var headerTimeout: Duration = .seconds(10)
    public var bodyTimeout: Duration = .seconds(10)
    public var minReceiveRate = 1_024
    public var idleTimeout: Duration = .seconds(60)
    /// `SCROLLBACK_MAX_BODY_BYTES`: the largest request body, on every
    /// route. A larger one is answered 413 (or its connection closed when
    /// the answer has begun), never read to its end.
    public var maxBodyBytes = APILimits.maxRequestBodyBytes

    var timer: RequestTimer.Limits {
        RequestTimer.Limits(
            headerTimeout: headerTimeout, bodyTimeout: bodyTimeout, minReceiveRate: minReceiveRate, idleTimeout: idleTimeout)
    }

    public init(maxConnections: Int = ConnectionLimits.defaultMaxConnections()) {
        self.maxConnections = maxConnections
    }

    /// 10,000, or fewer when the process may not open that many files: its
    /// file limit less `reserved` descriptors for the database pool, the
    /// change feed, logs and the embedded cluster's pipes.
    public static func defaultMaxConnections(reserved: Int = 256) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return 10_000 }
        return max(16, min(10_000, Int(clamping: limit.rlim_cur) - reserved))
    }

    /// Raises the process's soft limit of open files to its hard limit (at
    /// most 1,048,576), so the connection cap, not the file limit, is what
    /// refuses a client.
    public static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = min(limit.rlim_max, 1 << 20)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = wanted
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// Counts open connections against the cap.
final class ConnectionGate: Sendable {
    private let limit: Int
    private let open = NIOLockedValueBox(0)

    init(limit: Int) {
        self.limit = limit
    }

    func enter() -> Bool {
        open.withLockedValue { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func leave() {
        open.withLockedValue { $0 -= 1 }
    }
}

/// The server's child channel with the connection cap and the slow-client
/// guard in front of it: a connection over the cap gets a 503 and is
/// closed; any other gets a ``SlowClientGuard`` first in its pipeline.
struct GuardedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        /// Nil for a refused connection.
        let base: Base.Value?
    }

    let base: Base
    let limits: ConnectionLimits
    let gate: ConnectionGate
    /// Called for each connection refused over the cap.
    let onRefused: @Sendable () -> Void
    /// Called for each request answered 408 and cut.
    var onTimedOut: @Sendable () -> Void = {}
    /// Called for each request cut for a body over the limit.
    var onBodyTooLarge: @Sendable () -> Void = {}

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard gate.enter() else {
            onRefused()
            return channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(RefusingHandler())
                return Value(channel: channel, base: nil)
            }
        }
        channel.closeFuture.whenComplete { [gate] _ in gate.leave() }
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(
                SlowClientGuard(
                    limits: limits.timer, maxBodyBytes: limits.maxBodyBytes, onTimedOut: onTimedOut,
                    onBodyTooLarge: onBodyTooLarge),
                name: SlowClientGuard.name)
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }.map { Value(channel: channel, base: $0) }
    }

    func handle(value: Value, logger: Logger) async {
        guard let inner = value.base else {
            try? await value.channel.closeFuture.get()
            return
        }
        await base.handle(value: inner, logger: logger)
    }
}

/// The answers the connection layer writes itself, before or instead of
/// the HTTP pipeline: whole HTTP/1.1 responses with a JSON error body.
enum CannedResponse {
    static func bytes(status: String, code: APIErrorCode, message: String, extraHeaders: String = "") -> ByteBuffer {
        let body = (try? ScrollbackJSON.encoder().encode(APIErrorBody(code: code, message: message))) ?? Data()
        var head = "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        head += "Connection: close\r\n\(extraHeaders)\r\n"
        var buffer = ByteBuffer(string: head)
        buffer.writeBytes(body)
        return buffer
    }

    static func payloadTooLarge(limit: Int) -> ByteBuffer {
        let error = APIError.payloadTooLarge(limit: limit)
        return bytes(status: "413 Content Too Large", code: error.code, message: error.message)
    }

    static let overCapacity = bytes(
        status: "503 Service Unavailable", code: .serviceUnavailable,
        message: "The server has as many connections open as it takes; retry after a moment.",
        extraHeaders: "Retry-After: 1\r\n")
}

/// A connection over the cap: waits for the request's head (an answer
/// before it confuses some clients), answers 503, and closes.
final class RefusingHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var seen = ByteBuffer()
    private var answered = false

    func handlerAdded(context: ChannelHandlerContext) {
        // A client that sends nothing is not waited for long.
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .seconds(2)) {
            let (handler, context) = loopBound.value
            handler.answer(context: context)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !answered else { return }
        var buffer = unwrapInboundIn(data)
        seen.writeBuffer(&buffer)
        if seen.readableBytesView.firstRange(of: Array("\r\n\r\n".utf8)) != nil || seen.readableBytes > 16 * 1024 {
            answer(context: context)
        }
    }

    private func answer(context: ChannelHandlerContext) {
        guard !answered, context.channel.isActive else { return }
        answered = true
        context.writeAndFlush(wrapOutboundOut(CannedResponse.overCapacity)).whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

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
    private let onBodyTooLarge: @Sendable () -> Void
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
        onTimedOut: @escaping @Sendable () -> Void = {}, onBodyTooLarge: @escaping @Sendable () -> Void = {}
    ) {
        timer = RequestTimer(limits: limits, now: .zero)
        self.maxBodyBytes = maxBodyBytes
        self.onTimedOut = onTimedOut
        self.onBodyTooLarge = onBodyTooLarge
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
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in context.close(promise: nil) }
        return true
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

    func headReceived() {
        timer.headReceived(now: now)
        bodyBytes = 0
        answerBegan = false
    }

    func requestEnded() { timer.requestEnded(now: now) }
    func responseBegan() { answerBegan = true }
    func responseEnded() { timer.responseEnded(now: now) }

    /// `bytes` more of the request's body arrived. The part that passes
    /// the limit still goes on (a route reading the body then refuses it
    /// itself, quietly); nothing after it does.
    func bodyReceived(bytes: Int) {
        bodyBytes += bytes
        guard !cut, bodyBytes > maxBodyBytes, let context else { return }
        cut = true
        check?.cancel()
        check = nil
        onBodyTooLarge()
        // Written past this handler's own `write`, which now refuses the
        // server's answer; an answer already begun is flushed, not followed.
        let answer = answerBegan ? ByteBuffer() : CannedResponse.payloadTooLarge(limit: maxBodyBytes)
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
            context.close(promise: nil)
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

/// Tells the connection's ``SlowClientGuard`` where each request's head and
/// end pass, how much body comes between, and where each answer begins and
/// ends. One per connection, among the HTTP/1 channel's additional
/// handlers.
final class RequestBoundaryObserver: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var guarding: SlowClientGuard?

    func handlerAdded(context: ChannelHandlerContext) {
        guarding = try? context.pipeline.syncOperations.handler(type: SlowClientGuard.self)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Cut for a body over the limit: nothing more reaches the server
        // (the decoder may still hold parts of what was read).
        guard guarding?.cut != true else { return }
        switch unwrapInboundIn(data) {
        case .head: guarding?.headReceived()
        case .end: guarding?.requestEnded()
        case .body(let part): guarding?.bodyReceived(bytes: part.readableBytes)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head: guarding?.responseBegan()
        case .end: guarding?.responseEnded()
        case .body: break
        }
        context.write(data, promise: promise)
    }
}

extension Duration {
    /// Whole seconds, or with a fraction when there is one (`0.5`).
    var seconds: String {
        let value = self / .seconds(1)
        return value == value.rounded() ? "\(Int(value))" : "\(value)"
    }
}
