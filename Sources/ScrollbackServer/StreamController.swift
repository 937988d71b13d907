import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// The request context of WebSocket upgrades: it keeps the channel, so a
/// socket that stops reading can be closed from outside its writer.
public struct StreamRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        channel = source.channel
    }
}

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
            shouldUpgrade: { [allowedOrigins] request, _ in
                guard allowedOrigins.allows(request.headers[values: .origin]) else { return .dontUpgrade }
                return .upgrade([:])
            },
            onUpgrade: { [session] inbound, outbound, context in
                try await session.run(
                    inbound: inbound, outbound: outbound, channel: context.requestContext.channel,
                    authorization: context.request.headers[.authorization])
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

/// `SCROLLBACK_ALLOWED_ORIGINS`: the web origins whose pages may open the
/// live stream; `*` allows every origin. A browser always sends the page's
/// origin (`https://...`, `http://...` or `null`) and a page cannot change
/// it, so only those are checked: a request without `Origin`, or whose
/// `Origin` is a `ws://` or `wss://` address (what native WebSocket clients
/// such as swift-websocket send), is not a browser page and is allowed.
public struct AllowedOrigins: Sendable, Equatable {
    public var origins: Set<String>

    public init(_ origins: some Sequence<String>) {
        self.origins = Set(origins.map { Self.normalized($0) }.filter { !$0.isEmpty })
    }

    /// Parses the comma-separated list of the environment variable.
    public init(list: String) {
        self.init(list.split(separator: ",").map(String.init))
    }

    /// Whether a request with these `Origin` values may open a socket: each
    /// value must be allowed.
    public func allows(_ values: [String]) -> Bool {
        values.allSatisfy(allows)
    }

    public func allows(_ origin: String) -> Bool {
        let origin = Self.normalized(origin)
        if origin.hasPrefix("ws://") || origin.hasPrefix("wss://") { return true }
        return origins.contains("*") || origins.contains(origin)
    }

    private static func normalized(_ origin: String) -> String {
        var text = origin.trimmingCharacters(in: .whitespaces).lowercased()
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
