import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// `GET /v1/stream`: the live stream (docs/protocol.md).
struct StreamController {
    let session: StreamSession
    let allowedOrigins: AllowedOrigins

    static let path = "v1/stream"

    /// The router that answers upgrade requests. A browser page from an
    /// origin that is not allowed never gets a socket: the upgrade is refused
    /// (the framework answers a refused upgrade with 400).
    func webSocketRouter() -> Router<StreamRequestContext> {
        let router = Router(context: StreamRequestContext.self)
        router.ws(
            RouterPath(Self.path),
            shouldUpgrade: { [allowedOrigins] request, context in
                guard allowedOrigins.allows(request.headers[values: .origin], host: request.head.authority)
                else { return .dontUpgrade }
                // A socket has pings and its own deadlines, not a request's.
                if let channel = context.channel { SlowClientGuard.exempt(channel) }
                return .upgrade([:])
            },
            onUpgrade: { [session] inbound, _, context in
                context.requestContext.upgradeStarted()
                guard let channel = context.requestContext.channel else { return }  // already gone
                await session.run(
                    inbound: inbound, channel: channel, authorization: context.request.headers[.authorization])
            })
        return router
    }

    /// The same path without an upgrade: a plain HTTP request says how to connect.
    static func addPlainRoute(to router: Router<ScrollbackRequestContext>) {
        router.get(RouterPath(path)) { _, _ -> Response in
            throw APIError(
                .upgradeRequired, .badRequest,
                "This is the live stream: connect with a WebSocket (GET with `Upgrade: websocket`).",
                headers: [.upgrade: "websocket"])
        }
    }
}
