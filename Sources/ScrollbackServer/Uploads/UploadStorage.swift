import AsyncHTTPClient
import Foundation
import Logging
import ScrollbackObjectStorage
import ScrollbackStore
import ServiceLifecycle

/// Where the bytes of uploads live: in the database (`upload_chunks`, the
/// default: N instances and the embedded cluster need nothing more, and one
/// backup holds everything), or in an S3-compatible object store
/// (`SCROLLBACK_STORAGE_URL`), which clients upload to and download from
/// with presigned URLs so the bytes never pass through the server.
enum UploadStorage: Sendable {
    case database
    case objectStore(S3ObjectStore)

    /// The key of an upload's object: `CONVERSATION/UPLOAD` under the
    /// configured prefix.
    static func objectKey(of uploadID: UUID, in conversation: UUID) -> String {
        "\(conversation.uuidString.lowercased())/\(uploadID.uuidString.lowercased())"
    }

    /// How long a download link the server hands out stays valid: long
    /// enough for a slow phone to fetch a large file, short enough that a
    /// link copied out of the app soon stops working.
    static let downloadLinkLifetime = Duration.seconds(300)

    /// Up to `limit` bytes of `upload` from `start`: fewer only at its end
    /// (or where the bytes stored stop short of it).
    func bytes(of upload: Upload, from start: Int64, upTo limit: Int, store: ScrollbackStore) async throws -> [UInt8] {
        guard limit > 0, start < upload.size else { return [] }
        if let key = upload.objectKey, case .objectStore(let objects) = self {
            let last = min(upload.size, start + Int64(limit)) - 1
            let buffer = try await objects.read(key: key, range: start...last)
            return Array(buffer.readableBytesView)
        }
        // The chunks have the sizes the PUTs gave them (a resumed upload's
        // first piece may be a few bytes): read on until `limit` bytes or
        // the end, whatever they were.
        let wanted = min(limit, Int(upload.size - start))
        var out: [UInt8] = []
        out.reserveCapacity(wanted)
        while out.count < wanted {
            let position = start + Int64(out.count)
            let chunks = try await store.uploadChunks(
                upload.id, in: upload.conversation, from: position, limit: wanted - out.count)
            guard !chunks.isEmpty else { break }
            for chunk in chunks {
                var buffer = chunk.bytes
                let skip = Int(max(0, start + Int64(out.count) - chunk.start))
                buffer.moveReaderIndex(forwardBy: min(skip, buffer.readableBytes))
                out.append(contentsOf: buffer.readableBytesView.prefix(wanted - out.count))
                if out.count >= wanted { break }
            }
        }
        return out
    }

    /// Deletes objects whose rows are gone (recorded as orphans, see
    /// `ScrollbackStore.claimOrphanObjects`), in order, up to the first that
    /// cannot be deleted now (logged): the store is away or refuses, and the
    /// rest would most likely fail the same way. Answers the keys whose
    /// objects are gone, the first ones of `keys`; a key with no object
    /// counts (S3 answers its delete as done).
    @discardableResult
    func deleteObjects(_ keys: [String], logger: Logger) async -> [String] {
        guard case .objectStore(let objects) = self else { return [] }
        var deleted: [String] = []
        for key in keys {
            do {
                try await objects.delete(key: key)
                deleted.append(key)
            } catch {
                logger.warning(
                    "an upload's object could not be deleted: it stays recorded, for a later pass",
                    metadata: ["key": "\(key)", "error": "\(error)"])
                break
            }
        }
        return deleted
    }
}

/// An HTTP client of the server's own (the object store's, the outbox's),
/// shut down when the service group stops.
struct HTTPClientService: Service {
    let httpClient: HTTPClient

    func run() async throws {
        try? await gracefulShutdown()
        try? await httpClient.shutdown()
    }
}
