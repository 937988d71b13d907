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
        if held { return try await body() }
        await gate.enter()
        do {
            let result = try await $held.withValue(true) { try await body() }
            await gate.leave()
            return result
        } catch {
            await gate.leave()
            throw error
        }
    }
}

/// A counting semaphore whose waiters enter in the order they came.
actor SlotGate {
    private let width: Int
    private var inside = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) {
        self.width = width
    }

    func enter() async {
        if inside < width {
            inside += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty {
            inside -= 1
        } else {
            waiting.removeFirst().resume()  // the place passes to the first waiter
        }
    }
}
