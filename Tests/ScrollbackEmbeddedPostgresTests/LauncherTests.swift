import Foundation
import ScrollbackEmbeddedPostgres
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct LauncherTests {
    func temporaryFolder() throws -> String {
        let path = NSTemporaryDirectory() + "scrollback-launcher-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func withoutServerProgramsTheErrorSaysHowToInstallThemOrSetDatabaseURL() throws {
        let empty = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        do {
            _ = try EmbeddedPostgres.findServerBinaries(searchPath: empty, versionsFolder: empty + "/none")
            Issue.record("found server programs in an empty folder")
        } catch let error as EmbeddedPostgres.LaunchError {
            #expect(error.description.contains("apt-get install -y postgresql"))
            #expect(error.description.contains("DATABASE_URL"))
        }
    }

    @Test func programsLinkedOntoThePathLeadToTheFolderThatHasThemAll() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A versions folder like /usr/lib/postgresql/NN/bin, with every program...
        let real = folder + "/lib/16/bin"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: true)
        for program in ["initdb", "pg_ctl", "postgres", "createdb"] {
            #expect(FileManager.default.createFile(atPath: "\(real)/\(program)", contents: Data("#!/bin/sh\n".utf8)))
            chmod("\(real)/\(program)", 0o755)
        }
        #expect(try EmbeddedPostgres.findServerBinaries(searchPath: folder + "/nothing", versionsFolder: folder + "/lib") == real)
        // ...and a PATH folder holding links to three of them only.
        let linked = folder + "/bin"
        try FileManager.default.createDirectory(atPath: linked, withIntermediateDirectories: true)
        for program in ["initdb", "pg_ctl", "postgres"] {
            try FileManager.default.createSymbolicLink(atPath: "\(linked)/\(program)", withDestinationPath: "\(real)/\(program)")
        }
        let found = try EmbeddedPostgres.findServerBinaries(searchPath: linked, versionsFolder: folder + "/none")
        #expect(URL(fileURLWithPath: found).standardizedFileURL.path == URL(fileURLWithPath: real).standardizedFileURL.path)
    }
}
