import Foundation
import NIOConcurrencyHelpers
import Testing

/// The test client's frame inbox: a wait with a deadline ends at the
/// deadline even when its timer fires before the waiter is registered.
struct FrameInboxTests {
    @Test func waitsWithDeadlinesThatPassAtOnceAllEnd() async throws {
        let inbox = FrameInbox()
        inbox.connected()
        let finished = NIOLockedValueBox(0)
        // Short timeouts on a connection that stays open and quiet: the
        // timer and the registration race, thousands of times.
        let waits = (0..<4).map { _ in
            Task.detached {
                for round in 0..<5_000 {
                    _ = await inbox.next(timeout: .microseconds(1 + round % 20))
                    finished.withLockedValue { $0 += 1 }
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(30)
        while finished.withLockedValue({ $0 }) < 20_000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(finished.withLockedValue { $0 } == 20_000, "a wait outlived its deadline")
        // A frame after the waits: it is the next one, nothing was lost.
        inbox.received("last")
        #expect(await inbox.next(timeout: .seconds(5)) == "last")
        for wait in waits { wait.cancel() }
    }
}
