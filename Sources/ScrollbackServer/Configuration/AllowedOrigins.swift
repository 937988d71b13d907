import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
import ScrollbackStore

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
