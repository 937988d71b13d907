import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOEmbedded
@testable import ScrollbackServer
import Testing

/// hummingbird-websocket hands a socket's handler over by storing it, with a
/// copy of the request context, in that context's own `webSocket` reference:
/// a reference cycle. Every connection upgraded by `/v1/stream` used to keep
/// its context and its channel (about 4 KB, and the 64 KiB buffers of a large
/// frame) for the life of the process; the stream fuzzer saw the server grow
/// by 4.3 KB per connection.
@Suite struct StreamUpgradeTests {
    /// Weak references to what one upgrade allocated.
    final class Watched: @unchecked Sendable {  // only touched by the test's own task
        weak var upgrade: StreamUpgrade?
        weak var channel: EmbeddedChannel?
    }

    /// Routes an upgrade request the way the framework does (the route
    /// stores the handler in the context), then drops everything.
    static func routeUpgrade(thenStart start: Bool) async throws -> Watched {
        let watched = Watched()
        let channel = EmbeddedChannel()
        let router = Router(context: StreamRequestContext.self)
        router.ws("v1/stream", onUpgrade: { _, _, _ in })
        let context = StreamRequestContext(source: .init(channel: channel, logger: Logger(label: "test")))
        let request = Request(
            head: HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/v1/stream"),
            body: .init(buffer: ByteBuffer()))
        let response = try await router.buildResponder().respond(to: request, context: context)
        #expect(response.status == .ok)
        if start { context.upgradeStarted() }
        watched.upgrade = context.upgrade
        watched.channel = channel
        _ = try? channel.finish()
        return watched
    }

    @Test func anUpgradedConnectionIsFreedOnceItsSocketStarts() async throws {
        let watched = try await Self.routeUpgrade(thenStart: true)
        #expect(watched.upgrade == nil, "the context of an upgraded connection is never freed")
        #expect(watched.channel == nil, "the channel of an upgraded connection is never freed")
    }

    /// The cycle is the framework's: a context whose socket never started
    /// stays, but it does not keep its channel (and the channel's buffers).
    @Test func aContextThatNeverStartedDoesNotKeepItsChannel() async throws {
        let watched = try await Self.routeUpgrade(thenStart: false)
        #expect(watched.upgrade != nil, "the framework no longer makes the cycle: upgradeStarted() may go")
        #expect(watched.channel == nil)
    }
}
