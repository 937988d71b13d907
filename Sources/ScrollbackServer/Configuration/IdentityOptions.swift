import Foundation

/// Who may sign the tokens the server takes besides its own secret: the
/// app's identity providers, by their JSON Web Key Sets (docs/identity.md).
public struct IdentityOptions: Sendable, Equatable {
    /// `SCROLLBACK_JWT_JWKS_URL`: the http(s) addresses of the key sets,
    /// comma-separated; none (the default) takes only HS256 tokens signed
    /// with `SCROLLBACK_JWT_SECRET`.
    public var jwksURLs: [String] = []
    /// `SCROLLBACK_JWT_ISSUER`: the `iss` a key set's token must carry (one
    /// of them, comma-separated). Required with a key set: a provider's key
    /// set may sign the tokens of every one of its tenants (Firebase's signs
    /// every project's), and the issuer is what says the token is this app's.
    public var issuers: [String] = []
    /// `SCROLLBACK_JWT_AUDIENCE`: when set, a key set's token's `aud` (a
    /// string or an array) must hold one of them (comma-separated).
    public var audiences: [String] = []
    /// `SCROLLBACK_JWT_USER_CLAIM`: the claim of a key set's token that holds
    /// the user id (`sub` by default).
    public var userClaim = "sub"
    /// How far a clock may be off: `exp` and `nbf` are checked this much
    /// late, and an `iat` this much in the future is taken.
    public var leeway: TimeInterval = 60
    /// A token naming a key the cache does not hold fetches the key set
    /// again, at most once in this long per key set, however many such
    /// tokens come.
    public var refetchInterval = Duration.seconds(5)
    /// How long a key set is kept without a `Cache-Control: max-age`, and
    /// the bounds of what a `max-age` may ask for.
    public var defaultLifetime = Duration.seconds(600)
    public var lifetimeBounds = Duration.seconds(60)...Duration.seconds(86_400)
    /// One fetch of a key set: how long it may take, and how large it may be.
    public var fetchTimeout = Duration.seconds(5)
    public var maxKeySetBytes = 1 << 20
    /// After a failed fetch, the first wait before the next, doubled up to
    /// `retryCap` while they fail.
    public var retryDelay = Duration.seconds(1)
    public var retryCap = Duration.seconds(30)

    public init() {}

    /// Whether tokens from a key set are taken.
    public var usesKeySets: Bool { !jwksURLs.isEmpty }

    /// Reads `SCROLLBACK_JWT_JWKS_URL`, `SCROLLBACK_JWT_ISSUER`,
    /// `SCROLLBACK_JWT_AUDIENCE` and `SCROLLBACK_JWT_USER_CLAIM`.
    static func read(_ value: (String) -> String?) throws -> IdentityOptions {
        var options = IdentityOptions()
        if let text = value("SCROLLBACK_JWT_JWKS_URL") {
            options.jwksURLs = try list(text).map { address in
                guard let url = URL(string: address), let scheme = url.scheme?.lowercased(),
                    scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty
                else {
                    throw ScrollbackConfiguration.Failure(
                        "SCROLLBACK_JWT_JWKS_URL must be one http(s) address of a JSON Web Key Set, or several separated by commas, such as https://example.auth0.com/.well-known/jwks.json (got \(address)).")
                }
                return address
            }
        }
        if let text = value("SCROLLBACK_JWT_ISSUER") { options.issuers = list(text) }
        if let text = value("SCROLLBACK_JWT_AUDIENCE") { options.audiences = list(text) }
        if let text = value("SCROLLBACK_JWT_USER_CLAIM") {
            let claim = text.trimmingCharacters(in: .whitespaces)
            guard !claim.isEmpty else {
                throw ScrollbackConfiguration.Failure("SCROLLBACK_JWT_USER_CLAIM must name a claim, such as sub or user_id.")
            }
            options.userClaim = claim
        }
        if options.usesKeySets, options.issuers.isEmpty {
            throw ScrollbackConfiguration.Failure(
                "SCROLLBACK_JWT_JWKS_URL needs SCROLLBACK_JWT_ISSUER, the `iss` of your provider's tokens (such as https://example.auth0.com/): a key set may sign the tokens of other apps than yours. docs/identity.md lists each provider's.")
        }
        if !options.usesKeySets {
            for name in ["SCROLLBACK_JWT_ISSUER", "SCROLLBACK_JWT_AUDIENCE", "SCROLLBACK_JWT_USER_CLAIM"] where value(name) != nil {
                throw ScrollbackConfiguration.Failure(
                    "\(name) is set but SCROLLBACK_JWT_JWKS_URL is not: it applies to the tokens of an identity provider's key set; set SCROLLBACK_JWT_JWKS_URL too, or unset \(name).")
            }
        }
        return options
    }

    private static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
