import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The account that runs the PostgreSQL server programs: the current user, or
/// the `postgres` system user when this process is root (initdb and postgres
/// refuse to run as root).
struct ServiceAccount: Sendable {
    var userName: String?
    var uid: uid_t
    var gid: gid_t

    var switchesUser: Bool { userName != nil }

    static func forCurrentProcess() throws -> ServiceAccount {
        guard geteuid() == 0 else { return ServiceAccount(userName: nil, uid: geteuid(), gid: getegid()) }
        guard let entry = getpwnam("postgres") else {
            throw EmbeddedPostgres.LaunchError(
                description: """
                    Running as root, the embedded PostgreSQL must run as the `postgres` system user, and there \
                    is none. Install PostgreSQL from your distribution (it creates that user), run as another \
                    user, or set DATABASE_URL.
                    """)
        }
        return ServiceAccount(userName: "postgres", uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid)
    }

    /// Who the cluster's files are handed to: nil when this process runs the
    /// server programs itself.
    var fileOwner: (uid: uid_t, gid: gid_t)? { switchesUser ? (uid, gid) : nil }

    struct Result {
        var status: Int32
        var output: String
    }

    /// Runs a program as this account and returns its exit status and output.
    func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        if let userName {
            // Start in / : the server account may not be able to enter the caller's folder.
            return try Self.runAsIs(
                "/usr/sbin/runuser",
                ["-u", userName, "--", "/bin/sh", "-c", #"cd / && exec "$0" "$@""#, executable] + arguments,
                environment: environment)
        }
        return try Self.runAsIs(executable, arguments, environment: environment)
    }

    /// Runs a program as the current user and waits for it. The child is
    /// spawned and reaped directly (`posix_spawn`, `waitpid`): `pg_ctl start`
    /// leaves a server behind that inherits the child's descriptors, which
    /// would keep Foundation's `Process` waiting forever. Output goes to a file
    /// for the same reason.
    static func runAsIs(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> Result
    {
        let outputPath = NSTemporaryDirectory() + "scrollback-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out"
        defer { unlink(outputPath) }
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw EmbeddedPostgres.LaunchError(description: "could not run \(executable): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED / WEXITSTATUS, spelled out (they are C macros).
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: exitStatus, output: output)
    }
}
