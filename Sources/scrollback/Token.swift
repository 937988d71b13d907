import ArgumentParser
import ScrollbackModels
import ScrollbackServer

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a signed bearer token for a user (same secret as serve).")

    @Option(help: "The user id: \(UserID.rule).")
    var user: String

    @Option(help: "Seconds until the token expires.")
    var ttl: Int = 3600

    func validate() throws {
        guard UserID.isValid(user) else { throw ValidationError("--user must be \(UserID.rule).") }
        guard ttl > 0 else { throw ValidationError("--ttl must be a positive number of seconds.") }
    }

    func run() async throws {
        let secret = try Startup.configuration().jwtSecret ?? ""
        print(try await TokenAuthority(secret: secret).token(for: user, ttl: Double(ttl)))
    }
}
