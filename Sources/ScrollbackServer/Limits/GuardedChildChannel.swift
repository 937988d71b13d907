import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

/// The server's child channel with the connection cap and the slow-client
/// guard in front of it: a connection over the cap gets a 503 and is
/// closed; any other gets a ``SlowClientGuard`` first in its pipeline, and a
/// smaller first receive buffer (``receiveBuffer``).
struct GuardedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        /// Nil for a refused connection.
        let base: Base.Value?
    }

    let base: Base
    let limits: ConnectionLimits
    /// The cap of an upload's bytes.
    var maxUploadBytes = Int(APILimits.maxUploadBytes)
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
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: Self.receiveBuffer)
            try channel.pipeline.syncOperations.addHandler(
                SlowClientGuard(
                    limits: limits.timer, maxBodyBytes: limits.maxBodyBytes, maxUploadBytes: maxUploadBytes,
                    onTimedOut: onTimedOut,
                    onBodyTooLarge: onBodyTooLarge),
                name: SlowClientGuard.name)
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }.map { Value(channel: channel, base: $0) }
    }

    /// Each connection keeps its receive buffer for as long as it is open
    /// (swift-nio pools it for the next read), at the size the buffer last
    /// grew to. Requests and live-stream frames are mostly well under 1 KiB,
    /// so it starts there rather than at swift-nio's 2 KiB, and doubles
    /// after each read that fills it (up to 64 KiB, as swift-nio's): an idle
    /// socket keeps 1 KiB less (BENCHMARKS.md, "What limits memory per idle
    /// socket").
    static var receiveBuffer: AdaptiveRecvByteBufferAllocator {
        AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 1024, maximum: 65536)
    }

    func handle(value: Value, logger: Logger) async {
        guard let inner = value.base else {
            try? await value.channel.closeFuture.get()
            return
        }
        await base.handle(value: inner, logger: logger)
    }
}
