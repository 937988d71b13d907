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
            #expect(await queue.next() == .frame(Self.frame))
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
        #expect(await queue.next() == .close(code: StreamCloseCode.tooSlow, reason: "too slow: resume from your last seq"))
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
            _ = await queue.next()  // it reads one frame...
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
        for _ in 0..<3 { _ = await queue.next() }
        clock.advance(.milliseconds(1_900))
        for _ in 0..<3 { #expect(queue.push(Self.frame) == .queued) }
        clock.advance(.milliseconds(1_900))
        #expect(queue.push(Self.frame) == .queued)
        #expect(!queue.isClosing)
    }
}
