import Logging
import ScrollbackStore
import ServiceLifecycle

/// Collects the bytes nobody will read: uploads that expired unsent, and
/// the attachments of deleted messages once their grace period is over.
/// Every instance runs one; what one collects the others no longer find.
struct UploadSweeper: Service {
    let store: ScrollbackStore
    let options: UploadOptions
    var storage: UploadStorage = .database
    let logger: Logger

    /// Uploads deleted per statement: a backlog goes in short steps.
    static let batch = 500

    func run() async throws {
        await cancelWhenGracefulShutdown {
            // The first pass waits an interval too: at start the schema may
            // still be migrating, and nothing expires in the first minute.
            while !Task.isCancelled {
                try? await Task.sleep(for: options.sweepInterval)
                if Task.isCancelled { break }
                await sweep()
            }
        }
    }

    /// One pass: batches until none is full. A database that is away is
    /// tried again at the next pass.
    func sweep() async {
        do {
            while true {
                let collected = try await store.collectUploads(grace: options.removalGrace, limit: Self.batch)
                // The rows are gone first: an object left by a failed delete
                // is an orphan nobody can reach, never a dangling attachment.
                await storage.deleteObjects(collected.objectKeys, logger: logger)
                if collected.count > 0 { logger.info("collected uploads", metadata: ["count": "\(collected.count)"]) }
                if collected.count < Self.batch { return }
            }
        } catch {
            logger.warning("the upload sweeper could not collect", metadata: ["error": "\(error)"])
        }
    }
}
