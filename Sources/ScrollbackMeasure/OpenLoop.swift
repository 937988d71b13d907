/// Work started at a fixed rate whatever the answers (an open loop), so a
/// slow answer delays nothing after it. Each piece is passed the instant it
/// was scheduled for: latency timed from there counts every queue it waited
/// in (ours, a connection pool's, the server's).
public enum OpenLoop {
    /// Starts `count` pieces `rate` per second from `start` and returns when
    /// all have finished; with `until`, stops starting pieces once it is true.
    public static func run(
        rate: Double, count: Int, from start: ContinuousClock.Instant = .now,
        until stop: @escaping @Sendable () -> Bool = { false },
        _ work: @escaping @Sendable (_ index: Int, _ scheduled: ContinuousClock.Instant) async -> Void
    ) async {
        guard rate > 0, count > 0 else { return }
        let clock = ContinuousClock()
        let interval = Duration.seconds(1 / rate)
        await withDiscardingTaskGroup { group in
            for index in 0..<count {
                let scheduled = start + interval * index
                // Sleeping wakes a little late: every piece already due goes
                // out at once, still timed from its own schedule.
                if scheduled > clock.now {
                    do { try await clock.sleep(until: scheduled, tolerance: .microseconds(50)) } catch { return }
                }
                if stop() { return }
                group.addTask { await work(index, scheduled) }
            }
        }
    }
}
