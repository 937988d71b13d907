import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// One identity provider's JSON Web Key Set, fetched and cached: the keys a
/// token's `kid` names. Fetched at start and again as its `Cache-Control`
/// allows (`refreshForever`); a `kid` it does not hold fetches it again,
/// at most once per `refetchInterval` however many such tokens come (a
/// flood of made-up kids is not a flood of fetches). A fetch that fails
/// keeps the keys already held.
///
/// Each key verifies only the algorithms of its type (its `alg` when the
/// set names one): an RSA key RS256, RS384 or RS512; an EC key the ES
/// algorithm of its curve; an Ed25519 key EdDSA. A token's `alg` picks
/// among those, so a public key can never be taken as an HMAC secret.
actor JWKSProvider {
    let url: String
    private let options: IdentityOptions
    private let client: HTTPClient
    private let logger: Logger
    /// Keys by kid, then algorithm: one collection per pair, holding that
    /// key for that algorithm only.
    private var keys: [String: [String: JWTKeyCollection]] = [:]
    /// The answer's fingerprint, to tell a changed set from the same one.
    private var fingerprint: Data?
    private var lastAttempt: ContinuousClock.Instant?
    private var fetching: Task<Fetched, Never>?
    /// Fetches started (at start, refreshes and unknown kids), for tests and metrics.
    private(set) var fetchCount = 0
    /// Called when the set changed after a first one: tokens verified with
    /// its keys are verified again (a key may have gone).
    private let onKeysRemoved: @Sendable () -> Void

    /// The algorithms a key set's key may verify.
    static let algorithms: Set<String> = ["RS256", "RS384", "RS512", "ES256", "ES384", "EdDSA"]

    init(
        url: String, options: IdentityOptions, client: HTTPClient = .shared, logger: Logger,
        onKeysRemoved: @escaping @Sendable () -> Void = {}
    ) {
        self.url = url
        self.options = options
        self.client = client
        self.logger = logger
        self.onKeysRemoved = onKeysRemoved
    }

    /// How one fetch went, and how long until the next refresh.
    enum Fetched: Sendable {
        case keys(Duration)
        case failed
    }

    /// The keys held for `kid` and `alg`; with `refetching`, a kid not held
    /// fetches the set again first when the last fetch is old enough.
    func verifier(kid: String, alg: String, refetching: Bool) async -> JWTKeyCollection? {
        if let held = keys[kid] { return held[alg] }
        guard refetching else { return nil }
        if let fetching {
            _ = await fetching.value
        } else if let lastAttempt, ContinuousClock.now - lastAttempt < options.refetchInterval {
            return nil
        } else {
            _ = await fetch()
        }
        return keys[kid]?[alg]
    }

    /// Whether the set holds `kid` at all (for the 401's message).
    func holds(kid: String) -> Bool { keys[kid] != nil }

    /// Fetches the set now (joining a fetch under way).
    @discardableResult
    func fetch() async -> Fetched {
        if let fetching { return await fetching.value }
        lastAttempt = .now
        fetchCount += 1
        let task = Task { await self.download() }
        fetching = task
        let result = await task.value
        fetching = nil
        return result
    }

    /// Keeps the set fresh until cancelled: at the answer's max-age, or
    /// after a failure sooner, with a doubling wait.
    func refreshForever() async {
        var retry = options.retryDelay
        while !Task.isCancelled {
            let wait: Duration
            switch await fetch() {
            case .keys(let lifetime):
                retry = options.retryDelay
                wait = lifetime
            case .failed:
                wait = retry
                retry = min(retry * 2, options.retryCap)
            }
            do { try await Task.sleep(for: wait) } catch { return }
        }
    }

    private func download() async -> Fetched {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let body: Data
        let headers: HTTPHeaders
        do {
            let response = try await client.execute(request, timeout: TimeAmount(options.fetchTimeout))
            let bytes = try await response.body.collect(upTo: options.maxKeySetBytes)
            guard response.status == .ok else {
                logger.error(
                    "the identity provider's key set answered \(response.status.code); the keys already fetched stay",
                    metadata: ["jwks_url": "\(url)"])
                return .failed
            }
            body = Data(bytes.readableBytesView)
            headers = response.headers
        } catch {
            logger.error(
                "the identity provider's key set could not be fetched; the keys already fetched stay",
                metadata: ["jwks_url": "\(url)", "error": "\(error)"])
            return .failed
        }
        guard let parsed = Self.keys(inSet: body) else {
            logger.error(
                "the identity provider's key set is not a JSON Web Key Set ({\"keys\": [...]}); the keys already fetched stay",
                metadata: ["jwks_url": "\(url)"])
            return .failed
        }
        if parsed.skipped > 0 || parsed.keys.isEmpty {
            logger.warning(
                "keys of the identity provider's key set that no token can be verified with",
                metadata: ["jwks_url": "\(url)", "usable": "\(parsed.keys.count)", "skipped": "\(parsed.skipped)"])
        }
        if body != fingerprint {
            var collections: [String: [String: JWTKeyCollection]] = [:]
            for (kid, byAlgorithm) in parsed.keys {
                for (alg, jwk) in byAlgorithm {
                    let collection = JWTKeyCollection()
                    do {
                        try await collection.add(jwk: jwk)
                        collections[kid, default: [:]][alg] = collection
                    } catch {
                        logger.warning("a key of the identity provider's key set is not valid", metadata: ["kid": "\(kid)"])
                    }
                }
            }
            // A set that changed may have dropped or replaced a key: what
            // was verified with the old one is verified again.
            let replaced = fingerprint != nil
            keys = collections
            fingerprint = body
            if replaced { onKeysRemoved() }
            logger.info("fetched the identity provider's key set", metadata: ["jwks_url": "\(url)", "keys": "\(collections.count)"])
        }
        return .keys(lifetime(headers))
    }

    /// The set's lifetime: its `Cache-Control: max-age` within the bounds,
    /// or the default.
    func lifetime(_ headers: HTTPHeaders) -> Duration {
        let directives = headers[canonicalForm: "Cache-Control"].map { $0.lowercased().trimmingCharacters(in: .whitespaces) }
        guard let maxAge = directives.first(where: { $0.hasPrefix("max-age=") }),
            let seconds = Int(maxAge.dropFirst("max-age=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\" ")))
        else { return options.defaultLifetime }
        return min(max(.seconds(seconds), options.lifetimeBounds.lowerBound), options.lifetimeBounds.upperBound)
    }

    /// The usable keys of a key set by kid and algorithm (each JWK with its
    /// `alg` set to that one, and no private part), and how many were
    /// skipped (no kid, for encryption, a type or algorithm not taken);
    /// nil when `data` is not a key set.
    static func keys(inSet data: Data) -> (keys: [String: [String: JWK]], skipped: Int)? {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let entries = object["keys"] as? [Any]
        else { return nil }
        var keys: [String: [String: JWK]] = [:]
        var skipped = 0
        for entry in entries {
            guard let fields = entry as? [String: Any], let kid = fields["kid"] as? String, !kid.isEmpty,
                (fields["use"] as? String).map({ $0 == "sig" }) ?? true,
                let bytes = try? JSONSerialization.data(withJSONObject: fields),
                var jwk = try? JSONDecoder().decode(JWK.self, from: bytes)
            else {
                skipped += 1
                continue
            }
            jwk.privateExponent = nil
            jwk.prime1 = nil
            jwk.prime2 = nil
            let taken = algorithms(of: jwk, named: fields["alg"] as? String, curve: fields["crv"] as? String)
            guard !taken.isEmpty else {
                skipped += 1
                continue
            }
            for alg in taken {
                var key = jwk
                key.algorithm = JWK.Algorithm(rawValue: alg)
                keys[kid, default: [:]][alg] = key
            }
        }
        return (keys, skipped)
    }

    /// The algorithms a key of this type (and curve) verifies, narrowed to
    /// its `alg` when it names one; empty for a key no token is taken from.
    static func algorithms(of jwk: JWK, named alg: String?, curve: String?) -> [String] {
        let byType: [String]
        switch jwk.keyType.rawValue {
        case "RSA": byType = ["RS256", "RS384", "RS512"]
        case "EC":
            switch curve {
            case "P-256": byType = ["ES256"]
            case "P-384": byType = ["ES384"]
            default: byType = []
            }
        case "OKP": byType = curve == "Ed25519" ? ["EdDSA"] : []
        default: byType = []
        }
        guard let alg else { return byType }
        return byType.contains(alg) ? [alg] : []
    }
}

/// Keeps every key set fresh while the server runs (`refreshForever`), from
/// its start: a key set that cannot be fetched then is logged and tried
/// again, and the server starts anyway.
struct KeySetRefresh: Service {
    let providers: [JWKSProvider]

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            for provider in providers {
                group.addTask { await provider.refreshForever() }
            }
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }
}
