import NIOCore
import NIOEmbedded
import NIOWebSocket
@testable import ScrollbackServer
import Testing

/// The socket's channel handler on a channel whose clock the test moves:
/// its pings, the close of a client that answers none, and nothing but the
/// end after a close frame.
@Suite struct StreamChannelHandlerTests {
    static let interval = TimeAmount.seconds(30)

    static func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(StreamChannelHandler(socket: nil, pingInterval: interval))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    static func text(_ string: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: string))
    }

    /// A ping every interval while the client answers; the first interval
    /// it answers nothing in, a close frame (1001) and the connection's end.
    @Test func aClientThatAnswersIsPingedAndOneThatStopsIsClosed() throws {
        let channel = try Self.channel()
        channel.embeddedEventLoop.advanceTime(by: Self.interval)
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .ping)
        try channel.writeInbound(WebSocketFrame(fin: true, opcode: .pong, data: ByteBuffer()))
        channel.embeddedEventLoop.advanceTime(by: Self.interval)
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .ping, "answered: pinged again")
        // Any frame counts as an answer, not only a pong.
        try channel.writeInbound(Self.text("{\"type\":\"ping\"}"))
        channel.embeddedEventLoop.advanceTime(by: Self.interval)
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .ping)
        #expect(channel.isActive)

        channel.embeddedEventLoop.advanceTime(by: Self.interval)
        var close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose)
        #expect(close.data.readWebSocketErrorCode() == .goingAway)
        #expect(!channel.isActive, "nothing came in the interval: the connection is closed")
    }

    /// After a close frame, whoever writes it, a data frame is refused and
    /// never reaches the connection, and no ping follows.
    @Test func nothingButTheEndFollowsACloseFrame() throws {
        let channel = try Self.channel()
        try channel.writeOutbound(Self.text("before"))
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.data == ByteBuffer(string: "before"))
        var reason = ByteBuffer()
        reason.write(webSocketErrorCode: .normalClosure)
        try channel.writeOutbound(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason))
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .connectionClose)

        #expect(throws: ChannelError.outputClosed) { try channel.writeOutbound(Self.text("after")) }
        channel.embeddedEventLoop.advanceTime(by: Self.interval * 3)
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        #expect(channel.isActive, "the client's close frame ends it, not a ping timeout")
    }
}
