import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP connection to the server seen as bytes, for what an HTTP client
/// library hides: a client that sends slowly or not at all, an answer that
/// comes before the request is whole, and when the server ends the
/// connection.
final class RawConnection: Sendable {
    let channel: any Channel
    private let bytes: NIOLockedValueBox<ByteBuffer>

    private init(channel: any Channel, bytes: NIOLockedValueBox<ByteBuffer>) {
        self.channel = channel
        self.bytes = bytes
    }

    static func open(port: Int) async throws -> RawConnection {
        let bytes = NIOLockedValueBox(ByteBuffer())
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Collector(received: bytes))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawConnection(channel: channel, bytes: bytes)
    }

    /// Sends `text`; throws once the server has closed the connection.
    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    /// Sends `bytes` in one write; throws once the server has closed the connection.
    func send(bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes))
    }

    /// Everything the server sent so far.
    var received: ByteBuffer { bytes.withLockedValue { $0 } }
    var receivedText: String { String(buffer: received) }

    /// Whether the server ended the connection within `limit`.
    func closed(within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while channel.isActive {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Waits until what the server sent contains `text`, for at most `limit`.
    func receive(_ text: String, within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while !receivedText.contains(text) {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    func close() async {
        try? await channel.close()
    }

    private final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let received: NIOLockedValueBox<ByteBuffer>

        init(received: NIOLockedValueBox<ByteBuffer>) {
            self.received = received
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            _ = received.withLockedValue { $0.writeBuffer(&buffer) }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            // A reset from the server ends the connection like a close.
            context.close(promise: nil)
        }
    }
}
