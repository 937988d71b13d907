import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import ServiceLifecycle
import Testing

extension LiveCluster {
    /// What an instance answered a request.
    struct HTTPReply {
        var status: Int
        var headers: HTTPHeaders
        var body: Data

        func decode<T: Decodable>(_ type: T.Type) throws -> T { try ScrollbackJSON.decoder().decode(T.self, from: body) }
        var code: APIErrorCode? { try? decode(APIErrorBody.self).error.code }
    }

    /// A request as `user` to instance `index`.
    func request(
        _ method: HTTPMethod, _ path: String, as user: String, body: String? = nil, on index: Int = 0
    ) async throws -> HTTPReply {
        try await request(method, path, token: try await token(user), body: body, on: index)
    }

    /// A request with bearer `token` (and `headers`) to instance `index`.
    func request(
        _ method: HTTPMethod, _ path: String, token: String, headers: [(String, String)] = [], body: String? = nil,
        on index: Int = 0
    ) async throws -> HTTPReply {
        var request = HTTPClientRequest(url: instances[index].baseURL + path)
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let start = ContinuousClock.now
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
            let bytes = try await response.body.collect(upTo: 1 << 20)
            return HTTPReply(status: Int(response.status.code), headers: response.headers, body: Data(buffer: bytes))
        } catch {
            throw RequestFailure(request: "\(method) \(path) on instance \(index)", after: .now - start, error: error)
        }
    }

    /// A request that got no answer: which one, and after how long (a test
    /// that fails on it says what hung, not only that something did).
    struct RequestFailure: Error, CustomStringConvertible {
        var request: String
        var after: Duration
        var error: any Error

        var description: String { "\(request): \(error) after \(after)" }
    }

    /// A socket of `user` on instance `index`, authenticated by header.
    func connect(_ user: String, to index: Int = 0, paused: Bool = false) async throws -> StreamClient {
        let client = StreamClient(port: instances[index].port, token: try await token(user), paused: paused)
        if !paused { try await client.waitUntilConnected() }
        return client
    }

    /// Subscribes and waits for `subscribed`, returning it.
    @discardableResult
    func subscribe(_ client: StreamClient, to id: UUID, after: Int64? = nil, presence: Bool = false) async throws
        -> (lastSeq: Int64, version: Int64)
    {
        try client.send(.subscribe(conversationId: id, afterSeq: after, presence: presence))
        let frame = try await client.next { if case .subscribed = $0 { true } else { $0.isError } }
        guard case .subscribed(_, let lastSeq, let version) = frame else {
            Issue.record("expected subscribed, got \(frame)")
            throw StreamClientError.noFrame
        }
        return (lastSeq, version)
    }
}

extension ServerFrame {
    var isError: Bool {
        if case .error = self { true } else { false }
    }

    /// The message of a `message` frame.
    var newMessage: Message? {
        if case .message(let message) = self { message } else { nil }
    }
}

extension StreamClient {
    /// The next `count` new messages, skipping other frames; fails when one
    /// is missing after `timeout`.
    func messages(_ count: Int, timeout: Duration = .seconds(60)) async throws -> [Message] {
        var messages: [Message] = []
        let deadline = ContinuousClock.now + timeout
        while messages.count < count {
            let frame = try await next(where: { $0.newMessage != nil }, timeout: deadline - ContinuousClock.now)
            messages.append(frame.newMessage!)
        }
        return messages
    }
}
