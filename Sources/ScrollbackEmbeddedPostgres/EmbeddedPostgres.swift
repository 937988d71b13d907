import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL cluster that Scrollback starts itself when no
/// `DATABASE_URL` is given: `scrollback serve` keeps it under
/// `.scrollback/postgres` in the working directory, the tests under
/// `.scrollback/test-postgres`.
///
/// The server binaries are found on PATH, through `pg_config --bindir`, or
/// under `/usr/lib/postgresql/*/bin`. `initdb` and `postgres` refuse to run as
/// root, so a root process runs them as the `postgres` system user. The
/// cluster listens on a free loopback port, TCP only (127.0.0.1, no Unix
/// socket), with a password kept in the state folder. The state folder is
/// private (mode 0700; 0710 with the postgres group when that account keeps
/// its data inside), its files are owner-only from their first byte, and a
/// link, a foreign owner or a loose mode found there is refused with the
/// command that fixes it (see `StateFiles`). The programs run with a minimal
/// environment (`ServiceAccount.environment(forProgram:password:inherited:)`).
public struct EmbeddedPostgres: Sendable {
    /// What the launcher needs to tune the cluster.
    public struct Options: Sendable {
        /// Trade durability for speed (fsync off): for throwaway test clusters.
        public var durable: Bool = true
        public var maxConnections: Int = 200
        /// Listen here instead of on a free port picked at start.
        public var port: Int? = nil

        public init(durable: Bool = true, maxConnections: Int = 200, port: Int? = nil) {
            self.durable = durable
            self.maxConnections = maxConnections
            self.port = port
        }
    }

    /// A cluster that is up.
    public struct Running: Sendable {
        public var host: String
        public var port: Int
        public var username: String
        public var password: String
        public var database: String
        public var dataDirectory: String
        /// False when the cluster was already running (another process of
        /// ours started it); then `stop` leaves it alone.
        public var startedHere: Bool

        /// `postgres://user:password@127.0.0.1:port/database`
        public var url: String {
            "postgres://\(username):\(password)@\(host):\(port)/\(database)"
        }
    }

    public struct LaunchError: Error, CustomStringConvertible {
        public var description: String
    }

    static let superuser = "scrollback"
    static let databaseName = "scrollback"

    /// The state folder (`.scrollback`), holding the password file.
    public let stateDirectory: String
    /// The data directory's name inside the state folder.
    public let clusterName: String
    public let options: Options
    let logger: Logger

    public init(stateDirectory: String, clusterName: String = "postgres", options: Options = Options(), logger: Logger) {
        self.stateDirectory = stateDirectory
        self.clusterName = clusterName
        self.options = options
        self.logger = logger
    }

    /// Starts the cluster (creating it on first use), or attaches to it when it
    /// is already running.
    public func start() throws -> Running {
        let binDirectory = try Self.findServerBinaries()
        let account = try ServiceAccount.forCurrentProcess()
        let dataDirectory = try prepareDirectories(account: account)
        let password = try StateFiles.readOrCreateSecret(at: stateDirectory + "/\(clusterName)-password")

        if !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") {
            try initialize(dataDirectory: dataDirectory, binDirectory: binDirectory, password: password, account: account)
        }

        if let port = runningPort(dataDirectory: dataDirectory, binDirectory: binDirectory, account: account) {
            // Started by another process of ours: leave it to that process,
            // unless that process is gone (it crashed); then this one adopts
            // the cluster and stops it when it stops.
            let adopted = try !ownerIsAlive()
            if adopted { try recordOwnership() }
            logger.info(
                adopted ? "adopting embedded PostgreSQL left running" : "embedded PostgreSQL already running",
                metadata: ["port": "\(port)", "data": "\(dataDirectory)"])
            let running = Running(
                host: "127.0.0.1", port: port, username: Self.superuser, password: password,
                database: Self.databaseName, dataDirectory: dataDirectory, startedHere: adopted)
            try createDatabase(running, binDirectory: binDirectory, account: account)
            return running
        }

        let port = try options.port ?? Self.freeLoopbackPort()
        let running = Running(
            host: "127.0.0.1", port: port, username: Self.superuser, password: password,
            database: Self.databaseName, dataDirectory: dataDirectory, startedHere: true)
        try launch(running, binDirectory: binDirectory, account: account)
        try recordOwnership()
        // Every start makes sure of the database (as does attaching above), so
        // a first start interrupted between initdb and createdb heals.
        try createDatabase(running, binDirectory: binDirectory, account: account)
        logger.info("embedded PostgreSQL started", metadata: ["port": "\(port)", "data": "\(dataDirectory)"])
        return running
    }

    /// Stops the cluster on this data directory whoever started it (tests that
    /// take the database away use it).
    public func stopAnyRunning() throws {
        let account = try ServiceAccount.forCurrentProcess()
        let dataDirectory = try prepareDirectories(account: account)
        let binDirectory = try Self.findServerBinaries()
        guard runningPort(dataDirectory: dataDirectory, binDirectory: binDirectory, account: account) != nil else { return }
        try stopServer(dataDirectory: dataDirectory)
    }

    /// Stops a cluster this process started (or adopted); a failure is logged,
    /// since this runs on the way out.
    public func stop(_ running: Running) {
        guard running.startedHere else { return }
        do {
            try stopServer(dataDirectory: running.dataDirectory)
            logger.info("embedded PostgreSQL stopped")
        } catch {
            logger.warning("embedded PostgreSQL did not stop cleanly", metadata: ["error": "\(error)"])
        }
    }

    /// Starts the server of `running`'s data directory on its port and
    /// waits until it answers.
    func launch(_ running: Running, binDirectory: String, account: ServiceAccount) throws {
        let result = try account.run(
            binDirectory + "/pg_ctl",
            ["start", "-D", running.dataDirectory, "-w", "-t", "60", "-l", running.dataDirectory + "/scrollback-server.log",
             "-o", Self.serverOptions(port: running.port, maxConnections: options.maxConnections)])
        guard result.status == 0 else {
            let log = StateFiles.readPlainFile(at: running.dataDirectory + "/scrollback-server.log") ?? ""
            throw LaunchError(
                description: "PostgreSQL did not start (pg_ctl exited \(result.status)):\n\(result.output)\n\(log.suffix(2000))")
        }
    }

    /// Fast shutdown: open sessions are rolled back, committed data is kept.
    private func stopServer(dataDirectory: String) throws {
        let account = try ServiceAccount.forCurrentProcess()
        let result = try account.run(
            try Self.findServerBinaries() + "/pg_ctl", ["stop", "-D", dataDirectory, "-m", "fast", "-w", "-t", "60"])
        guard result.status == 0 else { throw LaunchError(description: "pg_ctl stop failed:\n\(result.output)") }
        unlink(ownerFile)
    }

    // MARK: - Ownership

    /// Holds the pid of the process that started (or adopted) the cluster.
    private var ownerFile: String { stateDirectory + "/\(clusterName).owner" }

    private func recordOwnership() throws {
        try StateFiles.write("\(getpid())\n", to: ownerFile)
    }

    private func ownerIsAlive() throws -> Bool {
        guard let text = try StateFiles.readPrivateFile(at: ownerFile),
            let pid = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
        else { return false }
        if pid == getpid() { return true }
        // A killed process nobody has reaped yet still answers kill(pid, 0);
        // on Linux its state in /proc says it is a zombie.
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let state = stat.split(separator: ")").last?.split(separator: " ").first, state == "Z"
        {
            return false
        }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    // MARK: - Steps

    /// Makes the state folder private and returns the data directory: inside
    /// the state folder when the postgres account can reach it; otherwise (a
    /// checkout under a private home, say) in a folder of its own under
    /// /var/tmp, keyed by the state folder's path so that a restart finds it.
    func prepareDirectories(account: ServiceAccount) throws -> String {
        let state = absolute(stateDirectory)
        let postgresReachesState = !account.switchesUser || Self.reachableByOthers((state as NSString).deletingLastPathComponent)
        // The postgres account passes through (0710, its group) to its data
        // directory inside; nobody else enters.
        let throughState = account.switchesUser && postgresReachesState
        try StateFiles.prepareDirectory(
            state, role: .stateDirectory, owner: throughState ? (geteuid(), account.gid) : nil,
            mode: throughState ? 0o710 : 0o700)
        if postgresReachesState { return state + "/" + clusterName }
        // A predictable name in a folder everyone can write to: adopted only
        // when it is this user's own real folder (made here, mode 0700, then
        // opened to the postgres group), never when someone else made it.
        let fallback = Self.fallbackFolder(for: state)
        try StateFiles.prepareDirectory(
            fallback, role: .clusterFolder, owner: (geteuid(), account.gid), mode: 0o710)
        logger.notice(
            "the postgres account cannot reach \(stateDirectory); keeping the embedded cluster under \(fallback)")
        return fallback + "/" + clusterName
    }

    /// Where a root process keeps the cluster of a state folder the postgres
    /// account cannot reach.
    static func fallbackFolder(for absoluteStateDirectory: String) -> String {
        "/var/tmp/scrollback-\(fnv1a(absoluteStateDirectory))"
    }

    private func initialize(dataDirectory: String, binDirectory: String, password: String, account: ServiceAccount) throws {
        logger.info("creating embedded PostgreSQL cluster", metadata: ["data": "\(dataDirectory)"])
        // Made here, or left by an initdb that did not finish: ours or the
        // postgres account's, never a link.
        try StateFiles.prepareDirectory(
            dataDirectory, role: .clusterFolder, owners: [geteuid(), account.uid], owner: account.fileOwner, mode: 0o700)
        let passwordFile = (dataDirectory as NSString).deletingLastPathComponent + "/.\(clusterName)-initdb-password"
        try StateFiles.write(password + "\n", to: passwordFile, owner: account.fileOwner)
        defer { unlink(passwordFile) }
        let result = try account.run(
            binDirectory + "/initdb",
            ["-D", dataDirectory, "-U", Self.superuser, "--pwfile=" + passwordFile, "--auth-host=scram-sha-256",
             "--auth-local=scram-sha-256", "-E", "UTF8", "--locale=C"])
        guard result.status == 0 else {
            throw LaunchError(description: "initdb failed (exit \(result.status)):\n\(result.output)")
        }
        var settings = "\n# Written by Scrollback's embedded launcher.\n"
        for (name, value) in Self.loopbackOnly { settings += "\(name) = '\(value)'\n" }
        settings += "max_connections = \(options.maxConnections)\n"
        if !options.durable {
            settings += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
        }
        // Written by initdb as the postgres account: appended to without
        // following a link that account could have put there.
        try StateFiles.append(settings, to: dataDirectory + "/postgresql.conf", owner: account.uid)
    }

    /// Where the server accepts connections: TCP on 127.0.0.1 only, and no
    /// Unix socket (no socket file in a shared folder). In postgresql.conf
    /// from initdb on, and on the command line of every start, which wins over
    /// the files, so an edited configuration cannot open the cluster to the
    /// network. pg_hba.conf, from initdb with scram-sha-256 for host and local,
    /// admits loopback addresses only.
    static let loopbackOnly: KeyValuePairs = ["listen_addresses": "127.0.0.1", "unix_socket_directories": ""]

    /// The server's options for `pg_ctl start -o` (a shell word list).
    /// max_connections on every start, not only as initdb wrote it, so a
    /// changed option takes effect on a cluster made earlier.
    static func serverOptions(port: Int, maxConnections: Int) -> String {
        (["-p \(port)", "-c max_connections=\(maxConnections)"]
            + loopbackOnly.map { "-c \($0.key)='\($0.value)'" }).joined(separator: " ")
    }

    private func createDatabase(_ running: Running, binDirectory: String, account: ServiceAccount) throws {
        let result = try account.run(
            binDirectory + "/createdb",
            ["-h", running.host, "-p", "\(running.port)", "-U", running.username, running.database],
            password: running.password)
        guard result.status == 0 || result.output.contains("already exists") else {
            throw LaunchError(description: "createdb failed (exit \(result.status)):\n\(result.output)")
        }
    }

    /// The port of a postmaster already serving this data directory, if any.
    private func runningPort(dataDirectory: String, binDirectory: String, account: ServiceAccount) -> Int? {
        guard let status = try? account.run(binDirectory + "/pg_ctl", ["status", "-D", dataDirectory]),
            status.status == 0,
            let pidFile = StateFiles.readPlainFile(at: dataDirectory + "/postmaster.pid")
        else { return nil }
        // postmaster.pid: pid, data directory, start time, port, ...
        let lines = pidFile.split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count > 3 else { return nil }
        return Int(lines[3].trimmingCharacters(in: .whitespaces))
    }

    private func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    // MARK: - Helpers

    /// The folder holding `initdb`, `pg_ctl` and `postgres`.
    public static func findServerBinaries(
        searchPath: String = ProcessInfo.processInfo.environment["PATH"] ?? "",
        versionsFolder: String = "/usr/lib/postgresql"
    ) throws -> String {
        func hasServer(_ directory: String) -> Bool {
            ["initdb", "pg_ctl", "postgres"].allSatisfy {
                FileManager.default.isExecutableFile(atPath: directory + "/" + $0)
            }
        }
        let path = searchPath
        for directory in path.split(separator: ":").map(String.init) where hasServer(directory) {
            // PATH may hold links to a few of the programs (initdb, pg_ctl,
            // postgres); the folder they point into has all of them (createdb).
            let real = URL(fileURLWithPath: directory + "/initdb").resolvingSymlinksInPath().deletingLastPathComponent().path
            return hasServer(real) ? real : directory
        }
        if let pgConfig = path.split(separator: ":").map({ $0 + "/pg_config" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }),
            let result = try? ServiceAccount.runAsIs(
                pgConfig, ["--bindir"], environment: ServiceAccount.environment(forProgram: pgConfig, password: nil)),
            result.status == 0
        {
            let directory = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            if hasServer(directory) { return directory }
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: versionsFolder)) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let directory = "\(versionsFolder)/\(version)/bin"
            if hasServer(directory) { return directory }
        }
        throw LaunchError(
            description: """
                PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found on PATH, through \
                `pg_config --bindir`, or under /usr/lib/postgresql/*/bin. Install them (Debian/Ubuntu: \
                `apt-get install -y postgresql`; macOS: `brew install postgresql@16`), or set DATABASE_URL \
                to an existing PostgreSQL database.
                """)
    }

    /// A loopback port nobody listens on right now, below the range the
    /// kernel hands out for outgoing connections and `bind` to port 0
    /// (`ip_local_port_range`): between this call and the server's own
    /// bind, no connection made meanwhile, and no other server asking for
    /// any port, can take it. Outside Linux, or when no such port is
    /// free, one the kernel picks.
    public static func freeLoopbackPort() throws -> Int {
        if let low = ephemeralPortsStart(), low > 20_000 {
            for _ in 0..<64 {
                let candidate = Int.random(in: (low / 2)..<low)
                if let port = bindLoopback(port: candidate) { return port }
            }
        }
        guard let port = bindLoopback(port: 0) else {
            throw LaunchError(description: "could not bind a loopback socket to find a free port")
        }
        return port
    }

    /// The first port of the kernel's ephemeral range; nil where it is not known.
    static func ephemeralPortsStart() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
            let first = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first
        else { return nil }
        return Int(first)
    }

    /// Binds a loopback socket to `port` (0: any) and lets it go: the port
    /// bound, or nil when it could not be.
    static func bindLoopback(port: Int) -> Int? {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// Whether every folder from / down to `path` can be entered by other users.
    static func reachableByOthers(_ path: String) -> Bool {
        var current = ""
        for component in path.split(separator: "/") {
            current += "/" + component
            var info = stat()
            guard stat(current, &info) == 0 else { return false }
            if info.st_mode & 0o001 == 0 { return false }
        }
        return true
    }

    static func fnv1a(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
