import Foundation

/// Runs blocking work (starting or stopping a PostgreSQL cluster waits for
/// processes) on a thread of its own, so it does not hold one of the few
/// threads that every test's tasks share: on a 2-core machine two such calls
/// would stall every other test for seconds.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try work() })
        }
    }
}
