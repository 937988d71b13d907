import AsyncHTTPClient
import CryptoExtras
import Foundation
import Hummingbird
import JWTKit
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackTestSupport
import ServiceLifecycle
import Testing

/// An identity provider's JSON Web Key Set on a loopback port: what it
/// serves can change while a test runs (a key published, the set down), and
/// every fetch is counted.
final class KeySetServer: Sendable {
    struct State {
        var body = #"{"keys":[]}"#
        var status = 200
        var cacheControl: String?
        var fetches = 0
    }

    let state = NIOLockedValueBox(State())

    var fetches: Int { state.withLockedValue { $0.fetches } }

    func publish(_ keys: [JWK]) throws {
        let data = try JSONEncoder().encode(JWKS(keys: keys))
        state.withLockedValue {
            $0.body = String(decoding: data, as: UTF8.self)
            $0.status = 200
        }
    }

    func serve<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        let router = Router()
        router.get("/jwks.json") { [state] _, _ -> Response in
            let (text, status, cache) = state.withLockedValue { state in
                state.fetches += 1
                return (state.body, state.status, state.cacheControl)
            }
            var headers: HTTPFields = [.contentType: "application/json"]
            if let cache { headers[.cacheControl] = cache }
            return Response(
                status: .init(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
        }
        let (ports, reported) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "scrollback.tests.jwks")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { reported.yield($0.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
        let running = Task { try await group.run() }
        defer { running.cancel() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw KeySetServerFailure() }
        let result = try await body("http://127.0.0.1:\(port)/jwks.json")
        await group.triggerGracefulShutdown()
        _ = await running.result
        return result
    }

    struct KeySetServerFailure: Error {}
}

/// Keys of a provider, made in the test, and tokens signed with them by
/// jwt-kit as a provider signs them.
struct ProviderKeys {
    let rsa = try! Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
    let ec = ES256PrivateKey()
    let ed = try! EdDSA.PrivateKey(curve: .ed25519)

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    func rsaJWK(kid: String, alg: JWK.Algorithm? = .rs256) throws -> JWK {
        let (modulus, exponent) = try rsa.publicKey.getKeyPrimitives()
        return .rsa(
            alg, identifier: JWKIdentifier(string: kid), modulus: Self.base64URL(modulus), exponent: Self.base64URL(exponent))
    }

    func ecJWK(kid: String) -> JWK {
        let parameters = ec.publicKey.parameters!
        return .ecdsa(.es256, identifier: JWKIdentifier(string: kid), x: parameters.x, y: parameters.y, curve: .p256)
    }

    func edJWK(kid: String) -> JWK {
        .octetKeyPair(
            .eddsa, identifier: JWKIdentifier(string: kid), x: Self.base64URL(ed.publicKey.rawRepresentation), y: nil,
            curve: .ed25519)
    }

    enum Signer {
        case rsa, ec, ed
        case hmac(String)
    }

    /// A token of `claims`, signed by `signer` under `kid`.
    func token(_ claims: [String: ClaimValue], signer: Signer, kid: String?) async throws -> String {
        let keys = JWTKeyCollection()
        let id = kid.map { JWKIdentifier(string: $0) }
        switch signer {
        case .rsa: await keys.add(rsa: rsa, digestAlgorithm: .sha256, kid: id)
        case .ec: await keys.add(ecdsa: ec, kid: id)
        case .ed: await keys.add(eddsa: ed, kid: id)
        case .hmac(let secret): await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: id)
        }
        return try await keys.sign(ProviderClaims(claims: claims), kid: id)
    }

    static let issuer = "https://idp.example.test/"
    static let audience = "scrollback-api"

    /// A provider's usual claims for `user`, with `changes` on top.
    static func claims(
        _ user: String, _ changes: [String: ClaimValue?] = [:], now: Date = Date()
    ) -> [String: ClaimValue] {
        var claims: [String: ClaimValue] = [
            "sub": .string(user), "iss": .string(issuer), "aud": .array([.string(audience), .string("other")]),
            "iat": .number(now.timeIntervalSince1970.rounded(.down)),
            "exp": .number(now.addingTimeInterval(3600).timeIntervalSince1970.rounded(.down)),
            "scope": .string("openid profile email"), "azp": .string("web-app"), "email": .string("x@example.test"),
        ]
        for (name, value) in changes { claims[name] = value }
        return claims
    }
}

@Suite("Tokens of an identity provider's key set")
struct IdentityProviderTests {
    static func configure(_ url: String, refetch: Duration = .seconds(5)) -> (inout ScrollbackConfiguration) -> Void {
        { configuration in
            configuration.identity.jwksURLs = [url]
            configuration.identity.issuers = [ProviderKeys.issuer]
            configuration.identity.audiences = [ProviderKeys.audience]
            configuration.identity.refetchInterval = refetch
        }
    }

    /// GET /v1/conversations with `token`: its status and error message.
    static func call(_ cluster: LiveCluster, _ token: String, on index: Int = 0) async throws -> (Int, String) {
        let reply = try await cluster.request(.GET, "/v1/conversations", token: token, on: index)
        let message = (try? reply.decode(APIErrorBody.self).error.message) ?? ""
        return (reply.status, message)
    }

    @Test("RS256, ES256 and EdDSA tokens of the key set sign their users in; scope, azp and email are ignored")
    func tokensOfEveryKeyTypeSignIn() async throws {
        let keys = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([try keys.rsaJWK(kid: "rsa-1"), keys.ecJWK(kid: "ec-1"), keys.edJWK(kid: "ed-1")])
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url)) { cluster in
                for (signer, kid, user) in [
                    (ProviderKeys.Signer.rsa, "rsa-1", "auth0|5f7c8ec7c33c6c004bbafe82"), (.ec, "ec-1", "google-oauth2|1083"),
                    (.ed, "ed-1", "user_2abcDEF 名前"),
                ] {
                    let token = try await keys.token(ProviderKeys.claims(user), signer: signer, kid: kid)
                    let created = try await cluster.request(
                        .POST, "/v1/conversations", token: token, body: #"{"title":"from the provider"}"#)
                    #expect(created.status == 201, "\(kid): \(String(decoding: created.body, as: UTF8.self))")
                    let conversation = try created.decode(Conversation.self)
                    #expect(conversation.createdBy == user)
                }
                // HS256 tokens of the service's own secret still work beside them.
                #expect(try await Self.call(cluster, try await cluster.tokens.token(for: "alice", ttl: 60)).0 == 200)
            }
        }
    }

    @Test("A key set's token is a user's token whatever it claims: scope server opens no admin route and acts for no one else")
    func aKeySetTokenIsNeverAServerToken() async throws {
        let keys = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([keys.ecJWK(kid: "ec-1")])
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url)) { cluster in
                let token = try await keys.token(
                    ProviderKeys.claims("mallory", ["scope": .string("server")]), signer: .ec, kid: "ec-1")
                let admin = try await cluster.request(.GET, "/v1/admin/audit", token: token)
                #expect(admin.status == 403)
                #expect(admin.code == .serverTokenRequired)
                // An On-Behalf-Of header does not make it act for another user.
                let created = try await cluster.request(
                    .POST, "/v1/conversations", token: token, headers: [("On-Behalf-Of", "alice")], body: "{}")
                #expect(created.status == 201)
                #expect(try created.decode(Conversation.self).createdBy == "mallory")
            }
        }
    }

    @Test("Forged, confused, foreign and mis-addressed tokens are 401 with a message that says why")
    func refusedTokens() async throws {
        let keys = ProviderKeys()
        let foreign = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([try keys.rsaJWK(kid: "rsa-1"), keys.ecJWK(kid: "ec-1")])
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url)) { cluster in
                let now = Date()
                let publicPEM = keys.rsa.publicKey.pemRepresentation
                let good = ProviderKeys.claims("alice")
                let none = "eyJhbGciOiJub25lIiwia2lkIjoicnNhLTEifQ."
                    + ProviderKeys.base64URL(try JSONEncoder().encode(ProviderClaims(claims: good))) + "."
                let cases: [(String, String, String)] = [
                    // Algorithm confusion: HS256 with the RSA public key as the secret.
                    ("hs256 with the public key", try await keys.token(good, signer: .hmac(publicPEM), kid: "rsa-1"), "signature"),
                    ("alg none", none, "HS256"),
                    ("a foreign key under a published kid", try await foreign.token(good, signer: .ec, kid: "ec-1"), "signature"),
                    ("an RSA kid named by an ES256 token", try await keys.token(good, signer: .ec, kid: "rsa-1"), "does not verify ES256"),
                    ("no kid", try await keys.token(good, signer: .ec, kid: nil), "kid"),
                    ("a wrong iss", try await keys.token(ProviderKeys.claims("alice", ["iss": .string("https://idp.example.test")]), signer: .ec, kid: "ec-1"), "iss"),
                    ("a wrong aud", try await keys.token(ProviderKeys.claims("alice", ["aud": .string("someone-else")]), signer: .ec, kid: "ec-1"), "aud"),
                    ("no aud", try await keys.token(ProviderKeys.claims("alice", ["aud": nil]), signer: .ec, kid: "ec-1"), "aud"),
                    ("expired", try await keys.token(ProviderKeys.claims("alice", ["exp": .number(now.timeIntervalSince1970 - 3600)]), signer: .ec, kid: "ec-1"), "expired"),
                    ("no exp", try await keys.token(ProviderKeys.claims("alice", ["exp": nil]), signer: .ec, kid: "ec-1"), "exp"),
                    ("not yet valid", try await keys.token(ProviderKeys.claims("alice", ["nbf": .number(now.timeIntervalSince1970 + 3600)]), signer: .ec, kid: "ec-1"), "not valid yet"),
                    ("issued in the future", try await keys.token(ProviderKeys.claims("alice", ["iat": .number(now.timeIntervalSince1970 + 3600)]), signer: .ec, kid: "ec-1"), "future"),
                    ("a user id that is not a string", try await keys.token(ProviderKeys.claims("alice", ["sub": .number(42)]), signer: .ec, kid: "ec-1"), "sub"),
                    ("a user id with a /", try await keys.token(ProviderKeys.claims("a/b"), signer: .ec, kid: "ec-1"), "sub"),
                    ("not a JWT", "not-a-token", "JWT"),
                    ("oversized", try await keys.token(ProviderKeys.claims("alice", ["pad": .string(String(repeating: "x", count: 20_000))]), signer: .ec, kid: "ec-1"), "longer"),
                ]
                for (name, token, says) in cases {
                    let (status, message) = try await Self.call(cluster, token)
                    #expect(status == 401, "\(name): \(status) \(message)")
                    #expect(message.contains(says), "\(name): \(message)")
                }
                // Within the leeway, a clock a little behind is forgiven.
                let late = try await keys.token(
                    ProviderKeys.claims("alice", ["exp": .number(now.timeIntervalSince1970 - 20)]), signer: .ec, kid: "ec-1")
                #expect(try await Self.call(cluster, late).0 == 200)
                // A header far past the token limit is refused before any handler, still 4xx.
                let huge = try await cluster.request(.GET, "/v1/conversations", token: String(repeating: "a", count: 100_000))
                #expect((400..<500).contains(huge.status), "\(huge.status)")
                #expect(try await Self.call(cluster, try await keys.token(good, signer: .ec, kid: "ec-1")).0 == 200)
            }
        }
    }

    @Test("A key published while the server runs is fetched when a token names it")
    func keyRotation() async throws {
        let old = ProviderKeys()
        let new = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([old.ecJWK(kid: "2026-01")])
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url, refetch: .milliseconds(300))) { cluster in
                #expect(try await Self.call(cluster, try await old.token(ProviderKeys.claims("alice"), signer: .ec, kid: "2026-01")).0 == 200)
                try jwks.publish([old.ecJWK(kid: "2026-01"), new.ecJWK(kid: "2026-02")])
                try await Task.sleep(for: .milliseconds(400))
                let rotated = try await new.token(ProviderKeys.claims("alice"), signer: .ec, kid: "2026-02")
                #expect(try await Self.call(cluster, rotated).0 == 200)
                // The old key is withdrawn: its tokens stop working once the set is read again.
                try jwks.publish([new.ecJWK(kid: "2026-02")])
                try await Task.sleep(for: .milliseconds(400))
                _ = try await Self.call(cluster, try await new.token(ProviderKeys.claims("bob"), signer: .ec, kid: "2026-03"))
                let withdrawn = try await old.token(ProviderKeys.claims("carol"), signer: .ec, kid: "2026-01")
                #expect(try await Self.call(cluster, withdrawn).0 == 401)
            }
        }
    }

    @Test("40 tokens naming made-up keys at once fetch the key set at most once more per refetch interval")
    func unknownKidsAreBounded() async throws {
        let keys = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([keys.ecJWK(kid: "ec-1")])
        let interval = Duration.seconds(30)
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url, refetch: interval)) { cluster in
                // The fetch at start (and the background refresh's, which joins it or follows it).
                _ = try await Self.call(cluster, try await keys.token(ProviderKeys.claims("alice"), signer: .ec, kid: "ec-1"))
                try await Task.sleep(for: .milliseconds(300))
                let before = jwks.fetches
                var tokens: [String] = []
                for index in 0..<40 {
                    tokens.append(try await keys.token(ProviderKeys.claims("alice"), signer: .ec, kid: "made-up-\(index)"))
                }
                let started = ContinuousClock.now
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for token in tokens { group.addTask { try await Self.call(cluster, token).0 } }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                // However long the burst took on a busy machine, one fetch per interval at most.
                let allowed = 1 + Int((ContinuousClock.now - started) / interval)
                #expect(statuses == Array(repeating: 401, count: 40))
                #expect(jwks.fetches - before <= allowed, "\(jwks.fetches - before) fetches, \(allowed) allowed")
            }
        }
    }

    @Test("A key set that is down: the server starts, refuses with 401, keeps the keys it has, and recovers")
    func keySetDown() async throws {
        let keys = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([keys.ecJWK(kid: "ec-1")])
        jwks.state.withLockedValue { $0.status = 503 }
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url, refetch: .milliseconds(300))) { cluster in
                let token = try await keys.token(ProviderKeys.claims("alice"), signer: .ec, kid: "ec-1")
                let (status, message) = try await Self.call(cluster, token)
                #expect(status == 401)
                #expect(message.contains("cannot be fetched") || message.contains("No key set"), "\(message)")
                let health = try await cluster.request(.GET, "/healthz", token: "")
                #expect(health.status == 200)
                // It comes back: the next token naming the key fetches it.
                jwks.state.withLockedValue { $0.status = 200 }
                try await Task.sleep(for: .milliseconds(400))
                #expect(try await Self.call(cluster, try await keys.token(ProviderKeys.claims("bob"), signer: .ec, kid: "ec-1")).0 == 200)
                // Down again, then garbage: the keys already fetched keep working.
                jwks.state.withLockedValue { $0.status = 503 }
                try await Task.sleep(for: .milliseconds(400))
                _ = try await Self.call(cluster, try await keys.token(ProviderKeys.claims("x"), signer: .ec, kid: "unknown"))
                jwks.state.withLockedValue {
                    $0.status = 200
                    $0.body = "<html>not a key set</html>"
                }
                try await Task.sleep(for: .milliseconds(400))
                _ = try await Self.call(cluster, try await keys.token(ProviderKeys.claims("x"), signer: .ec, kid: "unknown-2"))
                #expect(try await Self.call(cluster, try await keys.token(ProviderKeys.claims("carol"), signer: .ec, kid: "ec-1")).0 == 200)
            }
        }
    }

    @Test("A key set with no usable key: its tokens are 401 and the server serves on")
    func keySetWithoutUsableKeys() async throws {
        let keys = ProviderKeys()
        let jwks = KeySetServer()
        // An encryption key, a symmetric one, and a key without a kid.
        jwks.state.withLockedValue {
            $0.body = #"{"keys":[{"kty":"RSA","use":"enc","kid":"enc-1","n":"AQAB","e":"AQAB"},{"kty":"oct","kid":"oct-1","k":"c2VjcmV0"},{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#
        }
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url)) { cluster in
                for kid in ["enc-1", "oct-1"] {
                    let token = try await keys.token(ProviderKeys.claims("alice"), signer: .ec, kid: kid)
                    let (status, _) = try await Self.call(cluster, token)
                    #expect(status == 401)
                }
                let own = try await cluster.tokens.token(for: "alice", ttl: 60)
                let (status, _) = try await Self.call(cluster, own)
                #expect(status == 200)
            }
        }
    }

    @Test("SCROLLBACK_JWT_USER_CLAIM names the claim with the user id")
    func userClaim() async throws {
        let keys = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([keys.ecJWK(kid: "ec-1")])
        try await jwks.serve { url in
            try await LiveCluster.run(configure: { configuration in
                Self.configure(url)(&configuration)
                configuration.identity.userClaim = "user_id"
            }) { cluster in
                let token = try await keys.token(
                    ProviderKeys.claims("ignored-sub", ["user_id": .string("firebase-uid-1")]), signer: .ec, kid: "ec-1")
                let created = try await cluster.request(.POST, "/v1/conversations", token: token, body: "{}")
                #expect(try created.decode(Conversation.self).createdBy == "firebase-uid-1")
                let missing = try await keys.token(ProviderKeys.claims("sub-only"), signer: .ec, kid: "ec-1")
                let (status, message) = try await Self.call(cluster, missing)
                #expect(status == 401)
                #expect(message.contains("user_id"))
            }
        }
    }

    @Test("The settings: a key set needs an http(s) address and an issuer")
    func settings() throws {
        func failure(_ environment: [String: String]) -> String? {
            do {
                _ = try ScrollbackConfiguration(environment: environment)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(failure(["SCROLLBACK_JWT_JWKS_URL": "ftp://idp.example/jwks", "SCROLLBACK_JWT_ISSUER": "x"])?.contains("SCROLLBACK_JWT_JWKS_URL") == true)
        #expect(failure(["SCROLLBACK_JWT_JWKS_URL": "not a url", "SCROLLBACK_JWT_ISSUER": "x"])?.contains("SCROLLBACK_JWT_JWKS_URL") == true)
        #expect(failure(["SCROLLBACK_JWT_JWKS_URL": "https://idp.example/jwks"])?.contains("SCROLLBACK_JWT_ISSUER") == true)
        #expect(failure(["SCROLLBACK_JWT_AUDIENCE": "api"])?.contains("SCROLLBACK_JWT_JWKS_URL") == true)
        let configuration = try ScrollbackConfiguration(environment: [
            "SCROLLBACK_JWT_JWKS_URL": "https://a.example/jwks.json, https://b.example/keys",
            "SCROLLBACK_JWT_ISSUER": "https://a.example/,https://b.example", "SCROLLBACK_JWT_AUDIENCE": "api",
            "SCROLLBACK_JWT_USER_CLAIM": "uid",
        ])
        #expect(configuration.identity.jwksURLs == ["https://a.example/jwks.json", "https://b.example/keys"])
        #expect(configuration.identity.issuers == ["https://a.example/", "https://b.example"])
        #expect(configuration.identity.audiences == ["api"])
        #expect(configuration.identity.userClaim == "uid")
    }

    @Test("scrollback idp's key set and tokens (docs/identity.md's quick start) sign a user in")
    func localIssuer() async throws {
        let pem = ES256PrivateKey().pemRepresentation
        let issuer = try LocalIssuer(pem: pem, kid: "demo-1")
        let jwks = KeySetServer()
        let set = try issuer.keySet()
        jwks.state.withLockedValue { $0.body = set }
        try await jwks.serve { url in
            try await LiveCluster.run(configure: Self.configure(url)) { cluster in
                let token = try await issuer.token(
                    for: "google-oauth2.1083", issuer: ProviderKeys.issuer, audience: ProviderKeys.audience, ttl: 60)
                let created = try await cluster.request(.POST, "/v1/conversations", token: token, body: "{}")
                #expect(created.status == 201)
                #expect(try created.decode(Conversation.self).createdBy == "google-oauth2.1083")
                let noAudience = try await issuer.token(for: "x", issuer: ProviderKeys.issuer, audience: nil, ttl: 60)
                #expect(try await Self.call(cluster, noAudience).0 == 401)
            }
        }
    }

    @Test("Cache-Control max-age sets how long a key set is kept, within bounds")
    func lifetime() async {
        let provider = JWKSProvider(url: "http://127.0.0.1:1/", options: IdentityOptions(), logger: Logger(label: "t"))
        #expect(await provider.lifetime(["Cache-Control": "public, max-age=3600"]) == .seconds(3600))
        #expect(await provider.lifetime(["Cache-Control": "max-age=5"]) == .seconds(60))
        #expect(await provider.lifetime(["Cache-Control": "max-age=9999999"]) == .seconds(86_400))
        #expect(await provider.lifetime([:]) == .seconds(600))
    }
}
