import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

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
