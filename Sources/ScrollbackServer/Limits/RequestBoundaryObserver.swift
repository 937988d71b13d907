import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

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
        case .head(let head):
            guarding?.headReceived(
                upload: UploadBodies.allows(head.method, head.path ?? ""),
                unbounded: UploadBodies.isImport(head.method, head.path ?? ""))
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
