import Logging
import ScrollbackStore
import ServiceLifecycle

/// Removes the messages past their conversation's retention
/// (`ScrollbackStore.sweepRetention`), every `interval`. Every instance runs
/// one; their passes take each conversation's lock in turn, and what one
/// removed the others no longer find.
struct RetentionSweeper: Service {
    let store: ScrollbackStore
    let defaultDays: Int?
    let interval: Duration
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            // The first pass waits an interval too: at start the schema may still be migrating.
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                await sweep()
            }
        }
    }

    /// One pass; a database that is away is tried again at the next.
    func sweep() async {
        do {
            let removed = try await store.sweepRetention(defaultDays: defaultDays)
            if removed > 0 { logger.info("removed messages past their retention", metadata: ["count": "\(removed)"]) }
        } catch {
            logger.warning("the retention sweeper could not sweep", metadata: ["error": "\(error)"])
        }
    }
}
