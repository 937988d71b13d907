import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import ScrollbackObjectStorage
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@testable import ScrollbackServer

extension ObjectStoredUploadTests {
    /// The object store is away while the sweeper collects an upload: the
    /// row goes, the object stays recorded, and a later pass, with the store
    /// back, deletes it and forgets its key. An object missing by then
    /// counts as deleted.
    @Test func anObjectTheSweeperCouldNotDeleteIsDeletedAtALaterPass() async throws {
        let storage = try S3TestServer.configuration(prefix: "sweep")
        // Port 1 of loopback: nothing listens there, connections are refused at once.
        var away = storage
        away.endpointScheme = "http"
        away.endpointHost = "127.0.0.1:1"
        away.requestTimeout = .seconds(5)
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let logger = Logger(label: "s3-sweep-test")
        do {
            try await TestDatabase.withStore { store in
                let objects = S3ObjectStore(configuration: storage, httpClient: http, logger: logger)
                let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
                var keys: [String] = []
                for n in 0..<3 {
                    let uploadID = UUID()
                    let key = UploadStorage.objectKey(of: uploadID, in: id)
                    _ = try await store.createUpload(
                        uploadID, in: id, by: "alice", filename: "\(n).bin", declaredType: "application/octet-stream",
                        size: 4, blurhash: nil, objectKey: key, expiresAt: Date().addingTimeInterval(3600), maxPending: 10)
                    // The last one's object never arrived: missing counts as deleted.
                    if n < 2 { try await objects.put(key: key, body: ByteBuffer(bytes: [1, 2, 3, 4]), contentType: nil) }
                    keys.append(key)
                }
                _ = try await store.values(Int.self, "UPDATE uploads SET expires_at = now() - interval '1 s' RETURNING 1")

                var options = UploadOptions()
                options.removalGrace = .zero
                let unreachable = UploadSweeper(
                    store: store, options: options,
                    storage: .objectStore(S3ObjectStore(configuration: away, httpClient: http, logger: logger)),
                    logger: logger)
                await unreachable.sweep()
                #expect(try await store.values(Int.self, "SELECT count(*)::int FROM uploads") == [0])
                for key in keys.prefix(2) { #expect(try await objects.head(key: key) != nil, "\(key) is still stored") }
                let recorded = try await store.values(String.self, "SELECT object_key FROM orphan_objects")
                #expect(Set(recorded) == Set(keys))

                // Another pass, the store back: every object deleted, every key forgotten.
                let sweeper = UploadSweeper(store: store, options: options, storage: .objectStore(objects), logger: logger)
                await sweeper.sweep()
                for key in keys { #expect(try await objects.head(key: key) == nil, "\(key) was not deleted") }
                #expect(try await store.values(String.self, "SELECT object_key FROM orphan_objects") == [])
            }
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }
}
