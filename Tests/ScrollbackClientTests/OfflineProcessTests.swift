import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The offline store across a real process restart: a process of its own
/// (`scrollback-offline-probe`) writes three messages with the server away
/// and is killed (SIGKILL, as the system kills a phone app); started again
/// with the server back, it sends them: each stored once, in order.
@Suite struct OfflineProcessTests {
    /// The probe, built beside the tests by `swift test`.
    static var probe: URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("scrollback-offline-probe")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return URL(fileURLWithPath: ".build/debug/scrollback-offline-probe")
    }

    /// A running probe and the lines it printed.
    final class Probe: Sendable {
        let process: Process
        private let lines = NIOLockedValueBox<[String]>([])

        init(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = OfflineProcessTests.probe
            process.arguments = arguments
            let output = Pipe()
            process.standardOutput = output
            self.process = process
            let lines = self.lines
            output.fileHandleForReading.readabilityHandler = { handle in
                let text = String(decoding: handle.availableData, as: UTF8.self)
                lines.withLockedValue { $0 += text.split(separator: "\n").map(String.init) }
            }
            try process.run()
        }

        var printed: [String] { lines.withLockedValue { $0 } }

        func kill() {
            _ = Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        /// Waits for the process to end by itself; its exit status.
        func exit(within timeout: Duration) async throws -> Int32 {
            let deadline = ContinuousClock.now + timeout
            while process.isRunning {
                guard ContinuousClock.now < deadline else {
                    kill()
                    Issue.record("the probe did not end within \(timeout); it printed \(printed)")
                    return -1
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            return process.terminationStatus
        }
    }

    @Test func messagesWrittenOfflineSurviveAKilledProcessAndAreStoredOnceInOrder() async throws {
        try await OfflineFeedTests.run(messages: 2) { setup in
            let (id, proxy) = (setup.id, setup.proxy)
            let token = try await setup.cluster.token("bob")
            let common = [setup.path, "http://127.0.0.1:\(proxy.port)", token, id.uuidString.lowercased(), "bob"]

            setup.serverAway(true)
            let first = try Probe(common + ["send", "one", "two", "three"])
            try await until("the three on disk") { first.printed.contains("queued 3") }
            // Give it a moment of failing to send, then kill it.
            try await Task.sleep(for: .milliseconds(500))
            first.kill()
            #expect(!first.printed.contains("sent"))
            let waiting = try OfflineStore(path: setup.path).outbox(of: id)
            #expect(waiting.map(\.body) == ["one", "two", "three"], "the outbox on disk after the kill")

            setup.serverAway(false)
            let second = try Probe(common + ["drain"])
            #expect(try await second.exit(within: .seconds(90)) == 0, "the second process printed \(second.printed)")
            #expect(second.printed.contains("sent"))
            let stored = try await setup.alice.page(of: id).messages.sorted { $0.seq < $1.seq }
            #expect(stored.map(\.body) == ["bulk 1", "bulk 2", "one", "two", "three"])
            #expect(try OfflineStore(path: setup.path).outbox(of: id).isEmpty)
        }
    }
}
