import Foundation

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
        await gate.enter(weight: weight)
        do {
            let result = try await $held.withValue(true) { try await body() }
            await gate.leave(weight: weight)
            return result
        } catch {
            await gate.leave(weight: weight)
            throw error
        }
    }
}

/// A counting semaphore whose waiters enter in the order they came, each
/// taking one place or (`weight`) several.
actor SlotGate {
    private let width: Int
    private var inside = 0
    private var waiting: [(weight: Int, continuation: CheckedContinuation<Void, Never>)] = []

    init(width: Int) {
        self.width = width
    }

    func enter(weight: Int = 1) async {
        let weight = min(weight, width)
        if waiting.isEmpty && inside + weight <= width {
            inside += weight
            return
        }
        await withCheckedContinuation { waiting.append((weight, $0)) }
    }

    func leave(weight: Int = 1) {
        inside -= min(weight, width)
        // Admit waiters in order while the first fits.
        while let first = waiting.first, inside + first.weight <= width {
            waiting.removeFirst()
            inside += first.weight
            first.continuation.resume()
        }
    }
}
