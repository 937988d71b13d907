import Foundation
import Histogram
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackMeasure

/// The tallies of a run, shared by every task of it: a latency histogram,
/// a count and the errors by kind of each operation, and the counters the
/// progress line shows.
final class LoadStats: Sendable {
    struct Tally: Sendable {
        var latency = Histogram<UInt64>.microseconds()
        var count = 0
        var errors: [String: Int] = [:]
    }

    private let tallies = NIOLockedValueBox([String: Tally]())
    let started = ContinuousClock.now

    func record(_ operation: Operation, _ latency: Duration) {
        tallies.withLockedValue {
            $0[operation.rawValue, default: Tally()].latency.record(latency)
            $0[operation.rawValue, default: Tally()].count += 1
        }
    }

    func fail(_ operation: Operation, _ kind: String) {
        tallies.withLockedValue { $0[operation.rawValue, default: Tally()].errors[kind, default: 0] += 1 }
    }

    func fail(_ operation: Operation, _ error: any Error) {
        fail(operation, Self.kind(of: error))
    }

    func snapshot() -> [String: Tally] { tallies.withLockedValue { $0 } }

    /// A short name for what went wrong: the service's error code, or the
    /// kind of failure when there is none.
    static func kind(of error: any Error) -> String {
        guard let error = error as? ScrollbackError else { return "\(type(of: error))" }
        if let code = error.code { return code.rawValue }
        switch error {
        case .rateLimited: return "rate_limited"
        case .transport: return "transport"
        case .undecodable: return "undecodable"
        case .cancelled: return "cancelled"
        case .server(let status, _, _): return "http_\(status)"
        default: return "error"
        }
    }

    /// One line of progress: what was sent, acknowledged and delivered so
    /// far, the errors, and the p99 of each operation.
    func progressLine() -> String {
        let tallies = snapshot()
        let elapsed = Int((ContinuousClock.now - started).seconds)
        let errors = tallies.values.reduce(0) { $0 + $1.errors.values.reduce(0, +) }
        func count(_ operation: Operation) -> Int { tallies[operation.rawValue]?.count ?? 0 }
        let sent = count(.send) + (tallies[Operation.send.rawValue]?.errors.values.reduce(0, +) ?? 0)
        var line = String(format: "[%4ds] sent %d, acknowledged %d, delivered %d, errors %d", elapsed, sent, count(.send), count(.deliver), errors)
        for operation in [Operation.send, .deliver, .page] {
            guard let tally = tallies[operation.rawValue], tally.count > 0 else { continue }
            line += String(format: ", p99 %@ %.1f ms", operation.rawValue, Double(tally.latency.valueAtPercentile(99)) / 1_000)
        }
        return line
    }
}

/// What the load does, each with its own row in the report.
enum Operation: String, CaseIterable, Sendable {
    /// A send through the kit, timed from its scheduled start to its answer.
    case send
    /// A message's arrival at a subscriber, timed from its send's scheduled start.
    case deliver
    /// A page of history, newest first or older.
    case page
    /// A read marker.
    case read
    /// A typing notice.
    case typing
    /// A live subscription, from opening to `connected` (also after a reconnect).
    case subscribe
    /// A conversation created for the run.
    case setup
    /// Reading each conversation's whole history for the final check.
    case verify
}
