import Foundation
import Testing

/// How many tests use the database and servers at once. Swift Testing starts
/// every test of the run together; on a machine with two cores that is
/// hundreds of servers, pools and PostgreSQL backends sharing two CPUs, and a
/// test then waits tens of seconds for a connection or an answer. The
/// deadlines that tests check (a request cut after 1 s, an idle connection
/// closed after 2 s) are the server's, and they hold only if the server gets
/// a CPU in time. So a test that needs a database schema takes one of a
/// bounded number of slots for as long as it runs; the others wait before
/// they start anything. `SCROLLBACK_TEST_PARALLELISM` sets the number (by
/// default three per core, at least four).
public enum TestSlots {
    public static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["SCROLLBACK_TEST_PARALLELISM"], let width = Int(text),
            width > 0
        {
            return width
        }
        return max(4, 3 * ProcessInfo.processInfo.activeProcessorCount)
    }()

    private static let gate = SlotGate(width: width)

    /// Whether the current task already holds a slot (a nested call takes none).
    @TaskLocal static var held = false

    /// Whether the current test takes its slots ahead of the tests waiting
    /// without it (`SlotsAhead`).
    @TaskLocal static var ahead = false

    /// Runs `body` holding a slot.
    public static func withSlot<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withSlots(1, body)
    }

    /// Runs `body` holding every slot: for a test that loads the machine so
    /// much (hundreds of clients, a database crash) that another test's
    /// deadlines would not hold beside it.
    public static func alone<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withSlots(width, body)
    }

    private static func withSlots<T: Sendable>(_ weight: Int, _ body: () async throws -> T) async throws -> T {
        if held { return try await body() }
        let name = Test.current.map { "\($0.name) (\($0.sourceLocation.fileName):\($0.sourceLocation.line))" } ?? "a test"
        // A test that waits this long for its slots says which tests hold
        // them: when a run hangs, that names the test that never ended.
        let report = Task.detached {
            var waited = 0
            while true {
                try await Task.sleep(for: .seconds(180))
                waited += 3
                let holders = await gate.holders
                FileHandle.standardError.write(
                    Data("TestSlots: \(name) has waited \(waited) minutes for \(weight) slot(s); held by: \(holders)\n".utf8))
            }
        }
        let ticket = await gate.enter(weight: weight, name: name, ahead: ahead)
        report.cancel()
        do {
            let result = try await $held.withValue(true) { try await body() }
            await gate.leave(ticket)
            return result
        } catch {
            await gate.leave(ticket)
            throw error
        }
    }
}

/// The tests of a serialized suite take their slots ahead of every test
/// that waits without this trait: `@Suite(.serialized, .slotsAhead)`.
///
/// A serialized suite is a chain: each of its tests asks for a slot once the
/// one before it has ended. At the back of the queue each of them waited for
/// most of the tests of the run, so the chain ran alone at the end, one test
/// at a time, with the machine nearly idle (`LiveStreamFailureTests`' last
/// 13 tests made the last 95 s of a 270-second run). Ahead, a chain runs
/// beside the other tests from the start, and the run ends with them.
public struct SlotsAhead: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await TestSlots.$ahead.withValue(true) { try await function() }
    }
}

extension Trait where Self == SlotsAhead {
    /// See `SlotsAhead`.
    public static var slotsAhead: Self { Self() }
}

/// A counting semaphore whose waiters enter in the order they came, each
/// taking one place or (`weight`) several; a waiter `ahead` goes before
/// every waiter that is not.
actor SlotGate {
    struct Ticket: Sendable {
        var id: Int
        var weight: Int
    }

    private let width: Int
    private var inside = 0
    private var nextID = 0
    private var holding: [Int: (name: String, weight: Int, since: ContinuousClock.Instant)] = [:]
    private var waiting: [(ticket: Ticket, name: String, ahead: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    init(width: Int) {
        self.width = width
    }

    func enter(weight: Int = 1, name: String = "", ahead: Bool = false) async -> Ticket {
        nextID += 1
        let ticket = Ticket(id: nextID, weight: min(weight, width))
        let place = ahead ? (waiting.firstIndex { !$0.ahead } ?? waiting.endIndex) : waiting.endIndex
        if place == 0 && inside + ticket.weight <= width {
            admit(ticket, name: name)
        } else {
            await withCheckedContinuation { waiting.insert((ticket, name, ahead, $0), at: place) }
        }
        return ticket
    }

    func leave(_ ticket: Ticket) {
        inside -= ticket.weight
        holding[ticket.id] = nil
        // Admit waiters in order while the first fits.
        while let first = waiting.first, inside + first.ticket.weight <= width {
            waiting.removeFirst()
            admit(first.ticket, name: first.name)
            first.continuation.resume()
        }
    }

    private func admit(_ ticket: Ticket, name: String) {
        inside += ticket.weight
        holding[ticket.id] = (name, ticket.weight, .now)
    }

    /// How many wait for their slots.
    var waitingCount: Int { waiting.count }

    /// Who holds slots now, and for how long.
    var holders: String {
        holding.values.sorted { $0.since < $1.since }
            .map { "\($0.name) [\($0.weight), \(Int((ContinuousClock.now - $0.since).components.seconds)) s]" }
            .joined(separator: ", ")
    }
}
