import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import ScrollbackModels
import ScrollbackTimeline

/// How every call reaches the server: the request, the token and its
/// refresh, the answer read as its type, and the retries.
extension ScrollbackClient {
    struct Reply: Sendable {
        var status: Int
        var body: Data
    }

    func call<Value: Decodable>(
        _ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], body: (some Encodable & Sendable)? = Never?.none
    ) async throws(ScrollbackError) -> Value {
        let reply = try await exchange(method, path, query: query, body: body)
        let value: Value = try Self.decode(reply.body)
        // Every answer that names users fills the cache, whichever call read it.
        if let named = value as? any NamesUsers { profiles.learn(named.namedProfiles) }
        return value
    }

    /// One request; a non-2xx answer is thrown as its `ScrollbackError`. A
    /// 401 asks the provider for a fresh token and sends it again, once.
    func exchange(
        _ method: HTTPMethod, _ path: String, query: [(String, String?)] = [], body: (some Encodable & Sendable)? = Never?.none
    ) async throws(ScrollbackError) -> Reply {
        var url = baseURL + path
        let items = query.compactMap { name, value in value.map { "\(name)=\($0.queryEscaped)" } }
        if !items.isEmpty { url += "?" + items.joined(separator: "&") }
        var request = HTTPClientRequest(url: url)
        request.method = method
        addOnBehalfOf(to: &request.headers)
        if let body {
            let data: Data
            do {
                data = try ScrollbackJSON.encoder().encode(body)
            } catch {
                throw .invalidInput(code: .invalidJSON, message: "The request could not be encoded: \(error)")
            }
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: data))
        }
        return try await performAuthorized(request, path: path)
    }

    /// Sends `request` with a token from the provider; after a 401, once
    /// more with a fresh one (`refreshing`).
    func performAuthorized(_ request: HTTPClientRequest, path: String) async throws(ScrollbackError) -> Reply {
        var refreshing = false
        while true {
            var request = request
            let bearer: String
            do {
                bearer = try await tokens(refreshing)
            } catch {
                throw .unauthorized(message: "The token provider failed: \(error)")
            }
            request.headers.replaceOrAdd(name: "Authorization", value: "Bearer \(bearer)")
            do {
                return try await perform(request, path: path)
            } catch .unauthorized where !refreshing {
                refreshing = true
            }
        }
    }

    /// Sends a request made ready (authorization and body included) and
    /// reads its answer; a non-2xx answer is thrown as its `ScrollbackError`.
    func perform(_ request: HTTPClientRequest, path: String) async throws(ScrollbackError) -> Reply {
        let method = request.method
        let started = ContinuousClock.now
        do {
            let response = try await http.execute(request, timeout: TimeAmount(timeout))
            let bytes = try await response.body.collect(upTo: 64 << 20)
            let data = Data(bytes.readableBytesView)
            onExchange?(
                Exchange(
                    method: method.rawValue, path: path, status: Int(response.status.code),
                    retryAfter: response.headers.first(name: "Retry-After"), duration: .now - started))
            guard (200..<300).contains(Int(response.status.code)) else {
                throw ScrollbackError(
                    status: Int(response.status.code), body: data, retryAfter: response.headers.first(name: "Retry-After"))
            }
            return Reply(status: Int(response.status.code), body: data)
        } catch let error as ScrollbackError {
            throw error
        } catch {
            onExchange?(Exchange(method: method.rawValue, path: path, status: nil, retryAfter: nil, duration: .now - started))
            throw .transport(message: "\(method) \(path): \(error)")
        }
    }

    /// Runs `attempt` until it succeeds, fails for good, or the policy's
    /// attempts are spent; waits between attempts as the policy says (at
    /// least what a `Retry-After` asked for).
    func retrying<Value>(_ attempt: () async throws(ScrollbackError) -> Value) async throws(ScrollbackError) -> Value {
        var failures = 0
        while true {
            do {
                return try await attempt()
            } catch {
                failures += 1
                guard error.isRetryable, failures < retry.maxAttempts else { throw error }
                var delay = retry.delay(afterFailure: failures)
                if case .unavailable(_, let after?, _) = error { delay = max(delay, .milliseconds(Int(after * 1000))) }
                if case .rateLimited(_, let after?, _) = error { delay = max(delay, .milliseconds(Int(after * 1000))) }
                do {
                    try await waitToRetry(delay)
                } catch {
                    throw .transport(message: "Cancelled while waiting to retry.")
                }
            }
        }
    }

    static func decode<Value: Decodable>(_ data: Data) throws(ScrollbackError) -> Value {
        do {
            return try ScrollbackJSON.decoder().decode(Value.self, from: data)
        } catch {
            throw .undecodable(message: "The answer is not a \(Value.self): \(error)")
        }
    }
}

/// Bounded exponential backoff with jitter.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, the first included.
    public var maxAttempts: Int
    public var initialDelay: Duration
    public var maxDelay: Duration

    public init(maxAttempts: Int = 6, initialDelay: Duration = .milliseconds(100), maxDelay: Duration = .seconds(5)) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// The wait after the `failures`-th failure: the initial delay doubled
    /// each time up to the maximum, then a random half to all of it, so
    /// clients that failed together do not retry together.
    public func delay(afterFailure failures: Int) -> Duration {
        var random = SystemRandomNumberGenerator()
        return delay(afterFailure: failures, using: &random)
    }

    /// The same wait, its jitter drawn from `generator`.
    public func delay(afterFailure failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let doubled = initialDelay * (1 << min(max(failures - 1, 0), 20))
        let capped = min(doubled, maxDelay)
        return capped * Double.random(in: 0.5...1, using: &generator)
    }
}

extension UUID {
    var wire: String { uuidString.lowercased() }
}

extension String {
    /// As one segment of a URL's path (a user id, a device id): its UTF-8
    /// percent-encoded but for the ASCII characters a segment takes as they
    /// are (`/` is encoded), and a segment of dots alone (`.`, `..`) encoded
    /// whole, so that nothing on the way reads it as a step up. The server
    /// decodes every path parameter.
    var pathEscaped: String {
        if !isEmpty, allSatisfy({ $0 == "." }) { return String(repeating: "%2E", count: count) }
        return addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? self
    }

    /// As a query's value: its UTF-8 percent-encoded but for `A-Z a-z 0-9 - . _ ~`.
    var queryEscaped: String { addingPercentEncoding(withAllowedCharacters: .unreservedASCII) ?? self }

    /// As the value of `On-Behalf-Of`: its UTF-8 percent-encoded but for
    /// `A-Z a-z 0-9 - . _ ~ @` (a header value cannot carry every character
    /// of a user id; the server decodes it). An id of the earlier rule
    /// (`A-Z a-z 0-9 . _ @ -`) is sent as it is.
    var headerEscaped: String { addingPercentEncoding(withAllowedCharacters: .unreservedASCII.union(["@"])) ?? self }
}

extension CharacterSet {
    /// RFC 3986's unreserved characters, ASCII only (Foundation's
    /// `alphanumerics` holds every script's letters and digits).
    static let unreservedASCII = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

/// How new what a client has seen is, per conversation (its writes,
/// pages, changes and live frames), shared by the copies of a
/// `ScrollbackClient`: a `KnownVersion` each, whose `seen` pages ask for
/// as `min_version`.
/// Bounded: when full it forgets everything (a page then only loses the
/// guarantee against a cache lagging behind another instance's write).
final class KnownVersions: Sendable {
    private let versions = NIOLockedValueBox([UUID: KnownVersion]())
    private let capacity = 10_000

    func version(of id: UUID) -> Int64? {
        versions.withLockedValue { $0[id]?.seen }
    }

    /// A frame of the live stream that carries a conversation's version:
    /// a page fetched to fill a gap up to it must be at least that new.
    func saw(_ frame: ServerFrame) {
        switch frame {
        case .subscribed(let id, _, let version): saw(version, in: id)
        case .message(let message), .messageUpdated(let message), .ack(_, let message, _):
            saw(message.version, in: message.conversationId)
        default: break
        }
    }

    func saw(_ version: Int64, in id: UUID) {
        versions.withLockedValue { versions in
            if versions[id] == nil && versions.count >= capacity { versions.removeAll(keepingCapacity: true) }
            versions[id, default: KnownVersion()].saw(version)
        }
    }
}
