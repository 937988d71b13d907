import NIOCore
import NIOHTTP1

/// Right after the HTTP/1 decoder of every connection: a request whose
/// framing cannot be read (two different `Content-Length`s, a
/// `Content-Length` beside `Transfer-Encoding`, a length that is not a
/// number, a first line that is not a request line) is answered 400 at
/// once and the connection closed, as RFC 9112 section 6.3 asks: where
/// its body ends cannot be told, so nothing after it can be read. Without
/// it, the decoder's error reached the WebSocket upgrade's negotiation,
/// which logged it and left the connection open until the slow-client
/// guard's 408.
///
/// Passes everything else on as it is (after a WebSocket upgrade, the
/// socket's bytes).
final class MalformedRequestCatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parse = error as? HTTPParserError,
            let guarding = try? context.pipeline.syncOperations.handler(type: SlowClientGuard.self)
        else {
            context.fireErrorCaught(error)
            return
        }
        guarding.refuseMalformed(Self.reason(parse))
        // As for a client that closed its side: the WebSocket upgrade's
        // negotiation, still waiting for a first request, ends quietly
        // (rather than logging the connection's close as an error).
        context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
    }

    /// What the client should fix.
    static func reason(_ error: HTTPParserError) -> String {
        switch error {
        case .unexpectedContentLength:
            "`Content-Length` is given twice with different values, or beside `Transfer-Encoding`: give one of them, once"
        case .invalidContentLength:
            "`Content-Length` must be a whole number of bytes"
        case .invalidChunkSize:
            "the body's chunked coding cannot be read"
        case .invalidHeaderToken, .invalidCharactersUsed:
            "each header line must be `Name: value`, the name a token"
        case .invalidMethod, .invalidURL, .invalidVersion, .invalidConstant, .strictModeAssertion, .lfExpected:
            "the first line must be a request line (`METHOD /path HTTP/1.1`), each line ending in CRLF"
        case .headerOverflow:
            "the head is over the size the server takes"
        default:
            "the head cannot be read as HTTP/1.1: a request line, header lines of `Name: value`, and one framing "
                + "of the body (`Content-Length` or `Transfer-Encoding: chunked`, not both)"
        }
    }

    /// Puts a catcher after `channel`'s HTTP/1 request decoder; nothing when
    /// the pipeline has none.
    static func add(to channel: any Channel) throws {
        let pipeline = channel.pipeline.syncOperations
        guard let decoder = try? pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self) else { return }
        try pipeline.addHandler(MalformedRequestCatcher(), position: .after(decoder))
    }
}
