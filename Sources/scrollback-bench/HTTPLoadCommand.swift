import ArgumentParser
import AsyncHTTPClient
import NIOCore
import ScrollbackMeasure

/// `scrollback-bench http`: one bounded load run against a running server,
/// printed (or written) as a `Measurement`.
struct HTTPLoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "http",
        abstract: "Load a running server over HTTP/1.1 keep-alive connections and measure it.")

    @Option(help: "The server's base URL.")
    var url = "http://127.0.0.1:8080"

    @Option(help: "What to send: \(WorkloadKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var workload: WorkloadKind

    @Option(help: "Targets file: kind, conversation id, user id, last seq (tab-separated).")
    var targets: String

    @Option(help: "Tokens file: user id, token (tab-separated).")
    var tokens: String

    @Option(help: "Concurrent connections (closed loop: one request in flight on each).")
    var connections = 16

    @Option(help: "Open loop: requests per second, timed from their scheduled start. Without it: closed loop.")
    var rate: Double?

    @Option(help: "Seconds to send for.")
    var duration: Double = 10

    @Option(help: "At most this many requests.")
    var maxRequests = 10_000_000

    @Option(name: .customLong("watch-pid"), help: "A process whose peak resident memory (VmRSS) to report, e.g. the server.")
    var watchPID: Int32?

    @Option(help: "Write the measurement here instead of standard output.")
    var output: String?

    func validate() throws {
        guard connections > 0 else { throw ValidationError("--connections must be positive.") }
        guard duration > 0, duration <= 3_600 else { throw ValidationError("--duration must be 0 to 3600 seconds.") }
        if let rate, !(rate > 0) { throw ValidationError("--rate must be positive.") }
        guard maxRequests > 0 else { throw ValidationError("--max-requests must be positive.") }
    }

    func run() async throws {
        let workload = try Workload(
            kind: workload, baseURL: url, targets: LoadTargets(targetsFile: targets, tokensFile: tokens))
        var configuration = HTTPClient.Configuration()
        configuration.httpVersion = .http1Only
        configuration.connectionPool = .init(
            idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: connections)
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let plan = LoadPlan(
            pacing: rate.map { .open(requestsPerSecond: $0) } ?? .closed(connections: connections),
            duration: .seconds(duration), maxRequests: maxRequests)

        let memory = watchPID.map { pid in Task { await peakResidentMemoryKiB(of: pid) } }
        let result = await LoadGenerator(client: client, workload: workload, plan: plan).run()
        memory?.cancel()
        let peakRSS = await memory?.value
        try await client.shutdown()

        let seconds = result.elapsed.seconds
        try Measurement(
            tool: "scrollback", workload: workload.kind.rawValue, mode: rate == nil ? "closed" : "open",
            connections: connections, rate: rate, seconds: seconds, successes: result.successes,
            failures: result.failures, throughput: Double(result.successes) / seconds,
            latency: LatencySummary(result.latency), peakRSSKiB: peakRSS
        ).write(to: output)
    }
}

extension WorkloadKind: ExpressibleByArgument {}
