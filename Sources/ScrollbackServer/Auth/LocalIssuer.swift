import Foundation
import JWTKit

/// An identity provider of one's own, for trying key sets without one
/// (`scrollback idp`): an ES256 key from a PEM file (`openssl genpkey
/// -algorithm EC -pkeyopt ec_paramgen_curve:P-256`), its JSON Web Key Set to
/// serve, and tokens signed with it as a provider signs them.
public struct LocalIssuer: Sendable {
    private let key: ES256PrivateKey
    public let kid: String

    public init(pem: String, kid: String) throws {
        key = try ES256PrivateKey(pem: pem)
        self.kid = kid
    }

    /// The key set (`{"keys": [...]}`) with the public half of the key.
    public func keySet() throws -> String {
        guard let parameters = key.publicKey.parameters else { throw JWTError.generic(identifier: "ecKey", reason: "no coordinates") }
        let jwk: [String: String] = [
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid, "x": parameters.x, "y": parameters.y,
        ]
        let data = try JSONSerialization.data(withJSONObject: ["keys": [jwk]], options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    /// A token for `user` (in claim `userClaim`) from `issuer`, for `audience`
    /// when given, valid for `ttl` seconds.
    public func token(
        for user: String, issuer: String, audience: String?, userClaim: String = "sub", ttl: TimeInterval
    ) async throws -> String {
        let now = Date()
        var claims: [String: ClaimValue] = [
            userClaim: .string(user), "iss": .string(issuer), "iat": .number(now.timeIntervalSince1970.rounded(.down)),
            "exp": .number(now.addingTimeInterval(ttl).timeIntervalSince1970.rounded(.down)),
        ]
        if let audience { claims["aud"] = .string(audience) }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: kid))
        return try await keys.sign(ProviderClaims(claims: claims), kid: JWKIdentifier(string: kid))
    }
}
