import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Streaming standbys of an embedded cluster, and the server controls a
/// failover needs: to try replicas and failover on one machine, and for the
/// tests of both. PostgreSQL's own tools do the work (`pg_basebackup -R`,
/// `pg_ctl promote`, `pg_ctl stop -m immediate`).
extension EmbeddedPostgres {
    /// A streaming standby of `primary` (a cluster this launcher started):
    /// copied with `pg_basebackup -R -X stream` into the data folder of
    /// `clusterName` beside the primary's, started on a free loopback port,
    /// and answering (hot standby) when this returns. It has the primary's
    /// superuser, password and databases.
    public func startStandby(of primary: Running, clusterName: String) throws -> Running {
        let binDirectory = try Self.findServerBinaries()
        let account = try ServiceAccount.forCurrentProcess()
        let dataDirectory = (primary.dataDirectory as NSString).deletingLastPathComponent + "/" + clusterName
        guard !FileManager.default.fileExists(atPath: dataDirectory + "/PG_VERSION") else {
            throw LaunchError(description: "\(dataDirectory) already holds a cluster")
        }
        try StateFiles.prepareDirectory(
            dataDirectory, role: .clusterFolder, owners: [geteuid(), account.uid], owner: account.fileOwner, mode: 0o700)
        let copy = try account.run(
            binDirectory + "/pg_basebackup",
            ["-h", primary.host, "-p", "\(primary.port)", "-U", primary.username, "-D", dataDirectory, "-R",
             "-X", "stream", "-c", "fast"],
            password: primary.password)
        guard copy.status == 0 else {
            throw LaunchError(description: "pg_basebackup failed (exit \(copy.status)):\n\(copy.output)")
        }
        let port = try Self.freeLoopbackPort()
        let standby = Running(
            host: "127.0.0.1", port: port, username: primary.username, password: primary.password,
            database: primary.database, dataDirectory: dataDirectory, startedHere: true)
        try launch(standby, binDirectory: binDirectory, account: account)
        return standby
    }

    /// Starts again a server stopped by `crash` or `stop` (on its port).
    public func restart(_ running: Running) throws {
        try launch(running, binDirectory: try Self.findServerBinaries(), account: try ServiceAccount.forCurrentProcess())
    }

    /// Ends a server at once, as a crash would (`pg_ctl stop -m immediate`):
    /// its sessions are cut and nothing is flushed.
    public func crash(_ running: Running) throws {
        try control(running, ["stop", "-D", running.dataDirectory, "-m", "immediate", "-w", "-t", "60"])
    }

    /// Turns a standby into a primary (`pg_ctl promote -w`): it takes
    /// writes when this returns.
    public func promote(_ running: Running) throws {
        try control(running, ["promote", "-D", running.dataDirectory, "-w", "-t", "60"])
    }

    private func control(_ running: Running, _ arguments: [String]) throws {
        let result = try ServiceAccount.forCurrentProcess().run(try Self.findServerBinaries() + "/pg_ctl", arguments)
        guard result.status == 0 else {
            throw LaunchError(description: "pg_ctl \(arguments[0]) failed (exit \(result.status)):\n\(result.output)")
        }
    }
}
