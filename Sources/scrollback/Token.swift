import ArgumentParser
import ScrollbackModels
import ScrollbackServer

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a signed bearer token for a user, or with --server the operator's (same secret as serve).")

    @Option(help: "The user id: \(UserID.rule).")
    var user: String?

    @Flag(help: "A server token: the admin routes (/v1/admin/...), and any user route on behalf of the user named by an On-Behalf-Of header. Every call with it is audited.")
    var server = false

    @Option(help: "With --server: the name the audit log records for this token's calls (\(UserID.rule)).")
    var name = "operator"

    @Option(help: "Seconds until the token expires.")
    var ttl: Int = 3600

    func validate() throws {
        if server {
            guard user == nil else { throw ValidationError("A server token acts for no user: give --name, not --user.") }
            guard UserID.isValid(name) else { throw ValidationError("--name must be \(UserID.rule).") }
        } else {
            guard let user, UserID.isValid(user) else { throw ValidationError("--user must be \(UserID.rule) (or give --server).") }
        }
        guard ttl > 0 else { throw ValidationError("--ttl must be a positive number of seconds.") }
    }

    func run() async throws {
        let secret = try Startup.configuration().jwtSecret ?? ""
        let authority = try await TokenAuthority(secret: secret)
        if server {
            print(try await authority.serverToken(named: name, ttl: Double(ttl)))
        } else {
            print(try await authority.token(for: user ?? "", ttl: Double(ttl)))
        }
    }
}
