import ArgumentParser
import Foundation
import ScrollbackServer
import ScrollbackStore

struct Webhooks: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Try webhooks out: receive the server's events and check their signatures.",
        subcommands: [Listen.self])

    struct Listen: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Receive webhook POSTs on 127.0.0.1, verify each signature and print the events.",
            discussion: """
                Start the server with SCROLLBACK_WEBHOOK_URL=http://127.0.0.1:PORT/ and \
                SCROLLBACK_WEBHOOK_SECRET=SECRET; every change then prints here. A POST whose \
                signature does not verify is answered 401 and printed as refused.
                """)

        @Option(help: "The port to listen on.") var port: Int = 9000
        @Option(help: "The secret the server signs with (SCROLLBACK_WEBHOOK_SECRET).") var secret: String

        func run() async throws {
            guard (0...65_535).contains(port) else { throw ValidationError("--port must be from 0 to 65535.") }
            guard secret.utf8.count >= 16 else { throw ValidationError("--secret must be at least 16 bytes.") }
            let configuration = try Startup.configuration()
            let logger = configuration.logger("scrollback-webhooks")
            try await runWebhookListener(
                port: port, secret: secret, logger: logger,
                onRunning: { port in
                    FileHandle.standardOutput.write(Data("Listening for webhooks on http://127.0.0.1:\(port)/\n".utf8))
                },
                print: { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) })
        }
    }
}

struct Outbox: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The outbox of events for webhooks and push: what waits, and replaying dead events.",
        subcommands: [Status.self, Replay.self])

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print each sink's pending and dead events.")

        func run() async throws {
            try await withStore { store in
                for sink in try await store.outboxSinks() {
                    let counts = try await store.outboxCounts(sink)
                    print(
                        "\(sink.rawValue): \(counts.pending) pending (the oldest waiting \(Int(counts.oldestPendingSeconds)) s), \(counts.dead) dead")
                }
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make dead events pending again: every dead event of the sink, or those named.")

        @Option(help: "webhook or push.") var sink: String = "webhook"
        @Option(name: .customLong("event"), help: "An event id to replay (repeat for several); all dead ones when none.")
        var events: [Int64] = []

        func run() async throws {
            guard let sink = OutboxSink(rawValue: sink) else { throw ValidationError("--sink must be webhook or push.") }
            try await withStore { store in
                let count = try await store.replayOutbox(sink, events: events.isEmpty ? nil : events)
                print("\(count) dead event(s) of \(sink.rawValue) are pending again.")
            }
        }
    }

    static func withStore(_ body: @escaping @Sendable (ScrollbackStore) async throws -> Void) async throws {
        let configuration = try Startup.configuration()
        let logger = configuration.logger("scrollback")
        let database = try Startup.database(configuration, logger: logger)
        defer { if let (launcher, running) = database.embedded { launcher.stop(running) } }
        let store = ScrollbackStore(url: database.url, options: configuration.store, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            try await store.migrate()
            try await body(store)
        }
    }
}
