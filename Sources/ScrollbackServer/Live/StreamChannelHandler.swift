import HummingbirdWebSocket
import NIOCore
import NIOWebSocket
import ScrollbackModels

/// A live-stream socket's side of its connection, on its event loop rather
/// than in tasks: an idle socket holds this handler and an entry in its
/// event loop's timers, and no task waits for its frames (BENCHMARKS.md,
/// "What limits memory per idle socket").
///
/// - Frames in: it puts messages together from their fragments, checks
///   them as RFC 6455 asks (a protocol error closes with 1002, a message
///   over `APILimits.maxStreamFrameBytes` with 1009, text that is not UTF-8 with 1007),
///   answers pings and the client's close, and hands each message to the
///   socket (`StreamSocket.received`), which answers them in order in a
///   task that exists only while any wait. While too many wait, it reads
///   nothing more from the connection.
/// - Pings: every `pingInterval` it sends a ping, and closes the connection
///   (1001, "ping timeout") when no frame at all came from the client in the
///   interval since the last one. Any frame counts, a pong or another, so a
///   client busy sending is never closed for a pong queued behind its data.
/// - The writer: when the connection takes bytes again after the client
///   fell behind, the socket's writer goes on (`StreamSocket.drain`).
/// - The close: once a close frame has gone out (the socket's, its own, or
///   the framework's), no other frame follows it, no ping, and the
///   connection ends when the client's close frame comes back, or after
///   `closeTimeout`.
///
/// Right after the WebSocket frame decoder: it sees every frame that comes
/// in and every frame that goes out, before the encoder. The frames the
/// framework read before it was in place go to the framework's inbound
/// stream: `install` marks where they end, and the session hands them over
/// (`takeOver`); until then it holds what comes.
final class StreamChannelHandler: ChannelDuplexHandler, RemovableChannelHandler, NIOScheduledCallbackHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let pingInterval: TimeAmount
    private let closeTimeout: TimeAmount
    private weak var socket: StreamSocket?
    /// Whether a frame came from the client since the last ping.
    private var heard = true
    /// A close frame has been written: nothing but the connection's end follows.
    private var closeSent = false
    /// The client's close frame came: nothing it sends after counts.
    private var closeReceived = false
    /// The next ping, or the end of the wait for the client's close; the
    /// handler is the callback, so it costs no allocation of its own.
    private var timer: NIOScheduledCallback?
    private var context: ChannelHandlerContext?
    /// The message being put together from its fragments.
    private var partial: (binary: Bool, data: ByteBuffer)?
    /// Frames that came before the framework's were handed over; nil once
    /// they were (`takeOver`).
    private var held: [WebSocketFrame]? = []
    /// Too many messages wait for their answer: no read until one is taken.
    private var readPaused = false
    /// A read asked for while paused, done when reading resumes.
    private var readHeld = false

    init(socket: StreamSocket?, pingInterval: TimeAmount, closeTimeout: TimeAmount = TimeAmount(closeTimeout)) {
        self.socket = socket
        self.pingInterval = pingInterval
        self.closeTimeout = closeTimeout
    }

    /// How long the client has to answer a close frame before the
    /// connection is cut (the framework's own close waits as long).
    static let closeTimeout: Duration = .seconds(5)

    /// A close frame with `code` and `reason`.
    static func closeFrame(_ code: WebSocketErrorCode, reason: String, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var data = allocator.buffer(capacity: 2 + reason.utf8.count)
        data.write(webSocketErrorCode: code)
        data.writeString(reason)
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }

    /// The data frame that follows the last frame the framework read before
    /// the handler was in place: random, so no client can send it.
    static let marker: ByteBuffer = {
        var generator = SystemRandomNumberGenerator()
        var buffer = ByteBuffer()
        for _ in 0..<4 { buffer.writeInteger(generator.next() as UInt64) }
        return buffer
    }()

    /// Puts the handler after the WebSocket frame decoder of `channel`'s
    /// pipeline, and sends `marker` on to the framework's inbound stream, on
    /// the channel's event loop. Nil (and the connection closed) without a
    /// decoder: the connection is no live stream.
    static func install(
        on channel: any Channel, for socket: StreamSocket, pingInterval: Duration
    ) -> EventLoopFuture<NIOLoopBound<StreamChannelHandler>?> {
        channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            let handler = StreamChannelHandler(socket: socket, pingInterval: TimeAmount(pingInterval))
            do {
                let decoder = try pipeline.context(handlerType: ByteToMessageHandler<WebSocketFrameDecoder>.self)
                try pipeline.addHandler(handler, position: .after(decoder.handler))
                // The framework's inbound stream takes what it read at the
                // read's end.
                let context = try pipeline.context(handler: handler)
                context.fireChannelRead(NIOAny(WebSocketFrame(fin: true, opcode: .binary, data: marker)))
                context.fireChannelReadComplete()
            } catch {
                channel.close(promise: nil)
                return nil
            }
            return NIOLoopBound(handler, eventLoop: channel.eventLoop)
        }
    }

    /// Takes over from the framework: the data frames it read before the
    /// handler was in place (`earlier`, in order, unmasked), then those held
    /// since.
    func takeOver(_ earlier: [WebSocketFrame]) {
        guard let held else { return }
        self.held = nil
        for frame in earlier + held { receive(frame) }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        schedule(in: pingInterval)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stopTimer()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        stopTimer()
        socket?.queue.finish()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        heard = true
        let frame = unwrapInboundIn(data)
        if held != nil {
            held!.append(frame)
        } else {
            receive(frame)
        }
    }

    func read(context: ChannelHandlerContext) {
        if readPaused {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// A task took a message when too many waited: reading goes on.
    func resumeReading() {
        readPaused = false
        if readHeld, let context {
            readHeld = false
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { socket?.channelWritable() }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if closeSent {
            // A pong may still answer a ping that came before the close.
            guard frame.opcode == .pong else {
                promise?.fail(ChannelError.outputClosed)
                return
            }
        } else if frame.opcode == .connectionClose {
            closing(context)
        }
        context.write(data, promise: promise)
    }

    // MARK: Frames in

    private func receive(_ frame: WebSocketFrame) {
        guard !closeReceived, let context else { return }
        switch frame.opcode {
        case .connectionClose:
            // Either the answer to a close already sent, or a close to
            // answer: the handshake is over.
            closeReceived = true
            sendClose(Self.answer(toClose: frame.unmaskedData), context: context)
            context.close(promise: nil)
        case .ping:
            guard frame.fin else { return fail(.protocolError) }
            guard !closeSent else { return }
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            guard frame.fin else { return fail(.protocolError) }
        case .text, .binary, .continuation:
            guard frame.reservedBits.isEmpty else { return fail(.protocolError) }
            take(frame.opcode, fin: frame.fin, data: frame.unmaskedData)
        default:
            fail(.protocolError)
        }
    }

    /// A data frame: a whole message, or a fragment of one.
    private func take(_ opcode: WebSocketOpcode, fin: Bool, data: ByteBuffer) {
        guard !closeSent else { return }
        switch opcode {
        case .text, .binary:
            guard partial == nil else { return fail(.protocolError) }
            if fin {
                deliver(binary: opcode == .binary, data)
            } else {
                partial = (opcode == .binary, data)
            }
        default:
            guard var message = partial else { return fail(.protocolError) }
            partial = nil
            guard message.data.readableBytes + data.readableBytes <= APILimits.maxStreamFrameBytes else {
                return fail(.messageTooLarge)
            }
            var data = data
            message.data.writeBuffer(&data)
            if fin {
                deliver(binary: message.binary, message.data)
            } else {
                partial = message
            }
        }
    }

    private func deliver(binary: Bool, _ data: ByteBuffer) {
        let message: WebSocketMessage
        if binary {
            message = .binary(data)
        } else {
            var data = data
            guard let text = try? data.readUTF8ValidatedString(length: data.readableBytes) else {
                return fail(.dataInconsistentWithMessage)
            }
            message = .text(text)
        }
        if socket?.received(message) == false { readPaused = true }
    }

    /// The client broke the protocol: a close frame with `code`, and the
    /// connection's end when its close comes back (or after `closeTimeout`).
    private func fail(_ code: WebSocketErrorCode) {
        guard let context else { return }
        partial = nil
        sendClose(code, context: context)
    }

    /// The close code that answers a client's close frame (RFC 6455 7.4):
    /// 1000 for no code or a valid one, 1002 for a code no endpoint may send
    /// or a reason that is not UTF-8.
    static func answer(toClose data: ByteBuffer) -> WebSocketErrorCode {
        var data = data
        guard data.readableBytes > 0 else { return .normalClosure }
        guard let code = data.readInteger(as: UInt16.self) else { return .protocolError }
        if data.readableBytes > 0, (try? data.readUTF8ValidatedString(length: data.readableBytes)) == nil {
            return .protocolError
        }
        switch code {
        case 1000...1003, 1007...1011, 3000...4999: return .normalClosure
        default: return .protocolError
        }
    }

    // MARK: The close and the timer

    /// Sends a close frame, unless one went out already.
    private func sendClose(_ code: WebSocketErrorCode, reason: String = "", context: ChannelHandlerContext) {
        guard !closeSent else { return }
        closing(context)
        context.writeAndFlush(
            wrapOutboundOut(Self.closeFrame(code, reason: reason, allocator: context.channel.allocator)), promise: nil)
    }

    /// A close frame goes out: the socket's queue takes nothing more, the
    /// pings stop, and the client has `closeTimeout` to answer.
    private func closing(_ context: ChannelHandlerContext) {
        closeSent = true
        socket?.queue.finish()
        stopTimer()
        schedule(in: closeTimeout)
    }

    private func stopTimer() {
        timer?.cancel()
        timer = nil
    }

    private func schedule(in delay: TimeAmount) {
        timer = try? context?.eventLoop.assumeIsolated().scheduleCallback(in: delay, handler: self)
    }

    func handleScheduledCallback(eventLoop: some EventLoop) {
        timer = nil
        guard let context, context.channel.isActive else { return }
        guard !closeSent else {
            // The client never answered the close.
            context.close(promise: nil)
            return
        }
        guard heard else {
            sendClose(.goingAway, reason: "ping timeout", context: context)
            context.close(promise: nil)
            return
        }
        heard = false
        context.writeAndFlush(
            wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))),
            promise: nil)
        schedule(in: pingInterval)
    }
}
