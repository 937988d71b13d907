import Foundation
import Hummingbird
import ScrollbackModels

/// The demo (`serve --demo`): the web client of `Web/` at `/`, and a route
/// that mints a short-lived token for any user name, so that a person can
/// try the chat in a browser without a sign-in. Never part of the API
/// (openapi.yaml does not list it) and off unless asked for.
struct DemoController {
    let tokens: TokenAuthority

    /// How long a demo token lasts.
    static let tokenLifetime: TimeInterval = 3600

    struct TokenRequest: Decodable {
        var user: String
    }

    struct TokenAnswer: Encodable, Sendable {
        var user: String
        var token: String
        var expiresIn: Int

        enum CodingKeys: String, CodingKey {
            case user, token
            case expiresIn = "expires_in"
        }
    }

    /// The files of the page, by the name they are served under, each
    /// made into a response body once.
    static let files: [String: (contentType: String, body: ByteBuffer)] = Dictionary(
        uniqueKeysWithValues: EmbeddedWebClient.files.map { file in
            (file.name, (contentType: contentType(of: file.name), body: ByteBuffer(string: file.contents)))
        })

    static func contentType(of name: String) -> String {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        return "application/octet-stream"
    }

    func addRoutes(to router: Router<ScrollbackRequestContext>) {
        router.get("/") { _, _ in try Self.page("index.html") }
        router.get("web/:file") { _, context in
            try Self.page(try context.parameters.require("file"))
        }
        router.post("demo/token") { request, context in
            let asked = try await RequestBody.decode(TokenRequest.self, from: request, context: context)
            guard UserID.isValid(asked.user) else {
                throw APIError(.badRequest, .invalidField, "user must be \(UserID.rule).")
            }
            let token = try await tokens.token(for: asked.user, ttl: Self.tokenLifetime)
            return JSONBody(
                TokenAnswer(user: asked.user, token: token, expiresIn: Int(Self.tokenLifetime)), status: .created)
        }
    }

    static func page(_ name: String) throws -> Response {
        guard let file = files[name] else {
            throw APIError(.notFound, .notFound, "No file \(name) in the web client.")
        }
        return Response(
            status: .ok,
            headers: [.contentType: file.contentType, .cacheControl: "no-cache"],
            body: .init(byteBuffer: file.body))
    }
}
