import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
@testable import ScrollbackServer
import Testing

/// The rules that close a socket's queue, on a clock moved by hand.
@Suite struct OutboundQueueTests {
    final class ManualClock: Sendable {
        private let reading = NIOLockedValueBox(ContinuousClock.now)
        var now: ContinuousClock.Instant { reading.withLockedValue { $0 } }
        func advance(_ duration: Duration) { reading.withLockedValue { $0 += duration } }
    }

    static let limits = OutboundQueue.Limits(
        softBytes: 10_000, hardBytes: 40_000, grace: .seconds(2), stall: .milliseconds(500))
    static let frame = ByteBuffer(repeating: 0x61, count: 5_000)

    /// One read of the feed queues far more than the hard limit at once: a
    /// client whose writer keeps taking frames is not closed for it.
    @Test func aBurstBeyondTheHardLimitDoesNotCloseAClientThatReads() async {
        let clock = ManualClock()
        let queue = OutboundQueue(limits: Self.limits) { clock.now }
        for _ in 0..<40 { #expect(queue.push(Self.frame) == .queued) }  // 200 KB, five times the hard limit
        for _ in 0..<40 {
            clock.advance(.milliseconds(20))
            #expect(queue.take() == .frame(Self.frame))
            #expect(queue.push(Self.frame) == .queued)
        }
        #expect(!queue.isClosing)
    }

    /// Above the hard limit with nothing taken for the stall period: closed,
    /// what it held dropped, and the close is the next item.
    @Test func aClientThatStopsReadingAboveTheHardLimitIsClosedAfterTheStall() async {
        let clock = ManualClock()
        let queue = OutboundQueue(limits: Self.limits) { clock.now }
        for _ in 0..<9 { #expect(queue.push(Self.frame) == .queued) }  // 45 KB: above hard
        clock.advance(.milliseconds(400))
        #expect(queue.push(Self.frame) == .queued)  // not stalled long enough yet
        clock.advance(.milliseconds(200))
        #expect(queue.push(Self.frame) == .tooSlow)
        #expect(queue.depth.frames == 0)
        #expect(queue.take() == .close(code: StreamCloseCode.tooSlow, reason: "too slow: resume from your last seq"))
        #expect(queue.push(Self.frame) == .closing)
    }

    /// A client that reads, but slower than frames arrive, stays above the
    /// soft limit: closed once it has been there for the grace period.
    @Test func aClientThatStaysAboveTheSoftLimitIsClosedAfterTheGrace() async {
        let clock = ManualClock()
        let queue = OutboundQueue(limits: Self.limits) { clock.now }
        for _ in 0..<3 { #expect(queue.push(Self.frame) == .queued) }  // 15 KB: above soft
        var result = OutboundQueue.PushResult.queued
        for _ in 0..<30 where result == .queued {
            clock.advance(.milliseconds(100))
            _ = queue.take()  // it reads one frame...
            result = queue.push(Self.frame)  // ...while one more arrives
            if result == .queued { result = queue.push(Self.frame) }
        }
        #expect(result == .tooSlow)
    }

    /// Dropping below the soft limit starts the grace period anew.
    @Test func drainingBelowTheSoftLimitForgivesTheLag() async {
        let clock = ManualClock()
        let queue = OutboundQueue(limits: Self.limits) { clock.now }
        for _ in 0..<3 { #expect(queue.push(Self.frame) == .queued) }
        clock.advance(.milliseconds(1_900))
        for _ in 0..<3 { _ = queue.take() }
        clock.advance(.milliseconds(1_900))
        for _ in 0..<3 { #expect(queue.push(Self.frame) == .queued) }
        clock.advance(.milliseconds(1_900))
        #expect(queue.push(Self.frame) == .queued)
        #expect(!queue.isClosing)
    }

    /// The writer is not a task waiting on the queue: it is woken once for
    /// what arrives until it finds the queue empty, and again for what
    /// arrives after that; a closed queue wakes it for its close, then
    /// takes nothing more.
    @Test func theWriterIsWokenOnceUntilItFindsTheQueueEmpty() {
        let queue = OutboundQueue(limits: Self.limits)
        var wakes = 0
        for _ in 0..<3 { #expect(queue.push(Self.frame) { wakes += 1 } == .queued) }
        #expect(wakes == 1)
        for _ in 0..<3 { #expect(queue.take() == .frame(Self.frame)) }
        queue.push(Self.frame) { wakes += 1 }
        #expect(wakes == 1, "the drain under way has not found the queue empty yet")
        #expect(queue.take() == .frame(Self.frame))
        #expect(queue.take() == nil)
        queue.push(Self.frame) { wakes += 1 }
        #expect(wakes == 2)
        #expect(queue.take() == .frame(Self.frame))
        #expect(queue.take() == nil)
        queue.close(code: 1001, reason: "bye", draining: true) { wakes += 1 }
        #expect(wakes == 3)
        #expect(queue.take() == .close(code: 1001, reason: "bye"))
        #expect(queue.take() == nil)
        #expect(queue.push(Self.frame) { wakes += 1 } == .closing)
        #expect(wakes == 3)
    }

    /// A client that falls behind is closed by a push: the writer is woken
    /// for the close even when it had nothing to do.
    @Test func aQueueClosedForSlownessWakesTheWriterForItsClose() {
        let clock = ManualClock()
        let queue = OutboundQueue(limits: Self.limits) { clock.now }
        var wakes = 0
        for _ in 0..<9 { queue.push(Self.frame) { wakes += 1 } }
        for _ in 0..<9 { _ = queue.take() }
        #expect(queue.take() == nil)
        for _ in 0..<9 { queue.push(Self.frame) { wakes += 1 } }
        clock.advance(.seconds(1))
        #expect(queue.take() == .frame(Self.frame))
        clock.advance(.seconds(1))
        #expect(queue.push(Self.frame) { wakes += 1 } == .tooSlow)
        #expect(wakes == 2, "the drain under way takes the close")
        #expect(queue.take() == .close(code: StreamCloseCode.tooSlow, reason: "too slow: resume from your last seq"))
    }

    /// A burst grows the queue's room for frames; once it is written, the
    /// socket keeps the small room it started with, not the burst's.
    @Test func aWrittenBurstGivesItsRoomBack() {
        let queue = OutboundQueue(limits: Self.limits)
        let small = ByteBuffer(repeating: 0x61, count: 10)
        let start = queue.room
        #expect(start <= 2 * OutboundQueue.idleCapacity)
        for _ in 0..<100 { #expect(queue.push(small) == .queued) }
        #expect(queue.room >= 100)
        while queue.take() != nil {}
        #expect(queue.room == start)
    }
}
