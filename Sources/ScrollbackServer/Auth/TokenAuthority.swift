import Foundation
import JWTKit
import NIOConcurrencyHelpers
import ScrollbackModels

/// The claims Scrollback reads from a bearer token.
struct AccessClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    /// Optional; a token is not valid before it.
    var nbf: NotBeforeClaim?
    /// `server` on a server token (`scrollback token --server`): the
    /// operator's, for the admin routes and for acting on behalf of any user.
    /// Signed like the rest, so a user token can never claim it.
    var scope: String?

    static let serverScope = "server"

    init(sub: SubjectClaim, exp: ExpirationClaim, nbf: NotBeforeClaim? = nil, scope: String? = nil) {
        self.sub = sub
        self.exp = exp
        self.nbf = nbf
        self.scope = scope
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        try nbf?.verifyNotBefore()
    }
}

/// Signs and verifies HS256 bearer tokens with the shared secret.
public struct TokenAuthority: Sendable {
    private let keys: JWTKeyCollection
    /// Tokens already verified, with what they said: a client sends the same
    /// token with every request until it expires, so its signature is checked
    /// once, not on every request. Bounded: when full it forgets everything.
    private let verified = NIOLockedValueBox([String: VerifiedToken]())
    private static let verifiedCapacity = 10_000

    /// A token's `nbf` had passed when it was verified, so only `exp` is
    /// left to check.
    struct VerifiedToken: Sendable {
        /// The user, or for a server token the operator's name (its `sub`).
        var user: UserID
        var expires: Date
        /// A server token.
        var isServer = false
    }

    private static let serverTokenOnUserRoute = APIError.unauthorized(
        "This is a server token: it calls the admin routes, or a user route with `On-Behalf-Of: <user id>`; a live stream takes a user's token.")

    private static let expiredOrNotYetValid = APIError.unauthorized(
        "The bearer token has expired or is not valid yet (exp, nbf).")

    /// HS256 wants a key at least as long as its 32-byte output.
    public static let minimumSecretBytes = 32

    public struct WeakSecret: Error, CustomStringConvertible {
        public var description: String {
            "SCROLLBACK_JWT_SECRET must be at least \(TokenAuthority.minimumSecretBytes) bytes long (for example the output of `openssl rand -hex 32`)."
        }
    }

    public init(secret: String) async throws {
        guard secret.utf8.count >= Self.minimumSecretBytes else { throw WeakSecret() }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.keys = keys
    }

    /// A token for `user` that expires after `ttl` seconds.
    public func token(for user: String, ttl: TimeInterval) async throws -> String {
        try await keys.sign(AccessClaims(sub: .init(value: user), exp: .init(value: Date().addingTimeInterval(ttl))))
    }

    /// A server token named `name` (the audit log's actor) that expires after `ttl` seconds.
    public func serverToken(named name: String, ttl: TimeInterval) async throws -> String {
        try await keys.sign(
            AccessClaims(
                sub: .init(value: name), exp: .init(value: Date().addingTimeInterval(ttl)), scope: AccessClaims.serverScope))
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
        return result
    }

    private func verifyAny(_ text: String, now: Date) async throws -> VerifiedToken {
        if let known = verified.withLockedValue({ $0[text] }) {
            guard now < known.expires else { throw Self.expiredOrNotYetValid }
            return known
        }
        let token = Array(text.utf8)
        // Only HS256: a token naming another algorithm (or `none`) is refused
        // before its signature is looked at.
        guard let header = try? DefaultJWTParser().parse(token, as: AccessClaims.self).header else {
            throw APIError.unauthorized("The bearer token is malformed or lacks the `sub` and `exp` claims.")
        }
        guard header.alg == "HS256" else {
            throw APIError.unauthorized("The bearer token must be signed with HS256.")
        }
        let claims: AccessClaims
        do {
            claims = try await keys.verify(token, as: AccessClaims.self)
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            throw Self.expiredOrNotYetValid
        } catch {
            throw APIError.unauthorized("The bearer token's signature is not valid.")
        }
        guard let user = UserID(validating: claims.sub.value) else {
            throw APIError.unauthorized("The token's `sub` must be a user id of \(UserID.rule).")
        }
        guard claims.scope == nil || claims.scope == AccessClaims.serverScope else {
            throw APIError.unauthorized("The token's `scope` must be absent (a user's token) or `server`.")
        }
        let result = VerifiedToken(user: user, expires: claims.exp.value, isServer: claims.scope == AccessClaims.serverScope)
        verified.withLockedValue { verified in
            if verified.count >= Self.verifiedCapacity { verified.removeAll(keepingCapacity: true) }
            verified[text] = result
        }
        return result
    }
}
