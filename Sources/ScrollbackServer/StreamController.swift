import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// The request context of WebSocket upgrades: it keeps the channel, so a
/// socket that stops reading can be closed from outside its writer.
///
/// hummingbird-websocket hands the socket handler over by storing it, with a
/// copy of this context, in the context's own `webSocket` reference: a
/// reference cycle that would keep every upgraded connection's context (and
/// with it the channel, its pipeline and its buffers) alive forever. So the
/// reference lives in `upgrade`, which lets go of it once the socket runs
/// (`upgradeStarted()`), and the channel is held weakly: the event loop owns
/// it while it is open.
public struct StreamRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    let upgrade: StreamUpgrade

    public var webSocket: WebSocketHandlerReference<Self> { upgrade.reference ?? .init() }
    /// The connection, while it is open.
    var channel: (any Channel)? { upgrade.channel }

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        upgrade = StreamUpgrade(channel: source.channel)
    }

    /// The framework has read the handler: breaks the cycle.
    func upgradeStarted() { upgrade.release() }
}

/// The part of `StreamRequestContext` that its copies share.
final class StreamUpgrade: Sendable {
    private struct State: Sendable {
        var reference: WebSocketHandlerReference<StreamRequestContext>?
        weak var channel: (any Channel)?
    }

    private let state: NIOLockedValueBox<State>

    init(channel: any Channel) {
        state = NIOLockedValueBox(State(reference: .init(), channel: channel))
    }

    var reference: WebSocketHandlerReference<StreamRequestContext>? { state.withLockedValue { $0.reference } }
    var channel: (any Channel)? { state.withLockedValue { $0.channel } }

    func release() { state.withLockedValue { $0.reference = nil } }
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
            shouldUpgrade: { [allowedOrigins] request, context in
                guard allowedOrigins.allows(request.headers[values: .origin], host: request.head.authority)
                else { return .dontUpgrade }
                // A socket has pings and its own deadlines, not a request's.
                if let channel = context.channel { SlowClientGuard.exempt(channel) }
                return .upgrade([:])
            },
            onUpgrade: { [session] inbound, outbound, context in
                context.requestContext.upgradeStarted()
                guard let channel = context.requestContext.channel else { return }  // already gone
                try await session.run(
                    inbound: inbound, outbound: outbound, channel: channel,
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
    /// Whether a page served by this server itself (its `Origin` names the
    /// `Host` the request was sent to) may open a socket: the demo's page.
    public var allowsSameOrigin = false

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

    /// As `allows(_:)`, and a page of this server (an `Origin` of `host`)
    /// when `allowsSameOrigin`.
    public func allows(_ values: [String], host: String?) -> Bool {
        values.allSatisfy { origin in
            if allowsSameOrigin, let host, !host.isEmpty {
                let origin = Self.normalized(origin)
                let host = host.lowercased()
                if origin == "http://" + host || origin == "https://" + host { return true }
            }
            return allows(origin)
        }
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
