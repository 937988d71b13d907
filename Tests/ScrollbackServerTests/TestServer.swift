import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ScrollbackModels
import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// A real Scrollback HTTP server on a loopback port, on a fresh schema of the
/// test database, with a client that talks to it over TCP.
struct TestServer {
    static let secret = LiveCluster.secret

    /// A server on a free loopback port, signing with `secret`.
    static var configuration: ScrollbackConfiguration { LiveCluster.configuration }

    let client: any TestClientProtocol
    let store: ScrollbackStore
    let tokens: TokenAuthority

    /// Runs `test` against a server of its own; `log`, when given, receives
    /// what the server logs (from `.info` up).
    static func run(
        configure: (inout ScrollbackConfiguration) -> Void = { _ in }, log: CapturedLog? = nil,
        _ test: @escaping @Sendable (TestServer) async throws -> Void
    ) async throws {
        var configuration = configuration
        configure(&configuration)
        try await TestDatabase.withStore(maximumConnections: 10) { [configuration] store in
            var logger = Logger(label: "scrollback.tests.server") { label in
                if let log { return log.handler() }
                return StreamLogHandler.standardError(label: label)
            }
            logger.logLevel = log == nil ? .warning : .info
            let app = try await buildApplication(
                configuration: configuration, store: store, logger: logger, migrateOnStart: false)
            let tokens = try await TokenAuthority(secret: secret)
            try await app.test(.live) { client in
                try await test(TestServer(client: client, store: store, tokens: tokens))
            }
        }
    }

    /// What `/readyz` reported, once it said ready or after `limit`: the
    /// change feed's listener connects after the server starts, and later
    /// still on a busy machine.
    static func readiness(
        within limit: Duration = .seconds(30), _ probe: () async throws -> (HTTPResponse.Status, Data)
    ) async throws -> [String: String] {
        let deadline = ContinuousClock.now + limit
        while true {
            let (status, body) = try await probe()
            let report = try JSONDecoder().decode([String: String].self, from: body)
            if status == .ok || ContinuousClock.now > deadline { return report }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// `/readyz` once the server is ready (see `readiness(within:_:)`).
    func readiness() async throws -> [String: String] {
        try await Self.readiness {
            let reply = try await request(.get, "/readyz")
            return (reply.status, reply.body)
        }
    }

    static let ready = ["status": "ready", "database": "up", "live_delivery": "listening"]

    func token(_ user: String) async throws -> String {
        try await tokens.token(for: user, ttl: 600)
    }

    struct Reply {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: Data

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try ScrollbackJSON.decoder().decode(T.self, from: body)
        }

        /// The error body; fails the test when the body is not the error shape.
        func error() throws -> APIErrorBody {
            try decode(APIErrorBody.self)
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Sends a request as `user` (nil: no Authorization header).
    func request(
        _ method: HTTPRequest.Method, _ path: String, as user: String? = nil, rawBody: String? = nil,
        headers extra: HTTPFields = [:]
    ) async throws -> Reply {
        var headers = extra
        if let user { headers[.authorization] = "Bearer \(try await token(user))" }
        if rawBody != nil { headers[.contentType] = "application/json" }
        return try await client.execute(
            uri: path, method: method, headers: headers, body: rawBody.map { ByteBuffer(string: $0) }
        ) { response in
            Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
        }
    }

    /// Sends `bytes` as the body, as is, with `headers`.
    func request(
        _ method: HTTPRequest.Method, _ path: String, as user: String? = nil, bytes: [UInt8],
        headers extra: HTTPFields = [:]
    ) async throws -> Reply {
        var headers = extra
        if let user { headers[.authorization] = "Bearer \(try await token(user))" }
        return try await client.execute(uri: path, method: method, headers: headers, body: ByteBuffer(bytes: bytes)) {
            response in
            Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
        }
    }

    func request(
        _ method: HTTPRequest.Method, _ path: String, as user: String? = nil, json: some Encodable
    ) async throws -> Reply {
        let body = String(decoding: try ScrollbackJSON.encoder().encode(json), as: UTF8.self)
        return try await request(method, path, as: user, rawBody: body)
    }

    /// Creates a conversation over HTTP and returns it.
    func createConversation(as user: String, members: [String] = [], title: String? = nil) async throws -> Conversation {
        let reply = try await request(
            .post, "/v1/conversations", as: user, json: CreateConversationRequest(title: title, members: members))
        #expect(reply.status == .created, "\(reply.text)")
        return try reply.decode(Conversation.self)
    }

    func send(_ body: String, to id: UUID, as user: String, clientID: String? = nil) async throws -> Reply {
        try await request(
            .post, "/v1/conversations/\(id)/messages", as: user, json: SendMessageRequest(body: body, clientId: clientID))
    }
}
