import CoreMetrics
import HummingbirdWebSocket
import NIOCore
import NIOEmbedded
import NIOWebSocket
@testable import ScrollbackServer
import Testing

/// The socket's channel handler on a channel whose clock the test moves:
/// its pings, the close of a client that answers none, nothing but the end
/// after a close frame, and the frames that come in: messages put together
/// from their fragments and handed to the socket in order, after the
/// frames the framework read first; the protocol's errors, each with its
/// close code; and no read while too many messages wait.
@Suite struct StreamChannelHandlerTests {
    static let interval = TimeAmount.seconds(30)
    static let closeTimeout = TimeAmount.seconds(5)

    /// A channel with the handler in place and taken over, and its socket
    /// (admitted by nobody: its messages wait in it for the test to take).
    static func channel() throws -> (EmbeddedChannel, StreamSocket) {
        let (channel, socket, handler) = try heldChannel()
        handler.takeOver([])
        return (channel, socket)
    }

    /// The same before the hand-over: the handler holds what comes.
    static func heldChannel() throws -> (EmbeddedChannel, StreamSocket, StreamChannelHandler) {
        let channel = EmbeddedChannel()
        let socket = StreamSocket(
            channel: channel, counters: LiveCounters(slowConsumerCloses: Counter(label: "test")), limits: .init())
        let handler = StreamChannelHandler(socket: socket, pingInterval: interval, closeTimeout: closeTimeout)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, socket, handler)
    }

    static func text(_ string: String) -> WebSocketFrame {
        WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: string))
    }

    static func frame(_ opcode: WebSocketOpcode, _ string: String, fin: Bool = true) -> WebSocketFrame {
        WebSocketFrame(fin: fin, opcode: opcode, data: ByteBuffer(string: string))
    }

    static func close(_ code: UInt16) -> WebSocketFrame {
        var data = ByteBuffer()
        data.writeInteger(code)
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }

    /// The close code of the next frame out, which must be a close frame.
    static func closeCode(_ channel: EmbeddedChannel) throws -> WebSocketErrorCode? {
        var frame = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(frame.opcode == .connectionClose)
        return frame.data.readWebSocketErrorCode()
    }

    static func received(_ socket: StreamSocket) -> [WebSocketMessage] {
        var messages: [WebSocketMessage] = []
        while let message = socket.nextReceived() { messages.append(message) }
        return messages
    }

    /// A ping every interval while the client answers; the first interval
    /// it answers nothing in, a close frame (1001) and the connection's end.
    @Test func aClientThatAnswersIsPingedAndOneThatStopsIsClosed() throws {
        let (channel, _) = try Self.channel()
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
        #expect(try Self.closeCode(channel) == .goingAway)
        #expect(!channel.isActive, "nothing came in the interval: the connection is closed")
    }

    /// After a close frame, whoever writes it, a data frame is refused and
    /// never reaches the connection, and no ping follows; the client's
    /// close frame ends the connection at once.
    @Test func nothingButTheEndFollowsACloseFrame() throws {
        let (channel, _) = try Self.channel()
        try channel.writeOutbound(Self.text("before"))
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.data == ByteBuffer(string: "before"))
        try channel.writeOutbound(Self.close(1000))
        #expect(try channel.readOutbound(as: WebSocketFrame.self)?.opcode == .connectionClose)

        #expect(throws: ChannelError.outputClosed) { try channel.writeOutbound(Self.text("after")) }
        #expect(throws: ChannelError.outputClosed) { try channel.writeOutbound(Self.close(1000)) }
        channel.embeddedEventLoop.advanceTime(by: Self.closeTimeout - .milliseconds(1))
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        #expect(channel.isActive)
        try channel.writeInbound(Self.close(1000))
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil, "the handshake is over: no second close")
        #expect(!channel.isActive, "the client's close frame ends it")
    }

    /// A client that never answers the close is cut after the close timeout.
    @Test func aCloseTheClientNeverAnswersEndsAfterTheTimeout() throws {
        let (channel, _) = try Self.channel()
        try channel.writeOutbound(Self.close(1000))
        _ = try channel.readOutbound(as: WebSocketFrame.self)
        channel.embeddedEventLoop.advanceTime(by: Self.closeTimeout - .milliseconds(1))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    /// Fragments, with a ping between them, make one message; the ping is
    /// answered with its own data; messages reach the socket in order.
    @Test func fragmentsMakeOneMessageAndPingsAreAnswered() throws {
        let (channel, socket) = try Self.channel()
        try channel.writeInbound(Self.frame(.text, "{\"type\":", fin: false))
        try channel.writeInbound(Self.frame(.ping, "are you there"))
        try channel.writeInbound(Self.frame(.continuation, "\"pi", fin: false))
        try channel.writeInbound(Self.frame(.continuation, "ng\"}"))
        try channel.writeInbound(Self.frame(.binary, "raw"))
        let pong = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(pong.opcode == .pong && pong.data == ByteBuffer(string: "are you there"))
        #expect(Self.received(socket) == [.text("{\"type\":\"ping\"}"), .binary(ByteBuffer(string: "raw"))])
        #expect(channel.isActive)
    }

    /// The frames the framework read before the handler was in place come
    /// first, then those that came meanwhile, in order.
    @Test func theFrameworksFramesComeFirst() throws {
        let (channel, socket, handler) = try Self.heldChannel()
        try channel.writeInbound(Self.frame(.continuation, "ree\"}"))
        try channel.writeInbound(Self.text("four"))
        #expect(Self.received(socket).isEmpty, "held until the hand-over")
        handler.takeOver([Self.text("one"), Self.frame(.text, "{\"th", fin: false)])
        #expect(Self.received(socket) == [.text("one"), .text("{\"three\"}"), .text("four")])
    }

    /// Each protocol error closes with its code, and nothing after it is
    /// handed on; the client's answering close ends the connection.
    @Test(arguments: [
        ("a continuation without a start", [frame(.continuation, "x")], WebSocketErrorCode.protocolError),
        ("a new message inside a fragmented one", [frame(.text, "a", fin: false), frame(.text, "b")], .protocolError),
        ("a reserved bit", [WebSocketFrame(fin: true, rsv1: true, opcode: .text, data: ByteBuffer(string: "{}"))], .protocolError),
        ("a reserved opcode", [WebSocketFrame(fin: true, opcode: WebSocketOpcode(encodedWebSocketOpcode: 3)!, data: ByteBuffer())], .protocolError),
        ("text that is not UTF-8", [WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: [0x7B, 0xFF, 0x7D]))], .dataInconsistentWithMessage),
        ("UTF-8 cut by a fragment, never finished", [frame(.text, "é", fin: false)] + [WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: [0xC3]))], .dataInconsistentWithMessage),
        ("fragments over 64 KiB", [frame(.text, String(repeating: "x", count: 40 * 1024), fin: false), frame(.continuation, String(repeating: "x", count: 30 * 1024))], .messageTooLarge),
    ] as [(String, [WebSocketFrame], WebSocketErrorCode)])
    func aProtocolErrorClosesWithItsCode(_ name: String, _ frames: [WebSocketFrame], _ code: WebSocketErrorCode) throws {
        let (channel, socket) = try Self.channel()
        for frame in frames { try channel.writeInbound(frame) }
        try channel.writeInbound(Self.text("after"))
        #expect(try Self.closeCode(channel) == code, "\(name)")
        #expect(Self.received(socket).isEmpty, "\(name)")
        #expect(channel.isActive)
        try channel.writeInbound(Self.close(1000))
        #expect(!channel.isActive, "\(name)")
    }

    /// The client's close is answered (1000, or 1002 for a code no endpoint
    /// may send), and the connection ends; what it sent before still counts.
    @Test func theClientsCloseIsAnswered() throws {
        for (code, answer) in [(1000, WebSocketErrorCode.normalClosure), (4001, .normalClosure), (1005, .protocolError), (999, .protocolError)] {
            let (channel, socket) = try Self.channel()
            try channel.writeInbound(Self.text("last words"))
            try channel.writeInbound(Self.close(UInt16(code)))
            #expect(try Self.closeCode(channel) == answer, "close \(code)")
            #expect(!channel.isActive)
            #expect(Self.received(socket) == [.text("last words")])
        }
    }

    /// While `maxReceived` messages wait, the channel reads nothing more;
    /// taking one resumes reading.
    @Test func tooManyWaitingMessagesStopReading() throws {
        let (channel, socket) = try Self.channel()
        final class ReadCounter: ChannelOutboundHandler {
            typealias OutboundIn = Any
            var reads = 0
            func read(context: ChannelHandlerContext) {
                reads += 1
                context.read()
            }
        }
        let counter = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(counter, position: .first)
        for index in 0..<StreamSocket.maxReceived {
            channel.read()
            #expect(counter.reads == index + 1)
            try channel.writeInbound(Self.text("\(index)"))
        }
        channel.read()
        #expect(counter.reads == StreamSocket.maxReceived, "full: the read waits")
        _ = socket.nextReceived()
        channel.embeddedEventLoop.run()
        #expect(counter.reads == StreamSocket.maxReceived + 1, "one taken: the read is done")
    }
}
