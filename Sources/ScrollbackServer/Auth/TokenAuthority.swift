import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackStore

/// The claims Scrollback reads from a bearer token.
struct AccessClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    /// Optional; a token is not valid before it.
    var nbf: NotBeforeClaim?
    /// When it was issued: a revocation refuses the tokens issued before it.
    var iat: IssuedAtClaim?
    /// `server` on a server token (`scrollback token --server`): the
    /// operator's, for the admin routes and for acting on behalf of any user.
    /// Signed like the rest, so a user token can never claim it.
    var scope: String?

    static let serverScope = "server"

    init(
        sub: SubjectClaim, exp: ExpirationClaim, nbf: NotBeforeClaim? = nil, iat: IssuedAtClaim? = nil,
        scope: String? = nil
    ) {
        self.sub = sub
        self.exp = exp
        self.nbf = nbf
        self.iat = iat
        self.scope = scope
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}

/// Signs and verifies bearer tokens: HS256 with the shared secret (the
/// service's own: user tokens, and the operator's server tokens), and, with
/// `IdentityOptions.jwksURLs`, the tokens of the app's identity providers,
/// signed by a key of their JSON Web Key Sets (`JWKSProvider`), which are
/// always user tokens. The header's `alg` says which: HS256 is checked
/// against the secret alone, RS256, RS384, RS512, ES256, ES384 and EdDSA
/// against the key sets alone, anything else (`none` included) is refused
/// before a signature is looked at. A user's tokens issued before their last
/// revocation are refused (`Revocations`).
public struct TokenAuthority: Sendable {
    private let keys: JWTKeyCollection
    private let identity: IdentityOptions
    /// One per key set, in the order of `SCROLLBACK_JWT_JWKS_URL`.
    let providers: [JWKSProvider]
    let revocations: Revocations?
    /// Tokens already verified, with what they said: a client sends the same
    /// token with every request until it expires, so its signature is checked
    /// once, not on every request. Bounded: when full it forgets everything;
    /// a key set that changed forgets it too.
    private let verified: NIOLockedValueBox<[String: VerifiedToken]>
    private static let verifiedCapacity = 10_000

    /// A token's `nbf` had passed when it was verified, so only `exp` is
    /// left to check.
    struct VerifiedToken: Sendable {
        /// The user, or for a server token the operator's name (its `sub`).
        var user: UserID
        var expires: Date
        /// A server token.
        var isServer = false
        /// Its `iat`, if it has one.
        var issuedAt: Date?
        /// Its OpenID Connect `name` and `picture`, when usable as a
        /// display name and an avatar's URL (`Validation`).
        var profile = TokenProfile()
    }

    private static let serverTokenOnUserRoute = APIError.unauthorized(
        "This is a server token: it calls the admin routes, or a user route with `On-Behalf-Of: <user id>`; a live stream takes a user's token.")

    private static let expiredOrNotYetValid = APIError.unauthorized(
        "The bearer token has expired or is not valid yet (exp, nbf).")

    /// HS256 wants a key at least as long as its 32-byte output.
    public static let minimumSecretBytes = 32

    /// Longer tokens are refused unread: providers' tokens are a few kilobytes.
    public static let maxTokenBytes = 16 * 1024

    public struct WeakSecret: Error, CustomStringConvertible {
        public var description: String {
            "SCROLLBACK_JWT_SECRET must be at least \(TokenAuthority.minimumSecretBytes) bytes long (for example the output of `openssl rand -hex 32`)."
        }
    }

    /// Tokens signed with `secret` only (the command line's, and tests').
    public init(secret: String) async throws {
        try await self.init(secret: secret, identity: IdentityOptions(), revocations: nil, logger: Logger(label: "scrollback"))
    }

    init(
        secret: String, identity: IdentityOptions, revocations: Revocations?, logger: Logger, client: HTTPClient = .shared
    ) async throws {
        guard secret.utf8.count >= Self.minimumSecretBytes else { throw WeakSecret() }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.keys = keys
        self.identity = identity
        self.revocations = revocations
        let verified = NIOLockedValueBox([String: VerifiedToken]())
        self.verified = verified
        self.providers = identity.jwksURLs.map { url in
            JWKSProvider(
                url: url, options: identity, client: client, logger: logger,
                onKeysRemoved: { verified.withLockedValue { $0.removeAll() } })
        }
    }

    /// A token for `user` that expires after `ttl` seconds.
    public func token(for user: String, ttl: TimeInterval) async throws -> String {
        let now = Date()
        return try await keys.sign(
            AccessClaims(sub: .init(value: user), exp: .init(value: now.addingTimeInterval(ttl)), iat: .init(value: now)))
    }

    /// A server token named `name` (the audit log's actor) that expires after `ttl` seconds.
    public func serverToken(named name: String, ttl: TimeInterval) async throws -> String {
        let now = Date()
        return try await keys.sign(
            AccessClaims(
                sub: .init(value: name), exp: .init(value: now.addingTimeInterval(ttl)), iat: .init(value: now),
                scope: AccessClaims.serverScope))
    }

    /// The user id of a valid user token, or an `APIError` 401 that says why not.
    func user(fromAuthorization header: String?, now: Date = Date()) async throws -> UserID {
        try await verify(Self.bearerToken(header), now: now).user
    }

    /// What a valid user or server token says, or an `APIError` 401 that says why not.
    func caller(fromAuthorization header: String?, now: Date = Date()) async throws -> VerifiedToken {
        try await verify(Self.bearerToken(header), now: now, acceptingServer: true)
    }

    /// The token of an `Authorization: Bearer <token>` header.
    static func bearerToken(_ header: String?) throws -> String {
        guard let header, !header.isEmpty else {
            throw APIError.unauthorized("Send `Authorization: Bearer <token>`.")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw APIError.unauthorized("The Authorization header must be `Bearer <token>`.")
        }
        return String(parts[1])
    }

    /// Who a valid token names and until when, or an `APIError` 401 that
    /// says why not; a server token only `acceptingServer`.
    func verify(_ text: String, now: Date = Date(), acceptingServer: Bool = false) async throws -> VerifiedToken {
        let result = try await verifyAny(text, now: now)
        guard acceptingServer || !result.isServer else { throw Self.serverTokenOnUserRoute }
        if try await isRevoked(result) {
            throw APIError.unauthorized(
                "This token was revoked: the user's tokens issued before their revocation are refused. Sign in again for a new one.")
        }
        return result
    }

    /// Whether a user's token was issued before their last revocation (a
    /// token without `iat` is, once there was one). Server tokens are not
    /// revoked this way: rotate the secret.
    func isRevoked(_ token: VerifiedToken) async throws -> Bool {
        guard !token.isServer, let revocations, let before = try await revocations.revokedBefore(token.user) else {
            return false
        }
        guard let issued = token.issuedAt else { return true }
        return issued < before
    }

    private func verifyAny(_ text: String, now: Date) async throws -> VerifiedToken {
        if let known = verified.withLockedValue({ $0[text] }) {
            guard now < known.expires else { throw Self.expiredOrNotYetValid }
            return known
        }
        guard text.utf8.count <= Self.maxTokenBytes else {
            throw APIError.unauthorized("The bearer token is longer than \(Self.maxTokenBytes) bytes.")
        }
        guard let header = TokenHeader(token: text) else {
            throw APIError.unauthorized("The bearer token is not a JWT (`header.payload.signature`, base64url, with an `alg`).")
        }
        let result: VerifiedToken
        if header.alg == "HS256" {
            result = try await verifySigned(text)
        } else if !providers.isEmpty, JWKSProvider.algorithms.contains(header.alg) {
            result = try await verifyFromKeySets(text, header: header, now: now)
        } else if providers.isEmpty {
            throw APIError.unauthorized("The bearer token must be signed with HS256.")
        } else {
            throw APIError.unauthorized(
                "The bearer token must be signed with HS256 (the service's secret) or with \(JWKSProvider.algorithms.sorted().joined(separator: ", ")) (a key of SCROLLBACK_JWT_JWKS_URL); it names `\(header.alg)`.")
        }
        verified.withLockedValue { verified in
            if verified.count >= Self.verifiedCapacity { verified.removeAll(keepingCapacity: true) }
            verified[text] = result
        }
        return result
    }

    /// A token signed with the shared secret: a user's, or a server token.
    private func verifySigned(_ text: String) async throws -> VerifiedToken {
        let claims: AccessClaims
        do {
            claims = try await keys.verify(Array(text.utf8), as: AccessClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw Self.expiredOrNotYetValid
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw APIError.unauthorized("The bearer token's signature is not valid.")
        } catch {
            throw APIError.unauthorized("The bearer token is malformed or lacks the `sub` and `exp` claims.")
        }
        guard let user = UserID(validating: claims.sub.value) else {
            throw APIError.unauthorized("The token's `sub` must be a user id of \(UserID.rule).")
        }
        guard claims.scope == nil || claims.scope == AccessClaims.serverScope else {
            throw APIError.unauthorized("The token's `scope` must be absent (a user's token) or `server`.")
        }
        return VerifiedToken(
            user: user, expires: claims.exp.value, isServer: claims.scope == AccessClaims.serverScope,
            issuedAt: claims.iat?.value)
    }

    /// An identity provider's token: the key its `kid` names in a key set
    /// (fetched again, within bounds, when no set holds it), then its claims.
    private func verifyFromKeySets(_ text: String, header: TokenHeader, now: Date) async throws -> VerifiedToken {
        guard let kid = header.kid else {
            throw APIError.unauthorized("The bearer token names no key (`kid`): a key set's token must.")
        }
        var key: JWTKeyCollection?
        for refetching in [false, true] where key == nil {
            for provider in providers where key == nil {
                key = await provider.verifier(kid: kid, alg: header.alg, refetching: refetching)
            }
        }
        guard let key else {
            var held = false
            for provider in providers where await provider.holds(kid: kid) { held = true }
            throw APIError.unauthorized(
                held
                    ? "The key `\(kid)` of the key set does not verify \(header.alg)."
                    : "No key set holds the key `\(kid)` the bearer token names (or the key set cannot be fetched now).")
        }
        let claims: ProviderClaims
        do {
            claims = try await key.verify(Array(text.utf8), as: ProviderClaims.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw APIError.unauthorized("The bearer token's signature is not valid.")
        } catch {
            throw APIError.unauthorized("The bearer token is malformed: its claims must be a JSON object.")
        }
        return try check(claims, now: now)
    }

    /// The claims of a provider's token, checked: its times (with the
    /// leeway), issuer, audience and user id.
    func check(_ claims: ProviderClaims, now: Date) throws -> VerifiedToken {
        let leeway = identity.leeway
        guard case .at(let expires) = claims.date("exp") else {
            throw APIError.unauthorized("The bearer token must have an `exp` (a NumericDate).")
        }
        guard now.timeIntervalSince(expires) <= leeway else { throw Self.expiredOrNotYetValid }
        switch claims.date("nbf") {
        case .at(let notBefore) where notBefore.timeIntervalSince(now) > leeway: throw Self.expiredOrNotYetValid
        case .invalid: throw APIError.unauthorized("The bearer token's `nbf` must be a NumericDate.")
        default: break
        }
        var issuedAt: Date?
        switch claims.date("iat") {
        case .at(let date) where date.timeIntervalSince(now) > leeway:
            throw APIError.unauthorized("The bearer token's `iat` is in the future.")
        case .at(let date): issuedAt = date
        case .invalid: throw APIError.unauthorized("The bearer token's `iat` must be a NumericDate.")
        case .absent: break
        }
        if !identity.issuers.isEmpty {
            guard let issuer = claims.string("iss"), identity.issuers.contains(issuer) else {
                throw APIError.unauthorized(
                    "The bearer token's `iss` must be \(identity.issuers.map { "`\($0)`" }.joined(separator: " or ")) (SCROLLBACK_JWT_ISSUER).")
            }
        }
        if !identity.audiences.isEmpty {
            guard claims.audiences.contains(where: identity.audiences.contains) else {
                throw APIError.unauthorized(
                    "The bearer token's `aud` must hold \(identity.audiences.map { "`\($0)`" }.joined(separator: " or ")) (SCROLLBACK_JWT_AUDIENCE).")
            }
        }
        guard let id = claims.string(identity.userClaim), let user = UserID(validating: id) else {
            throw APIError.unauthorized(
                "The bearer token's `\(identity.userClaim)` (SCROLLBACK_JWT_USER_CLAIM) must be a user id of \(UserID.rule).")
        }
        let profile = TokenProfile(
            name: claims.string("name").flatMap { try? Validation.displayName($0) },
            picture: claims.string("picture").flatMap { try? Validation.imageURL($0, field: "picture") })
        return VerifiedToken(
            user: user, expires: expires.addingTimeInterval(leeway), isServer: false, issuedAt: issuedAt,
            profile: profile)
    }
}
