import Foundation
import NIOCore
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Uploads in the store: one attachment per upload however many sends race
/// for it, and the sweeper that collects what nobody will read.
@Suite struct UploadStoreTests {
    /// An upload of `bytes` by `user`, filled and checked as an image.
    static func filledUpload(_ bytes: [UInt8], in id: UUID, by user: UserID, store: ScrollbackStore) async throws -> Upload {
        let upload = try await store.createUpload(
            in: id, by: user, filename: "a.png", declaredType: "image/png", size: Int64(bytes.count), blurhash: nil,
            expiresAt: Date().addingTimeInterval(3600), maxPending: 50)
        #expect(try await store.appendToUpload(upload.id, in: id, by: user, at: 0, bytes: ByteBuffer(bytes: bytes)) == Int64(bytes.count))
        return try await store.recordInspection(
            Upload.Inspection(kind: .image, contentType: "image/png", width: 4, height: 3, sha256: Array(repeating: 1, count: 32)),
            of: upload.id, in: id, by: user)
    }

    /// Many sends with one upload at once, some of them retries of the same
    /// send: one message gets the attachment, its retries find that message,
    /// every other send is refused, and the upload belongs to one message.
    @Test func sendsRacingForOneUploadAttachItOnce() async throws {
        try await TestDatabase.withStore(maximumConnections: 12) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let upload = try await Self.filledUpload([1, 2, 3], in: id, by: "alice", store: store)
            let results = await withTaskGroup(of: (String, Result<SendOutcome, StoreError>).self) { group in
                for n in 0..<24 {
                    // Half of them the same send (client_id "same"), retried.
                    let clientID = n.isMultiple(of: 2) ? "same" : "other-\(n)"
                    group.addTask {
                        do {
                            return (clientID, .success(try await store.send(
                                to: id, from: "alice", body: "photo", clientID: clientID, attachments: [upload.id])))
                        } catch let error as StoreError {
                            return (clientID, .failure(error))
                        } catch {
                            return (clientID, .failure(.unavailable))
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let stored = results.compactMap { try? $0.1.get().message }
            #expect(Set(stored.map(\.seq)) == [1], "one message: \(results)")
            #expect(stored.allSatisfy { $0.attachments.map(\.id) == [upload.id] })
            for (clientID, result) in results where (try? result.get()) == nil {
                #expect(result == .failure(.attachmentsUnusable), "\(clientID): \(result)")
            }
            let winner = try #require(stored.first?.clientId)
            #expect(results.filter { $0.0 == winner }.allSatisfy { (try? $0.1.get()) != nil }, "its retries find it")
            #expect(try await store.values(Int64.self, "SELECT message_seq FROM uploads WHERE id = \(upload.id)") == [1])
        }
    }

    /// The sweeper collects uploads that expired unsent and the
    /// attachments of deleted messages after their grace, bytes and all,
    /// and nothing else.
    @Test func theSweeperCollectsExpiredUploadsAndRemovedAttachmentsOnly() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let expired = try await Self.filledUpload([1], in: id, by: "alice", store: store)
            let pending = try await Self.filledUpload([2], in: id, by: "alice", store: store)
            let kept = try await Self.filledUpload([3], in: id, by: "alice", store: store)
            let removed = try await Self.filledUpload([4], in: id, by: "alice", store: store)
            _ = try await store.send(to: id, from: "alice", body: "kept", clientID: nil, attachments: [kept.id])
            let deleted = try await store.send(to: id, from: "alice", body: "gone", clientID: nil, attachments: [removed.id])
            _ = try await store.delete(deleted.message.seq, in: id, by: "alice")
            _ = try await store.values(
                Int.self, "UPDATE uploads SET expires_at = now() - interval '1 s' WHERE id = \(expired.id) RETURNING 1")

            // Within the grace, the removed attachment's bytes stay.
            #expect(try await store.collectUploads(grace: .seconds(600), limit: 100).count == 1)
            _ = try await store.values(
                Int.self, "UPDATE uploads SET removed_at = now() - interval '11 minutes' WHERE id = \(removed.id) RETURNING 1")
            #expect(try await store.collectUploads(grace: .seconds(600), limit: 100).count == 1)
            #expect(try await store.collectUploads(grace: .seconds(600), limit: 100).count == 0)

            let left = try await store.values(String.self, "SELECT id::text FROM uploads ORDER BY id")
            #expect(Set(left) == Set([pending.id, kept.id].map { $0.uuidString.lowercased() }))
            let chunks = try await store.values(String.self, "SELECT upload_id::text FROM upload_chunks")
            #expect(Set(chunks) == Set(left))
        }
    }
}
