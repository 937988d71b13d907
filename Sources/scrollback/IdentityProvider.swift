import ArgumentParser
import Foundation
import ScrollbackModels
import ScrollbackServer

/// `scrollback idp`: an identity provider of one's own, to try
/// `SCROLLBACK_JWT_JWKS_URL` without one (docs/identity.md).
struct IdentityProvider: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "idp",
        abstract: "Stand in for an identity provider: print the key set of an ES256 key, or a token signed with it.",
        subcommands: [KeySet.self, IssueToken.self])

    struct Key: ParsableArguments {
        @Option(help: "An EC P-256 private key in PEM (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out idp.pem).")
        var key: String

        @Option(help: "The key's id in the key set (`kid`).")
        var kid = "local-1"

        func issuer() throws -> LocalIssuer {
            let pem: String
            do {
                pem = try String(contentsOfFile: key, encoding: .utf8)
            } catch {
                throw ValidationError("--key: \(key) cannot be read (\(error.localizedDescription)).")
            }
            do {
                return try LocalIssuer(pem: pem, kid: kid)
            } catch {
                throw ValidationError("--key: \(key) is not an EC P-256 private key in PEM.")
            }
        }
    }

    struct KeySet: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "jwks", abstract: "Print the JSON Web Key Set of the key's public half, to serve over http(s).")

        @OptionGroup var key: Key

        func run() async throws {
            print(try key.issuer().keySet())
        }
    }

    struct IssueToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token", abstract: "Print a token signed with the key, as a provider signs its users' tokens.")

        @OptionGroup var key: Key

        @Option(help: "The user id: \(UserID.rule).")
        var user: String

        @Option(help: "The token's `iss` (SCROLLBACK_JWT_ISSUER).")
        var issuer: String

        @Option(help: "The token's `aud` (SCROLLBACK_JWT_AUDIENCE), if any.")
        var audience: String?

        @Option(help: "The claim that holds the user id (SCROLLBACK_JWT_USER_CLAIM).")
        var userClaim = "sub"

        @Option(help: "Seconds until the token expires.")
        var ttl: Int = 3600

        func validate() throws {
            guard UserID.isValid(user) else { throw ValidationError("--user must be \(UserID.rule).") }
            guard ttl > 0 else { throw ValidationError("--ttl must be a positive number of seconds.") }
        }

        func run() async throws {
            print(
                try await key.issuer().token(
                    for: user, issuer: issuer, audience: audience, userClaim: userClaim, ttl: Double(ttl)))
        }
    }
}
