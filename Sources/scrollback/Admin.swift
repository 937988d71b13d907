import ArgumentParser
import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackServer

/// The operator's calls from the terminal, with a server token signed by
/// the same secret as serve (every call is in the audit log).
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The operator's API: import history, export or erase a user's data.",
        subcommands: [Import.self, Export.self, Erase.self, Revoke.self])

    struct Connection: ParsableArguments {
        @Option(help: "The server's address.")
        var server = "http://127.0.0.1:8080"

        @Option(help: "The name the audit log records for these calls.")
        var name = "operator"

        func client() async throws -> ScrollbackClient {
            let secret = try Startup.configuration().jwtSecret ?? ""
            let authority = try await TokenAuthority(secret: secret)
            let name = self.name
            var client = ScrollbackClient(baseURL: server) { try await authority.serverToken(named: name, ttl: 3600) }
            client.completionQueue = nil
            return client
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Import history from an NDJSON file (docs/operations.md says what its lines hold).",
            discussion: "Nothing is stored when any line has a problem: they are listed by line number. Importing the same file again changes nothing.")

        @Argument(help: "The NDJSON file.")
        var file: String

        @Flag(help: "Check the file and report what would be stored; store nothing.")
        var dryRun = false

        @OptionGroup var connection: Connection

        func run() async throws {
            let client = try await connection.client()
            let started = ContinuousClock.now
            let bar = ProgressBar()
            let report = try await client.importHistory(from: URL(fileURLWithPath: file), dryRun: dryRun) { sent, total in
                bar.show(sent, of: total)
                if sent == total { bar.sent() }
            }
            bar.finish()
            let seconds = (ContinuousClock.now - started) / .seconds(1)
            for problem in report.problems { print("line \(problem.line): \(problem.message)") }
            if report.problemCount > report.problems.count {
                print("... and \(report.problemCount - report.problems.count) more problems")
            }
            let verb = report.dryRun ? "would store" : "stored"
            print(
                "\(report.lines) lines in \(String(format: "%.1f", seconds)) s: \(report.problemCount) problems; "
                    + (report.problemCount > 0 && !report.dryRun
                        ? "nothing stored"
                        : "\(verb) \(report.conversations) conversations, \(report.members) members, \(report.messages) messages (\(Int(Double(report.messages) / max(seconds, 0.001))) a second), \(report.reactions) reactions, \(report.readMarkers) read markers; \(report.alreadyImported) conversations imported before"))
            if report.problemCount > 0 { throw ExitCode(1) }
        }
    }

    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write everything about a user as NDJSON (to standard output, or --output).")

        @Argument(help: "The user id.")
        var user: String

        @Option(help: "The file to write (default: standard output).")
        var output: String?

        @OptionGroup var connection: Connection

        func run() async throws {
            let client = try await connection.client()
            let encoder = ScrollbackJSON.encoder()
            let handle: FileHandle
            if let output {
                FileManager.default.createFile(atPath: output, contents: nil)
                guard let opened = FileHandle(forWritingAtPath: output) else { throw ValidationError("cannot write \(output)") }
                handle = opened
            } else {
                handle = FileHandle.standardOutput
            }
            let count = try await client.exportUser(user) { record in
                var line = try encoder.encode(record)
                line.append(UInt8(ascii: "\n"))
                try handle.write(contentsOf: line)
            }
            if output != nil { try handle.close() }
            FileHandle.standardError.write(Data("exported \(count) records of \(user)\n".utf8))
        }
    }

    struct Erase: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Erase a user's personal data; their messages stay as tombstones.")

        @Argument(help: "The user id.")
        var user: String

        @OptionGroup var connection: Connection

        func run() async throws {
            let erasure = try await connection.client().eraseUser(user)
            print(
                "erased \(erasure.userId): removed from \(erasure.conversations) conversations, \(erasure.messages) messages erased, \(erasure.reactions) reactions and \(erasure.devices) devices removed")
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke a user's tokens issued before now: they answer 401, and the user's sockets close, on every instance.")

        @Argument(help: "The user id.")
        var user: String

        @OptionGroup var connection: Connection

        func run() async throws {
            let revocation = try await connection.client().revokeTokens(of: user)
            print("revoked \(revocation.userId): tokens issued before \(revocation.revokedBefore.formatted(.iso8601)) are refused")
        }
    }
}

/// A one-line progress bar on standard error, redrawn at most ten times a second.
final class ProgressBar: @unchecked Sendable {
    private let lock = NSLock()
    private var lastDrawn = ContinuousClock.now - .seconds(1)
    private var announced = false

    func show(_ done: Int64, of total: Int64) {
        lock.lock()
        defer { lock.unlock() }
        guard ContinuousClock.now - lastDrawn >= .milliseconds(100) || done == total else { return }
        lastDrawn = .now
        let share = total > 0 ? Double(done) / Double(total) : 1
        let width = 30
        let filled = Int(share * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line = String(format: "\r[%@] %3d%% %.1f of %.1f MB", bar, Int(share * 100), Double(done) / 1e6, Double(total) / 1e6)
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        FileHandle.standardError.write(Data("\n".utf8))
    }

    /// The last byte went out: the server checks and stores the lines now.
    func sent() {
        lock.lock()
        defer { lock.unlock() }
        guard !announced else { return }
        announced = true
        FileHandle.standardError.write(Data("\nall sent; the server checks and stores the lines...".utf8))
    }
}
