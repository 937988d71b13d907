import Foundation
import NIOConcurrencyHelpers
import Testing

/// The test client's frame inbox: a wait with a deadline ends at the
/// deadline even when its timer fires before the waiter is registered.
struct FrameInboxTests {
    static let rounds = 2_000

    @Test func waitsWithDeadlinesThatPassAtOnceAllEnd() async throws {
        let inbox = FrameInbox()
        inbox.connected()
        let finished = NIOLockedValueBox(0)
        // Short timeouts on a connection that stays open and quiet: the
        // timer and the registration race, thousands of times.
        let waits = (0..<4).map { _ in
            Task.detached {
                for round in 0..<Self.rounds {
                    _ = await inbox.next(timeout: .microseconds(1 + round % 20))
                    finished.withLockedValue { $0 += 1 }
                }
            }
        }
        // A wait that outlived its deadline would wait for good. The limit
        // is far beyond what the waits take (well under a second alone):
        // the whole suite shares this process's few threads, and a busy
        // machine once held these waits for over 30 s without any hanging.
        let deadline = ContinuousClock.now + .seconds(300)
        while finished.withLockedValue({ $0 }) < 4 * Self.rounds, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(finished.withLockedValue { $0 } == 4 * Self.rounds, "a wait outlived its deadline")
        // A frame after the waits: it is the next one, nothing was lost.
        inbox.received("last")
        #expect(await inbox.next(timeout: .seconds(5)) == "last")
        for wait in waits { wait.cancel() }
    }
}
