import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

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
    /// The cap of an upload's bytes.
    var maxUploadBytes = Int(APILimits.maxUploadBytes)
    let gate: ConnectionGate
    /// Called for each connection refused over the cap.
    let onRefused: @Sendable () -> Void
    /// Called for each request answered 408 and cut.
    var onTimedOut: @Sendable () -> Void = {}
    /// Called for each request cut for a body over the limit.
    var onBodyTooLarge: @Sendable () -> Void = {}
    /// Called for each request whose framing could not be read (400).
    var onMalformed: @Sendable () -> Void = {}

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
                    limits: limits.timer, maxBodyBytes: limits.maxBodyBytes, maxUploadBytes: maxUploadBytes,
                    onTimedOut: onTimedOut,
                    onBodyTooLarge: onBodyTooLarge, onMalformed: onMalformed),
                name: SlowClientGuard.name)
        }.flatMap {
            base.setup(channel: channel, logger: logger)
        }.flatMapThrowing { value in
            try MalformedRequestCatcher.add(to: channel)
            return Value(channel: channel, base: value)
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard let inner = value.base else {
            try? await value.channel.closeFuture.get()
            return
        }
        await base.handle(value: inner, logger: logger)
    }
}
