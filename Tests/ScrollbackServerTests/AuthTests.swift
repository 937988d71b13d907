import Foundation
import HTTPTypes
import JWTKit
import ScrollbackModels
@testable import ScrollbackServer
import Testing

@Suite struct AuthTests {
    struct Claims: JWTPayload {
        var sub: SubjectClaim?
        var exp: ExpirationClaim?
        var nbf: NotBeforeClaim? = nil
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func base64url(_ text: String) -> String {
        Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func sign(_ claims: Claims, secret: String = TestServer.secret, digest: DigestAlgorithm = .sha256) async throws
        -> String
    {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: digest)
        return try await keys.sign(claims)
    }

    static let hour: TimeInterval = 3600
    static func later() -> ExpirationClaim { .init(value: Date().addingTimeInterval(hour)) }

    /// Every way a bearer token can be wrong, each with what makes it wrong.
    static func badAuthorizations() async throws -> [(String, String?)] {
        let unsigned =
            base64url(#"{"alg":"none","typ":"JWT"}"#) + "."
            + base64url(#"{"sub":"alice","exp":\#(Int(Date().timeIntervalSince1970 + hour))}"#) + "."
        return [
            ("missing header", nil),
            ("empty header", ""),
            ("not bearer", "Basic YWxpY2U6c2VjcmV0"),
            ("bearer without token", "Bearer "),
            ("malformed token", "Bearer not.a.token"),
            ("garbage", "Bearer \u{1F600}"),
            ("expired", "Bearer " + (try await sign(Claims(sub: "alice", exp: .init(value: Date().addingTimeInterval(-60)))))),
            ("unsigned alg none", "Bearer " + unsigned),
            ("wrong secret", "Bearer " + (try await sign(Claims(sub: "alice", exp: later()), secret: String(repeating: "another-secret-", count: 5)))),
            ("other algorithm HS384", "Bearer " + (try await sign(Claims(sub: "alice", exp: later()), digest: .sha384))),
            ("missing exp", "Bearer " + (try await sign(Claims(sub: "alice", exp: nil)))),
            ("missing sub", "Bearer " + (try await sign(Claims(sub: nil, exp: later())))),
            ("not valid yet (nbf in an hour)", "Bearer " + (try await sign(Claims(sub: "alice", exp: later(), nbf: .init(value: Date().addingTimeInterval(hour)))))),
            ("invalid sub", "Bearer " + (try await sign(Claims(sub: "alice/smith", exp: later())))),
            ("sub too long", "Bearer " + (try await sign(Claims(sub: .init(value: String(repeating: "a", count: APILimits.maxUserIDLength + 1)), exp: later())))),
        ]
    }

    @Test func everyBadTokenGets401WithBearerChallengeAndJSONError() async throws {
        let cases = try await Self.badAuthorizations()
        try await TestServer.run { server in
            for (name, authorization) in cases {
                var headers: HTTPFields = [:]
                if let authorization { headers[.authorization] = authorization }
                for (method, path) in [(HTTPRequest.Method.get, "/v1/conversations"), (.post, "/v1/conversations")] {
                    let reply = try await server.request(method, path, rawBody: method == .post ? "{}" : nil, headers: headers)
                    #expect(reply.status == .unauthorized, "\(name): \(reply.status)")
                    #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(name)")
                    #expect(try reply.error().error.code == .unauthorized, "\(name)")
                }
            }
            // None of those requests created anything.
            let count = try await server.store.values(Int.self, "SELECT count(*) FROM conversations").reduce(0, +)
            #expect(count == 0)
        }
    }

    @Test func aValidTokenIsAcceptedAndItsUserIsRecordedOnFirstUse() async throws {
        let token = try await Self.sign(Claims(sub: "new.user@example-1", exp: Self.later()))
        try await TestServer.run { server in
            let reply = try await server.request(.get, "/v1/conversations", headers: [.authorization: "Bearer \(token)"])
            #expect(reply.status == .ok)
            let users = try await server.store.values(String.self, "SELECT id FROM users")
            #expect(users == ["new.user@example-1"])
        }
    }

    /// A verified token is remembered, so its signature is not checked on
    /// every request; but a remembered token is still refused once its `exp`
    /// has passed, with the same 401.
    @Test func aRememberedTokenStillExpires() async throws {
        let authority = try await TokenAuthority(secret: TestServer.secret)
        let token = "Bearer " + (try await Self.sign(Claims(sub: "alice", exp: Self.later())))
        #expect(try await authority.user(fromAuthorization: token) == "alice")
        #expect(try await authority.user(fromAuthorization: token, now: Date().addingTimeInterval(60)) == "alice")
        await #expect(throws: APIError.unauthorized("The bearer token has expired or is not valid yet (exp, nbf).")) {
            try await authority.user(fromAuthorization: token, now: Date().addingTimeInterval(2 * Self.hour))
        }
    }

    @Test func publicRoutesNeedNoToken() async throws {
        try await TestServer.run { server in
            #expect(try await server.request(.get, "/healthz").status == .ok)
            #expect(try await server.readiness() == TestServer.ready)
            let description = try await server.request(.get, "/openapi.yaml")
            #expect(description.status == .ok)
            #expect(description.text.hasPrefix("openapi: 3.1"))
        }
    }
}

@Suite struct SecretTests {
    @Test func aSecretShorterThan32BytesIsRefused() async throws {
        await #expect(throws: TokenAuthority.WeakSecret.self) {
            _ = try await TokenAuthority(secret: String(repeating: "s", count: 31))
        }
        _ = try await TokenAuthority(secret: String(repeating: "s", count: 32))
    }
}
