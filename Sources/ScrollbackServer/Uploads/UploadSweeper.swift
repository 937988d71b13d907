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
    /// How long a sweeper holds the orphan objects it claimed: far longer
    /// than deleting a batch takes; a sweeper that stopped half way leaves
    /// its keys to the others after this.
    static let orphanClaim = Duration.seconds(900)

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

    /// One pass: batches until none is full, then the objects of what was
    /// collected (in this pass or any earlier one, by any instance). A
    /// database or an object store that is away is tried again at the
    /// next pass.
    func sweep() async {
        do {
            while true {
                // The rows are gone first, their object keys recorded in the
                // same statement: an object is never an attachment without
                // bytes, and never forgotten while it is stored.
                let collected = try await store.collectUploads(grace: options.removalGrace, limit: Self.batch)
                if collected.count > 0 { logger.info("collected uploads", metadata: ["count": "\(collected.count)"]) }
                if collected.count < Self.batch { break }
            }
            try await deleteOrphanObjects()
        } catch {
            logger.warning("the upload sweeper could not collect", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes the recorded orphan objects, a claimed batch at a time, and
    /// forgets each key once its object is gone. A delete that fails ends
    /// the pass: its key, and those not tried yet, are freed for the next.
    func deleteOrphanObjects() async throws {
        // The database holds the bytes: no object to delete, none recorded.
        guard case .objectStore = storage else { return }
        while true {
            let keys = try await store.claimOrphanObjects(limit: Self.batch, for: Self.orphanClaim)
            let deleted = await storage.deleteObjects(keys, logger: logger)
            try await store.forgetOrphanObjects(deleted)
            if deleted.count > 0 { logger.info("deleted upload objects", metadata: ["count": "\(deleted.count)"]) }
            if deleted.count < keys.count {
                let left = keys[deleted.count...]
                try await store.releaseOrphanObjects(failed: [left.first!], untried: Array(left.dropFirst()))
                return
            }
            if keys.count < Self.batch { return }
        }
    }
}
