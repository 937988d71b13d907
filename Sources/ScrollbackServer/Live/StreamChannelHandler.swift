import NIOCore
import NIOWebSocket

/// What a live-stream socket needs from its connection besides its frames,
/// on its event loop rather than in tasks: an idle socket holds this handler
/// and an entry in its event loop's timers instead of tasks and the memory
/// their stacks keep (BENCHMARKS.md, "What limits memory per idle socket").
///
/// - Pings: every `pingInterval` it sends a ping, and closes the connection
///   (1001, "ping timeout") when no frame at all came from the client in the
///   interval since the last one. Any frame counts, a pong or another, so a
///   client busy sending is never closed for a pong queued behind its data.
/// - The writer: when the connection takes bytes again after the client
///   fell behind, the socket's writer goes on (`StreamSocket.drain`).
/// - The close: once a close frame has gone out (from the socket's queue or
///   from the WebSocket handler answering the client's), no data frame
///   follows it, and no ping: the writer writes to the channel directly, so
///   the WebSocket handler's own writer, finished by then, would not stop it.
///
/// Right after the WebSocket frame decoder: it sees every frame that comes
/// in and every frame that goes out, before the encoder.
final class StreamChannelHandler: ChannelDuplexHandler, RemovableChannelHandler, NIOScheduledCallbackHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let pingInterval: TimeAmount
    private weak var socket: StreamSocket?
    /// Whether a frame came from the client since the last ping.
    private var heard = true
    /// A close frame has been written: nothing but the connection's end follows.
    private var closeSent = false
    /// The next ping; the handler is the callback, so it costs no
    /// allocation of its own.
    private var timer: NIOScheduledCallback?
    private var context: ChannelHandlerContext?

    init(socket: StreamSocket?, pingInterval: TimeAmount) {
        self.socket = socket
        self.pingInterval = pingInterval
    }

    /// Puts the handler after the WebSocket frame decoder of `channel`'s
    /// pipeline (on its event loop). Without one the connection is no live
    /// stream: it is closed.
    static func install(on channel: any Channel, for socket: StreamSocket, pingInterval: Duration) {
        channel.eventLoop.execute {
            let pipeline = channel.pipeline.syncOperations
            guard let decoder = try? pipeline.context(handlerType: ByteToMessageHandler<WebSocketFrameDecoder>.self)
            else {
                channel.close(promise: nil)
                return
            }
            let handler = StreamChannelHandler(socket: socket, pingInterval: TimeAmount(pingInterval))
            do {
                try pipeline.addHandler(handler, position: .after(decoder.handler))
            } catch {
                channel.close(promise: nil)
            }
        }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        schedulePing(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        heard = true
        context.fireChannelRead(data)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { socket?.channelWritable() }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = unwrapOutboundIn(data)
        if frame.opcode == .connectionClose {
            closeSent = true
            stop()
            socket?.queue.finish()
        } else if closeSent, frame.opcode != .pong {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        context.write(data, promise: promise)
    }

    private func stop() {
        timer?.cancel()
        timer = nil
    }

    private func schedulePing(_ context: ChannelHandlerContext) {
        timer = try? context.eventLoop.assumeIsolated().scheduleCallback(in: pingInterval, handler: self)
    }

    func handleScheduledCallback(eventLoop: some EventLoop) {
        timer = nil
        guard let context, context.channel.isActive, !closeSent else { return }
        guard heard else {
            var reason = context.channel.allocator.buffer(capacity: 14)
            reason.write(webSocketErrorCode: .goingAway)
            reason.writeString("ping timeout")
            closeSent = true
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)), promise: nil)
            context.close(promise: nil)
            return
        }
        heard = false
        context.writeAndFlush(
            wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))),
            promise: nil)
        schedulePing(context)
    }
}
