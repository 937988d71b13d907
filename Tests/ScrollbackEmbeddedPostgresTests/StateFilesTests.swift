import Foundation
import Testing

@testable import ScrollbackEmbeddedPostgres

#if canImport(Glibc)
import Glibc
#endif

/// Changing a file's owner to another user takes root; the tests that need it
/// say so instead of passing without checking anything.
let runsAsRoot = geteuid() == 0
let nobody: uid_t = 65534

/// A fresh folder under the temporary directory, removed by `body`'s end.
func withTemporaryFolder(_ body: (String) throws -> Void) throws {
    let path = NSTemporaryDirectory() + "scrollback-state-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    try body(path)
}

func fileInfo(_ path: String) -> stat? {
    var info = stat()
    return lstat(path, &info) == 0 ? info : nil
}

func permissions(_ path: String) -> mode_t? { fileInfo(path).map { $0.st_mode & 0o7777 } }

func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

/// The description of the launch error `body` throws, or nil (recorded as an
/// issue) when it throws none.
func refusal(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
    do {
        try body()
        Issue.record("nothing was refused", sourceLocation: sourceLocation)
        return nil
    } catch let error as EmbeddedPostgres.LaunchError {
        return error.description
    } catch {
        Issue.record("refused with \(error), not a launch error", sourceLocation: sourceLocation)
        return nil
    }
}

@Suite struct StateFilesTests {
    /// The process's umask, read without changing it (Linux's
    /// /proc/self/status says it).
    static func umask() -> mode_t? {
        guard let status = contents("/proc/self/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") })
        else { return nil }
        return mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
    }

    @Test func aNewStateFileIsOwnerOnlyBeforeItTakesItsName() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/jwt-secret"
            var seen: String?
            var created: mode_t?
            // The mode the file has the moment open() returns, before any
            // chmod, is the mode asked of open() less the umask: with a
            // umask that leaves others' read bit (022, the usual), it proves
            // the file was never open to others (0644 or 0666 asked would
            // show as 0644). The umask is read, never set: it is the whole
            // process's, and the tests running beside this one create files.
            let mask = try #require(Self.umask())
            #expect(mask & 0o044 == 0, "this check needs a umask that leaves group and others' read bits, as 022 does")
            let written = try StateFiles.publish(
                "secret\n", at: path, replacing: false,
                afterCreating: { temporary in
                    created = permissions(temporary)
                    #expect(fileInfo(temporary)?.st_size == 0, "seen before anything is written")
                },
                beforePublishing: { temporary in
                seen = temporary
                #expect(StateFiles.folder(of: temporary) == folder)
                #expect(permissions(temporary) == 0o600)
                #expect(fileInfo(temporary)?.st_uid == geteuid())
                #expect(contents(temporary) == "secret\n")
                #expect(fileInfo(path) == nil, "the file takes its name only once complete")
            })
            #expect(written)
            #expect(created == 0o600, "created owner-only, not narrowed to it afterwards")
            #expect(permissions(path) == 0o600)
            #expect(contents(path) == "secret\n")
            #expect(seen.flatMap(fileInfo) == nil, "the temporary name is gone")
        }
    }

    @Test func aLinkAtTheTemporaryNameIsNeverWrittenThrough() throws {
        try withTemporaryFolder { folder in
            let victim = folder + "/victim"
            try "untouched\n".write(toFile: victim, atomically: false, encoding: .utf8)
            chmod(victim, 0o644)
            try FileManager.default.createSymbolicLink(atPath: folder + "/.planted", withDestinationPath: victim)
            var names = [".planted", ".fresh"].makeIterator()
            let path = folder + "/postgres-password"
            #expect(try StateFiles.publish("secret\n", at: path, replacing: false, temporaryName: { names.next()! }))
            #expect(contents(victim) == "untouched\n")
            #expect(permissions(victim) == 0o644)
            #expect(fileInfo(folder + "/.planted").map { $0.st_mode & S_IFMT == S_IFLNK } == true)
            #expect(contents(path) == "secret\n")
            // With nothing but planted names there is no file at all.
            let none = refusal {
                _ = try StateFiles.publish("secret\n", at: folder + "/other", replacing: true, temporaryName: { ".planted" })
            }
            #expect(none?.contains("could not create a new file next to") == true)
            #expect(contents(victim) == "untouched\n")
        }
    }

    @Test func aGeneratedSecretIsMadeOnceEvenWhenTheFolderIsNew() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/new/state/jwt-secret"
            let first = try StateFiles.readOrCreateSecret(at: path)
            #expect(first.count == 64 && first.allSatisfy(\.isHexDigit))
            #expect(permissions(folder + "/new/state") == 0o700)
            #expect(permissions(path) == 0o600)
            #expect(try StateFiles.readOrCreateSecret(at: path) == first)
            #expect(try StateFiles.readOrCreateSecret(at: folder + "/new/state/other") != first)
            // An empty file (a write cut short) is replaced by a new secret.
            let empty = folder + "/new/state/empty"
            #expect(try StateFiles.publish("", at: empty, replacing: false))
            #expect(try StateFiles.readOrCreateSecret(at: empty).count == 64)
        }
    }

    @Test func aSecretOthersCanReadIsRefusedWithTheChmodThatFixesIt() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/jwt-secret"
            let secret = try StateFiles.readOrCreateSecret(at: path)
            chmod(path, 0o644)
            let message = refusal { _ = try StateFiles.readOrCreateSecret(at: path) }
            #expect(message?.contains("mode 0644") == true)
            #expect(message?.contains("chmod 600 \(path)") == true)
            #expect(contents(path)?.hasPrefix(secret) == true, "the file is left as it was")
            chmod(path, 0o640)
            #expect(refusal { _ = try StateFiles.readOrCreateSecret(at: path) }?.contains("chmod 600 \(path)") == true)
            chmod(path, 0o600)
            #expect(try StateFiles.readOrCreateSecret(at: path) == secret)
        }
    }

    @Test(.enabled(if: runsAsRoot, "giving a file to another user takes root"))
    func aSecretOwnedByAnotherUserIsRefusedWithTheChownThatFixesIt() throws {
        try withTemporaryFolder { folder in
            let path = folder + "/jwt-secret"
            let secret = try StateFiles.readOrCreateSecret(at: path)
            chown(path, nobody, gid_t(nobody))
            let message = refusal { _ = try StateFiles.readOrCreateSecret(at: path) }
            #expect(message?.contains("uid \(nobody)") == true)
            #expect(message?.contains("chown root \(path)") == true)
            chown(path, 0, 0)
            #expect(try StateFiles.readOrCreateSecret(at: path) == secret)
        }
    }

    @Test func aLinkInPlaceOfAStateFileIsRefusedAndNotFollowed() throws {
        try withTemporaryFolder { folder in
            let real = folder + "/real-secret"
            #expect(try StateFiles.publish("kept\n", at: real, replacing: false))
            let path = folder + "/jwt-secret"
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: real)
            let message = refusal { _ = try StateFiles.readOrCreateSecret(at: path) }
            #expect(message?.contains("symbolic link") == true)
            #expect(message?.contains("mv \(real) \(path)") == true)
            // Nor is a link replaced by a write (the owner file's).
            #expect(refusal { try StateFiles.write("1\n", to: path) }?.contains("symbolic link") == true)
            #expect(contents(real) == "kept\n")
            // A link to nothing is refused too, and nothing is made where it points.
            let dangling = folder + "/dangling"
            try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: folder + "/made")
            #expect(refusal { _ = try StateFiles.readOrCreateSecret(at: dangling) }?.contains("rm \(dangling)") == true)
            #expect(fileInfo(folder + "/made") == nil)
        }
    }

    @Test func aStateFolderThatIsALinkIsRefused() throws {
        try withTemporaryFolder { folder in
            let real = folder + "/real"
            try StateFiles.prepareDirectory(real, role: .stateDirectory)
            let link = folder + "/state"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
            let message = refusal { _ = try StateFiles.readOrCreateSecret(at: link + "/jwt-secret") }
            #expect(message?.contains("symbolic link") == true)
            #expect(message?.contains("SCROLLBACK_STATE_DIR=\(real)") == true)
            // A trailing slash does not lead through the link either.
            #expect(refusal { try StateFiles.prepareDirectory(link + "/", role: .stateDirectory) } != nil)
            #expect(fileInfo(real + "/jwt-secret") == nil)
        }
    }

    @Test func aStateFolderOthersCanWriteToIsRefused() throws {
        try withTemporaryFolder { folder in
            let state = folder + "/state"
            try StateFiles.prepareDirectory(state, role: .stateDirectory)
            #expect(permissions(state) == 0o700)
            chmod(state, 0o777)
            let message = refusal { _ = try StateFiles.readOrCreateSecret(at: state + "/jwt-secret") }
            #expect(message?.contains("chmod 700 \(state)") == true)
        }
    }

    @Test(.enabled(if: runsAsRoot, "giving a folder to another user takes root"))
    func aStateFolderOfAnotherUserIsRefused() throws {
        try withTemporaryFolder { folder in
            let state = folder + "/state"
            try StateFiles.prepareDirectory(state, role: .stateDirectory)
            chown(state, nobody, gid_t(nobody))
            let message = refusal { _ = try StateFiles.readOrCreateSecret(at: state + "/jwt-secret") }
            #expect(message?.contains("chown root \(state)") == true)
            #expect(fileInfo(state + "/jwt-secret") == nil)
        }
    }
}
