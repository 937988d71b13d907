import Foundation
import Logging
import Testing

@testable import ScrollbackEmbeddedPostgres

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ClusterIsolationTests {
    /// What a root process uses: another account runs the server programs
    /// (here `nobody`, whose group the folders are opened to).
    let serviceAccount = ServiceAccount(userName: "nobody", uid: nobody, gid: gid_t(nobody))

    func launcher(_ stateDirectory: String) -> EmbeddedPostgres {
        EmbeddedPostgres(stateDirectory: stateDirectory, logger: Logger(label: "test"))
    }

    /// A state folder (not made yet) inside a folder the service account
    /// cannot enter, and the fallback folder of its cluster, removed after
    /// `body` (a link there, not what it points to).
    func withUnreachableStateFolder(_ body: (_ folder: String, _ state: String, _ fallback: String) throws -> Void) throws {
        try withTemporaryFolder { folder in
            chmod(folder, 0o700)
            let state = folder + "/state"
            let fallback = EmbeddedPostgres.fallbackFolder(for: state)
            defer { try? FileManager.default.removeItem(atPath: fallback) }
            try body(folder, state, fallback)
        }
    }

    // MARK: - Child environment

    let inherited = [
        "SCROLLBACK_JWT_SECRET": "jwt", "DATABASE_URL": "postgres://u:p@db/x", "PGPASSWORD": "inherited",
        "PGHOST": "elsewhere", "PGOPTIONS": "-c log_statement=all", "HOME": "/root", "PATH": "/opt/bin:/usr/bin",
        "TZ": "Europe/Paris", "LANG": "fr_FR.UTF-8", "LD_LIBRARY_PATH": "/opt/pg/lib",
    ]

    @Test func serverProgramsGetOnlyASearchPathTheCLocaleTheTimeZoneAndTheLibraryPath() {
        for program in ["/usr/lib/postgresql/16/bin/initdb", "pg_ctl", "/usr/bin/postgres", "pg_config"] {
            let environment = ServiceAccount.environment(forProgram: program, password: "secret", inherited: inherited)
            #expect(
                environment == ["PATH": "/opt/bin:/usr/bin", "LC_ALL": "C", "TZ": "Europe/Paris", "LD_LIBRARY_PATH": "/opt/pg/lib"],
                "\(program)")
        }
        let withoutZone = ServiceAccount.environment(forProgram: "initdb", password: nil, inherited: [:])
        #expect(Set(withoutZone.keys) == ["PATH", "LC_ALL"])
    }

    @Test func onlyTheProgramsThatConnectGetThePassword() {
        for program in ["/usr/lib/postgresql/16/bin/createdb", "psql"] {
            let environment = ServiceAccount.environment(forProgram: program, password: "secret", inherited: inherited)
            #expect(environment["PGPASSWORD"] == "secret", "\(program)")
            #expect(environment["SCROLLBACK_JWT_SECRET"] == nil && environment["DATABASE_URL"] == nil)
            #expect(Set(environment.keys) == ["PATH", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "PGPASSWORD"])
        }
        // Never the inherited one, even when there is none to give.
        #expect(ServiceAccount.environment(forProgram: "createdb", password: nil, inherited: inherited)["PGPASSWORD"] == nil)
    }

    @Test func aProgramRunsWithThatEnvironmentAndNothingOfThisProcess() throws {
        let account = ServiceAccount(userName: nil, uid: geteuid(), gid: getegid())
        let result = try account.run("/usr/bin/env", [], password: "secret")
        #expect(result.status == 0)
        let names = Set(result.output.split(separator: "\n").compactMap { $0.split(separator: "=").first.map(String.init) })
        let passed = ["TZ", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH"].filter { ProcessInfo.processInfo.environment[$0] != nil }
        let expected = Set(["PATH", "LC_ALL"] + passed)
        #expect(names == expected)
    }

    /// Nor any descriptor but standard input, output and error: the server
    /// `pg_ctl start` leaves behind would otherwise hold this process's
    /// sockets (SwiftNIO opens them without close-on-exec) for as long as it
    /// runs, and a port this process listened on could not be bound again.
    @Test func aProgramRunsWithNoOtherDescriptorOfThisProcess() throws {
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socketDescriptor > 2)
        defer { close(socketDescriptor) }
        #expect(fcntl(socketDescriptor, F_GETFD) & FD_CLOEXEC == 0)

        let listing = try ServiceAccount.runAsIs("/bin/ls", ["/proc/self/fd"], environment: [:])
        #expect(listing.status == 0, "\(listing.output)")
        let descriptors = Set(listing.output.split(whereSeparator: \.isNewline).compactMap { Int($0) })
        #expect(!descriptors.contains(Int(socketDescriptor)), "the socket went to the child")
        // 0, 1 and 2, and the one ls opens to read the folder.
        #expect(descriptors == [0, 1, 2, 3], "the child had \(descriptors.sorted())")
    }

    // MARK: - Listening

    @Test func everyStartListensOnLoopbackOnlyWithoutAUnixSocket() {
        let options = EmbeddedPostgres.serverOptions(port: 54321, maxConnections: 50)
        #expect(options == "-p 54321 -c max_connections=50 -c listen_addresses='127.0.0.1' -c unix_socket_directories=''")
    }

    // MARK: - State and cluster folders

    @Test func theStateFolderIsPrivateAndHoldsTheDataOfItsOwnUser() throws {
        try withTemporaryFolder { folder in
            let state = folder + "/state"
            try StateFiles.prepareDirectory(state, role: .stateDirectory)
            chmod(state, 0o755)
            let current = ServiceAccount(userName: nil, uid: geteuid(), gid: getegid())
            #expect(try launcher(state).prepareDirectories(account: current) == state + "/postgres")
            #expect(permissions(state) == 0o700)
        }
    }

    @Test(.enabled(if: runsAsRoot, "only root hands the cluster to another account"))
    func aReachableStateFolderLetsOnlyTheServiceAccountThrough() throws {
        try withTemporaryFolder { folder in
            chmod(folder, 0o711)
            let state = folder + "/state"
            let dataDirectory = try launcher(state).prepareDirectories(account: serviceAccount)
            #expect(dataDirectory == state + "/postgres")
            #expect(permissions(state) == 0o710)
            #expect(fileInfo(state)?.st_uid == geteuid())
            #expect(fileInfo(state)?.st_gid == serviceAccount.gid)
        }
    }

    @Test(.enabled(if: runsAsRoot, "only root hands the cluster to another account"))
    func anUnreachableStateFolderKeepsItsClusterInAFolderMadeFreshAndFoundAgain() throws {
        try withUnreachableStateFolder { _, state, fallback in
            let dataDirectory = try launcher(state).prepareDirectories(account: serviceAccount)
            #expect(dataDirectory == fallback + "/postgres")
            #expect(permissions(state) == 0o700)
            #expect(permissions(fallback) == 0o710)
            #expect(fileInfo(fallback)?.st_uid == geteuid())
            #expect(fileInfo(fallback)?.st_gid == serviceAccount.gid)
            // A restart adopts its own folder.
            let again = try launcher(state).prepareDirectories(account: serviceAccount)
            #expect(again == fallback + "/postgres")
        }
    }

    @Test(.enabled(if: runsAsRoot, "only root hands the cluster to another account"))
    func aFallbackFolderThatIsALinkIsRefusedAndItsTargetUntouched() throws {
        try withUnreachableStateFolder { folder, state, fallback in
            let target = folder + "/elsewhere"
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: false)
            chmod(target, 0o755)
            try FileManager.default.createSymbolicLink(atPath: fallback, withDestinationPath: target)
            let message = refusal { _ = try launcher(state).prepareDirectories(account: serviceAccount) }
            #expect(message?.contains("symbolic link") == true)
            #expect(message?.contains("rm \(fallback)") == true)
            #expect(permissions(target) == 0o755)
            #expect(fileInfo(target)?.st_gid == getegid())
            #expect(try FileManager.default.contentsOfDirectory(atPath: target).isEmpty)
        }
    }

    @Test(.enabled(if: runsAsRoot, "making a folder as another user takes root"))
    func aFallbackFolderMadeByAnotherUserIsRefused() throws {
        try withUnreachableStateFolder { _, state, fallback in
            #expect(mkdir(fallback, 0o700) == 0)
            chown(fallback, nobody, gid_t(nobody))
            let message = refusal { _ = try launcher(state).prepareDirectories(account: serviceAccount) }
            #expect(message?.contains("uid \(nobody)") == true)
            #expect(message?.contains("rm -rf \(fallback)") == true)
            #expect(fileInfo(fallback)?.st_uid == nobody, "left as it was")
            // Nor is a folder of ours that others can write to.
            chown(fallback, geteuid(), getegid())
            chmod(fallback, 0o777)
            #expect(refusal { _ = try launcher(state).prepareDirectories(account: serviceAccount) }?.contains("mode 0777") == true)
        }
    }

    @Test(.enabled(if: runsAsRoot, "making a folder as another user takes root"))
    func aDataDirectoryOfAStrangerIsRefused() throws {
        try withTemporaryFolder { folder in
            let data = folder + "/postgres"
            try StateFiles.prepareDirectory(
                data, role: .clusterFolder, owners: [geteuid(), serviceAccount.uid], owner: serviceAccount.fileOwner,
                mode: 0o700)
            #expect(fileInfo(data)?.st_uid == serviceAccount.uid)
            #expect(permissions(data) == 0o700)
            chown(data, 1234, 1234)
            #expect(refusal {
                try StateFiles.prepareDirectory(data, role: .clusterFolder, owners: [geteuid(), serviceAccount.uid])
            }?.contains("uid 1234") == true)
        }
    }
}
