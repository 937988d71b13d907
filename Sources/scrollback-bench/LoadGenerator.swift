import AsyncHTTPClient
import Histogram
import NIOCore
import ScrollbackMeasure

/// How requests are paced.
enum Pacing: Sendable {
    /// `connections` loops, each sending the next request when the last one
    /// answered: the peak throughput.
    case closed(connections: Int)
    /// Requests scheduled at a fixed rate, whatever the answers; latency is
    /// timed from each request's scheduled start, so waiting in a queue
    /// (ours, the connection pool's, the server's) counts.
    case open(requestsPerSecond: Double)
}

/// A bounded run: it stops scheduling at `duration` or after `maxRequests`,
/// whichever comes first, and no request outlives `requestTimeout`.
struct LoadPlan: Sendable {
    var pacing: Pacing
    var duration: Duration
    var maxRequests: Int
    var requestTimeout: TimeAmount = .seconds(10)
}

/// What one request came to.
enum Outcome: Sendable {
    case success
    case status(UInt)
    case transportFailure
}

struct Sample: Sendable {
    var microseconds: UInt64
    var outcome: Outcome
}

/// The tally of a run.
struct LoadResult: Sendable {
    var latency = Histogram<UInt64>.microseconds()
    var successes = 0
    var failures: [String: Int] = [:]
    var elapsed: Duration = .zero

    mutating func record(_ sample: Sample) {
        _ = latency.record(max(sample.microseconds, 1))
        switch sample.outcome {
        case .success: successes += 1
        case .status(let code): failures[String(code), default: 0] += 1
        case .transportFailure: failures["transport", default: 0] += 1
        }
    }
}

struct LoadGenerator {
    let client: HTTPClient
    let workload: Workload
    let plan: LoadPlan

    func run() async -> LoadResult {
        let (samples, sink) = AsyncStream.makeStream(of: Sample.self)
        async let tally: LoadResult = samples.reduce(into: LoadResult()) { $0.record($1) }
        let clock = ContinuousClock()
        let start = clock.now
        switch plan.pacing {
        case .closed(let connections):
            await runClosed(connections: connections, start: start, sink: sink)
        case .open(let rate):
            await runOpen(rate: rate, start: start, sink: sink)
        }
        let elapsed = clock.now - start
        sink.finish()
        var result = await tally
        result.elapsed = elapsed
        return result
    }

    private func runClosed(connections: Int, start: ContinuousClock.Instant, sink: AsyncStream<Sample>.Continuation)
        async
    {
        let clock = ContinuousClock()
        let deadline = start + plan.duration
        let perConnection = max(plan.maxRequests / connections, 1)
        await withDiscardingTaskGroup { group in
            for _ in 0..<connections {
                group.addTask {
                    var random = SystemRandomNumberGenerator()
                    var sent = 0
                    while sent < perConnection && clock.now < deadline {
                        let request = workload.request(using: &random)
                        let begin = clock.now
                        let outcome = await perform(request)
                        sink.yield(Sample(microseconds: (clock.now - begin).microseconds, outcome: outcome))
                        sent += 1
                    }
                }
            }
        }
    }

    private func runOpen(rate: Double, start: ContinuousClock.Instant, sink: AsyncStream<Sample>.Continuation) async {
        let clock = ContinuousClock()
        let total = min(plan.maxRequests, Int(rate * plan.duration.seconds))
        await OpenLoop.run(rate: rate, count: total, from: start) { _, scheduled in
            var random = SystemRandomNumberGenerator()
            let outcome = await perform(workload.request(using: &random))
            sink.yield(Sample(microseconds: (clock.now - scheduled).microseconds, outcome: outcome))
        }
    }

    private func perform(_ request: HTTPClientRequest) async -> Outcome {
        do {
            let response = try await client.execute(request, timeout: plan.requestTimeout)
            _ = try await response.body.collect(upTo: 16 << 20)
            return (200..<300).contains(response.status.code) ? .success : .status(response.status.code)
        } catch {
            return .transportFailure
        }
    }
}
