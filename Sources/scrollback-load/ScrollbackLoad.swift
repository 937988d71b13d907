import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import ScrollbackModels

#if canImport(Glibc)
import Glibc
#endif

extension Scenario: ExpressibleByArgument {}

/// `scrollback-load`: real chat traffic against one or more running
/// instances, through the client kit only; a report of every operation's
/// latency and errors, and a check that nothing was lost, duplicated or
/// reordered. Exits non-zero when the check fails.
@main
struct ScrollbackLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scrollback-load",
        abstract: "Load a Scrollback service with chat traffic through the client kit and check what it delivered.",
        discussion: """
            Scenarios: chat (conversations with a send rate each, subscribers, readers, typing, read markers), \
            fanout (one conversation, many subscribers), idle (subscribed sockets doing nothing: server memory \
            per socket), storm (every subscriber loses its connection at once and resumes), faults (chat traffic \
            while --fault-command injects each --fault in turn, a check after each, and a table of what each did; \
            see scripts/faults). Tokens are signed \
            with SCROLLBACK_JWT_SECRET, or the secret `scrollback serve` keeps under .scrollback.
            """)

    @Argument(help: "chat, fanout, idle, storm or faults.")
    var scenario: Scenario = .chat

    @Option(name: .customLong("target"), help: "An instance's address (repeat for several; traffic is spread over them).")
    var targets: [String] = ["http://127.0.0.1:8080"]

    @Flag(help: "Allow targets that are not on this machine's loopback.")
    var allowRemote = false

    @Option(help: "How long the traffic lasts, in seconds.")
    var seconds: Int = 30

    @Option(help: "chat: users in all.")
    var users: Int = 100

    @Option(help: "chat: conversations.")
    var conversations: Int = 20

    @Option(help: "chat: members of each conversation.")
    var members: Int = 5

    @Option(help: "Messages per second: per conversation (chat, faults), in all (fanout, storm).")
    var rate: Double?

    @Option(help: "Subscribers (fanout: past 1000, the members' other devices), sockets (idle, storm).")
    var subscribers: Int = 1_000

    @Option(help: "chat: readers paging back through history.")
    var readers: Int = 10

    @Option(name: .customLong("server-pid"), help: "A server process whose memory to report (repeat for several).")
    var serverPIDs: [Int32] = []

    @Option(help: "storm: a shell command that disrupts the servers (e.g. restarts one); without it the clients drop their connections.")
    var disruptCommand: String?

    @Option(name: .customLong("fault"), help: "faults: a fault to inject (repeat, in order); its name is passed to --fault-command.")
    var faults: [String] = []

    @Option(help: "faults: the command that injects a fault: run as `COMMAND FAULT HOT_CONVERSATION_ID`, it returns once the fault is removed.")
    var faultCommand: String?

    @Option(help: "faults: an HTTP attempt that takes longer, in seconds, counts as a hang.")
    var hangAfter: Double = 15

    @Option(help: "Where to write the report as JSON.")
    var output: String?

    @Option(help: "Where `scrollback serve` keeps its secret, when SCROLLBACK_JWT_SECRET is not set.")
    var stateDirectory = ".scrollback"

    func validate() throws {
        guard seconds > 0, users > 0, conversations > 0, members >= 2, subscribers > 0, readers >= 0 else {
            throw ValidationError("--seconds, --users, --conversations and --subscribers must be positive, --members at least 2.")
        }
        if let rate, !(rate > 0) { throw ValidationError("--rate must be positive.") }
        guard hangAfter > 0 else { throw ValidationError("--hang-after must be positive.") }
        if !faults.isEmpty && faultCommand == nil { throw ValidationError("--fault needs --fault-command.") }
        for target in targets {
            guard let url = URL(string: target), let scheme = url.scheme, ["http", "https"].contains(scheme),
                let host = url.host
            else { throw ValidationError("--target \(target) is not an http:// or https:// address.") }
            if !allowRemote && !Loopback.contains(host) {
                throw ValidationError(
                    "--target \(target) is not on this machine's loopback: pass --allow-remote to load a service elsewhere.")
            }
        }
    }

    var settings: ScenarioSettings {
        ScenarioSettings(
            seconds: seconds, users: users, conversations: conversations, members: members,
            rate: rate ?? ([.chat, .faults].contains(scenario) ? 1 : 10), subscribers: subscribers, readers: readers,
            serverPIDs: serverPIDs, disruptCommand: disruptCommand, faults: faults, faultCommand: faultCommand,
            hangAfter: hangAfter)
    }

    func run() async throws {
        Self.raiseFileLimit(needed: subscribers + 512)
        let secret = try TokenIssuer.serviceSecret(stateDirectory: stateDirectory)
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(60))
        let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let load = LoadRun(targets: targets, http: http, issuer: await TokenIssuer(secret: secret))
        print("scrollback-load \(scenario.rawValue) against \(targets.joined(separator: ", ")), run \(load.runID)")

        let progress = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                if !Task.isCancelled { print(load.stats.progressLine()) }
            }
        }
        let outcome: Result<ScenarioOutcome, any Error>
        do {
            outcome = .success(try await load.run(scenario, settings))
        } catch {
            outcome = .failure(error)
        }
        progress.cancel()
        load.closeSubscriptions()
        try? await http.shutdown()

        let report = LoadReport(scenario: scenario, settings: settings, load: load, outcome: outcome)
        print(report.text)
        if let output {
            try report.json().write(to: URL(fileURLWithPath: output))
            print("written to \(output)")
        }
        guard report.passed else { throw ExitCode.failure }
    }

    /// Lifts the soft limit on open files towards the hard one: every
    /// subscription is a socket.
    static func raiseFileLimit(needed: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < rlim_t(needed) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(needed))
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        if limit.rlim_cur < rlim_t(needed) {
            print("warning: this process may open \(limit.rlim_cur) files and the load needs about \(needed): raise the hard limit (ulimit -Hn) or lower --subscribers")
        }
    }
}
