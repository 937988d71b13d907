import Foundation
import NIOCore
import ScrollbackModels
@testable import ScrollbackServer
import Testing

/// `serve --demo`: the web client at `/` and a token route for any user
/// name, only when asked for, and only on loopback unless allowed.
@Suite struct DemoTests {
    static func demo(_ configuration: inout ScrollbackConfiguration) {
        configuration.demo = true
    }

    struct TokenAnswer: Decodable {
        var user: String
        var token: String
        var expires_in: Int
    }

    @Test func withoutTheDemoThereIsNoPageAndNoTokenRoute() async throws {
        try await TestServer.run { server in
            #expect(try await server.request(.get, "/").status == .notFound)
            #expect(try await server.request(.get, "/web/app.js").status == .notFound)
            let minted = try await server.request(.post, "/demo/token", rawBody: #"{"user": "alice"}"#)
            #expect(minted.status == .notFound || minted.status == .methodNotAllowed, "\(minted.status)")
        }
    }

    @Test func theDemoServesThePageAndItsFilesFromTheBinary() async throws {
        try await TestServer.run(configure: Self.demo) { server in
            let page = try await server.request(.get, "/")
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            #expect(page.text.contains("<title>Scrollback demo</title>") && page.text.contains("/web/app.js"))
            for (name, type) in [("app.js", "text/javascript"), ("style.css", "text/css")] {
                let file = try await server.request(.get, "/web/\(name)")
                #expect(file.status == .ok, "\(name)")
                #expect(file.headers[.contentType] == "\(type); charset=utf-8")
                #expect(file.text == String(buffer: try #require(DemoController.files[name]).body))
            }
            let missing = try await server.request(.get, "/web/nothing.js")
            #expect(missing.status == .notFound)
            #expect(try missing.error().error.code == .notFound)
        }
    }

    /// The token is a real one for that user (the API accepts it), lasts an
    /// hour, and a name that is not a user id is refused with what to fix.
    @Test func theTokenRouteMintsATokenForAValidNameOnly() async throws {
        try await TestServer.run(configure: Self.demo) { server in
            let minted = try await server.request(.post, "/demo/token", rawBody: #"{"user": "alice"}"#)
            #expect(minted.status == .created, "\(minted.text)")
            let answer = try minted.decode(TokenAnswer.self)
            #expect(answer.user == "alice" && answer.expires_in == 3600)
            let list = try await server.client.execute(
                uri: "/v1/conversations", method: .get, headers: [.authorization: "Bearer \(answer.token)"]
            ) { $0.status }
            #expect(list == .ok)
            for body in [#"{"user": "not/a name!"}"#, #"{"user": ""}"#, #"{}"#, "nope"] {
                let refused = try await server.request(.post, "/demo/token", rawBody: body)
                #expect(refused.status == .badRequest, "\(body): \(refused.status)")
                #expect([.invalidField, .invalidJSON].contains(try refused.error().error.code), "\(body)")
            }
        }
    }

    /// The demo's page may open the live stream from its own origin; any
    /// other origin still needs `SCROLLBACK_ALLOWED_ORIGINS`, and without
    /// the demo the server's own origin is no exception.
    @Test func theDemoPageMayOpenTheStreamFromItsOwnOriginOnly() throws {
        var origins = AllowedOrigins([])
        #expect(!origins.allows(["http://127.0.0.1:8080"], host: "127.0.0.1:8080"))
        origins.allowsSameOrigin = true
        #expect(origins.allows(["http://127.0.0.1:8080"], host: "127.0.0.1:8080"))
        #expect(origins.allows(["http://LOCALHOST:8080/"], host: "localhost:8080"))
        #expect(!origins.allows(["http://127.0.0.1:8081"], host: "127.0.0.1:8080"))
        #expect(!origins.allows(["https://evil.example"], host: "127.0.0.1:8080"))
        #expect(!origins.allows(["http://127.0.0.1:8080"], host: nil))
        #expect(origins.allows([], host: "127.0.0.1:8080"), "a native client sends no Origin")
        var configuration = ScrollbackConfiguration()
        #expect(!configuration.streamOrigins.allowsSameOrigin)
        configuration.demo = true
        #expect(configuration.streamOrigins.allowsSameOrigin)
    }

    @Test func theDemoListensOnlyOnLoopbackUnlessMadePublic() throws {
        for host in ["127.0.0.1", "127.0.0.2", "::1", "localhost"] {
            #expect(try ScrollbackConfiguration(environment: ["HOST": host, "SCROLLBACK_DEMO": "1"]).demo, "\(host)")
        }
        for host in ["0.0.0.0", "192.168.1.5", "127.example.com", "::"] {
            #expect(throws: ScrollbackConfiguration.Failure.self, "\(host)") {
                try ScrollbackConfiguration(environment: ["HOST": host, "SCROLLBACK_DEMO": "1"])
            }
            let open = try ScrollbackConfiguration(
                environment: ["HOST": host, "SCROLLBACK_DEMO": "1", "SCROLLBACK_DEMO_PUBLIC": "1"])
            #expect(open.demo)
        }
        #expect(try !ScrollbackConfiguration(environment: ["HOST": "0.0.0.0"]).demo)
        #expect(throws: ScrollbackConfiguration.Failure.self) {
            try ScrollbackConfiguration(environment: ["SCROLLBACK_DEMO": "maybe"])
        }
    }
}
