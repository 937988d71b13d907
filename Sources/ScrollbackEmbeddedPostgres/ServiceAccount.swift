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
    /// `password` reaches the program only if it connects to the server.
    func run(_ executable: String, _ arguments: [String], password: String? = nil) throws -> Result {
        let environment = Self.environment(forProgram: executable, password: password)
        if let userName {
            // Start in / : the server account may not be able to enter the caller's folder.
            return try Self.runAsIs(
                "/usr/sbin/runuser",
                ["-u", userName, "--", "/bin/sh", "-c", #"cd / && exec "$0" "$@""#, executable] + arguments,
                environment: environment)
        }
        return try Self.runAsIs(executable, arguments, environment: environment)
    }

    /// The programs that connect to the server, and so need its password.
    static let programsThatConnect: Set<String> = ["createdb", "psql", "pg_basebackup"]

    /// The whole environment of a PostgreSQL program: a search path, the C
    /// locale (the messages read here, like createdb's "already exists", stay
    /// in English), the time zone and library path when set, and the database password
    /// for the programs that connect. Nothing else of this process's
    /// environment: it holds secrets (SCROLLBACK_JWT_SECRET, DATABASE_URL) and
    /// PG* variables that would point the programs elsewhere.
    static func environment(
        forProgram executable: String, password: String?,
        inherited: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String: String] {
        var environment = ["PATH": inherited["PATH"] ?? "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"]
        // The time zone, and where an installation outside the system's
        // paths finds its libraries: neither is a secret.
        for name in ["TZ", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"] {
            if let value = inherited[name] { environment[name] = value }
        }
        if let password, programsThatConnect.contains((executable as NSString).lastPathComponent) {
            environment["PGPASSWORD"] = password
        }
        return environment
    }

    /// Runs a program as the current user with exactly `environment`, and
    /// waits for it. The child is spawned and reaped directly (`posix_spawn`,
    /// `waitpid`): `pg_ctl start` leaves a server behind that inherits the
    /// child's descriptors, which would keep Foundation's `Process` waiting
    /// forever. Output goes to a file for the same reason: one made
    /// exclusively and unlinked at once, so no other process can
    /// put a link in its place or read it.
    static func runAsIs(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Result {
        let outputPath = NSTemporaryDirectory() + "scrollback-output-\(UUID().uuidString)"
        let output = open(outputPath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else { throw StateFiles.failure("could not make a file for the output of", executable) }
        unlink(outputPath)
        defer { close(output) }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        // Nothing else of this process goes to the child: the server that
        // `pg_ctl start` leaves behind would keep every socket open here
        // (SwiftNIO opens them without close-on-exec) for as long as it
        // runs, and a port this process listened on could not be bound
        // again after its listener closed.
        closeInChild(from: 3, &actions)
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard spawned == 0 else {
            throw EmbeddedPostgres.LaunchError(description: "could not run \(executable): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        lseek(output, 0, SEEK_SET)
        let text = (try? StateFiles.readAll(output, path: executable)) ?? ""
        // WIFEXITED / WEXITSTATUS, spelled out (they are C macros).
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: exitStatus, output: text)
    }

    /// Adds the action that closes every descriptor from `first` on in the
    /// child (glibc 2.34 and later; Swift's Glibc module does not declare
    /// it, so it is looked up). Without it, every descriptor of this process
    /// is marked close-on-exec instead.
    private static func closeInChild(from first: Int32, _ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            if closeFrom(&actions, first) == 0 { return }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in names.compactMap({ Int32($0) }) where descriptor >= first {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}
