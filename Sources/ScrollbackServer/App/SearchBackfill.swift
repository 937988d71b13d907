import Logging
import ScrollbackStore
import ServiceLifecycle

/// The search index's upkeep at start, as a `Service`: once the schema is
/// migrated and the configuration set (`ready`), it gives every message
/// stored before the search existed, or before the configuration changed,
/// its search vector, in short batches with a pause between them, so
/// requests and writes go on meanwhile. Then it idles until shutdown.
/// Instances that start together take turns: a batch holds the settings
/// row.
struct SearchBackfill: Service {
    let store: ScrollbackStore
    let logger: Logger
    /// Yields once the start has configured the search: whether messages
    /// wait for their vectors.
    let ready: AsyncStream<Bool>
    var batchSize = 2_000
    var pause = Duration.milliseconds(20)
    var retryDelay = Duration.seconds(5)

    /// Checks the configured text search configuration against the database
    /// and records it; an unknown one stops the start with what to fix.
    /// Returns whether messages wait for their vectors (nothing runs in the
    /// background when none does).
    static func configure(_ name: String, store: ScrollbackStore, logger: Logger) async throws -> Bool {
        switch try await store.setSearchConfiguration(name) {
        case .unchanged:
            return !(try await store.isSearchBackfillDone())
        case .changed(let previous):
            logger.notice(
                "search configuration changed: every message is indexed again in the background",
                metadata: ["from": "\(previous)", "to": "\(name)"])
            return true
        case .unknown(let available):
            throw ScrollbackConfiguration.Failure(
                "SCROLLBACK_SEARCH_CONFIG=\(name) names no text search configuration of this database. It has: \(available.joined(separator: ", ")).")
        }
    }

    func run() async throws {
        var started = ready.makeAsyncIterator()
        guard let needed = await started.next() else { return }
        if needed { await cancelWhenGracefulShutdown { await fill() } }
        // A service that returns ends its group: idle until the shutdown.
        try? await gracefulShutdown()
    }

    private func fill() async {
        var messages = 0
        var batches = 0
        let start = ContinuousClock.now
        while !Task.isCancelled {
            do {
                switch try await store.backfillSearchVectors(batchSize: batchSize) {
                case .done:
                    if batches > 0 {
                        logger.info(
                            "search backfill done",
                            metadata: ["messages": "\(messages)", "seconds": "\((ContinuousClock.now - start).components.seconds)"])
                    }
                    return
                case .filled(let count, let through):
                    if batches == 0 { logger.info("search backfill started") }
                    messages += count
                    batches += 1
                    if batches % 50 == 0 {
                        logger.info(
                            "search backfill",
                            metadata: [
                                "messages": "\(messages)", "through_conversation": "\(through.conversationID)",
                                "through_seq": "\(through.seq)",
                            ])
                    }
                }
                try await Task.sleep(for: pause)
            } catch is CancellationError {
                return
            } catch {
                logger.warning("search backfill failed; retrying", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: retryDelay)
            }
        }
    }
}
