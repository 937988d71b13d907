import Foundation
import JWTKit
import NIOConcurrencyHelpers

/// Signs the load's users' bearer tokens with the service's secret, as the
/// backend of an app that integrates Scrollback would; each user's token is
/// signed once and reused until it is close to expiring.
final class TokenIssuer: Sendable {
    private struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim

        func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
    }

    private let keys: JWTKeyCollection
    private let issued = NIOLockedValueBox([String: (token: String, renewAfter: Date)]())
    private static let lifetime: TimeInterval = 3_600

    init(secret: String) async {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.keys = keys
    }

    func token(for user: String) async throws -> String {
        let now = Date()
        if let cached = issued.withLockedValue({ $0[user] }), cached.renewAfter > now { return cached.token }
        let token = try await keys.sign(
            Claims(sub: .init(value: user), exp: .init(value: now.addingTimeInterval(Self.lifetime))))
        issued.withLockedValue { $0[user] = (token, now.addingTimeInterval(Self.lifetime / 2)) }
        return token
    }

    /// The secret `scrollback serve` uses: `SCROLLBACK_JWT_SECRET`, else the
    /// one it generated under its state directory.
    static func serviceSecret(stateDirectory: String) throws -> String {
        if let secret = ProcessInfo.processInfo.environment["SCROLLBACK_JWT_SECRET"], !secret.isEmpty { return secret }
        let path = stateDirectory + "/jwt-secret"
        guard let secret = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw LoadFailure(
                "No secret to sign tokens with: set SCROLLBACK_JWT_SECRET to the server's, or run from the directory where `scrollback serve` keeps \(path)."
            )
        }
        return secret.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A reason the load cannot run, said plainly.
struct LoadFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
