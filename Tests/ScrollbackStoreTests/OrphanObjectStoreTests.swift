import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The objects of collected uploads (`sql/025_orphan_objects.sql`): recorded
/// by the statement that deletes their rows, claimed by one sweeper at a
/// time, and forgotten only once their objects are deleted.
@Suite struct OrphanObjectStoreTests {
    /// An upload announced with its bytes in an object store (`key`), or in
    /// the database (nil), expired already.
    static func expiredUpload(key: String?, in id: UUID, store: ScrollbackStore) async throws -> Upload {
        let upload = try await store.createUpload(
            in: id, by: "alice", filename: "a.png", declaredType: "image/png", size: 10, blurhash: nil,
            objectKey: key, expiresAt: Date().addingTimeInterval(3600), maxPending: 1000)
        _ = try await store.values(
            Int.self, "UPDATE uploads SET expires_at = now() - interval '1 s' WHERE id = \(upload.id) RETURNING 1")
        return upload
    }

    static func recorded(_ store: ScrollbackStore) async throws -> [String] {
        try await store.values(String.self, "SELECT object_key FROM orphan_objects ORDER BY object_key")
    }

    /// A collected upload's object key is recorded with the rows' deletion
    /// (one whose bytes are in the database records nothing); a key whose
    /// delete failed is there for the next claim, and goes once forgotten.
    @Test func collectedKeysStayRecordedUntilTheirObjectIsDeleted() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            _ = try await Self.expiredUpload(key: "\(id)/stored", in: id, store: store)
            _ = try await Self.expiredUpload(key: nil, in: id, store: store)

            let collected = try await store.collectUploads(grace: .seconds(600), limit: 100)
            #expect(collected.count == 2)
            #expect(collected.objectKeys == ["\(id)/stored"])
            #expect(try await store.values(Int.self, "SELECT count(*)::int FROM uploads") == [0])
            #expect(try await Self.recorded(store) == ["\(id)/stored"])

            // Claimed: no other sweeper gets it while the claim holds.
            #expect(try await store.claimOrphanObjects(limit: 10, for: .seconds(900)) == ["\(id)/stored"])
            #expect(try await store.claimOrphanObjects(limit: 10, for: .seconds(900)) == [])

            // Its delete failed: still recorded, and the next pass claims it again.
            try await store.releaseOrphanObjects(failed: ["\(id)/stored"])
            #expect(try await Self.recorded(store) == ["\(id)/stored"])
            #expect(try await store.claimOrphanObjects(limit: 10, for: .seconds(900)) == ["\(id)/stored"])

            // Deleted this time: forgotten, nothing left to claim.
            try await store.forgetOrphanObjects(["\(id)/stored"])
            #expect(try await Self.recorded(store) == [])
            #expect(try await store.claimOrphanObjects(limit: 10, for: .seconds(900)) == [])
        }
    }

    /// Discarding an upload whose bytes are in an object store records its
    /// object too; one whose bytes are in the database records nothing.
    @Test func discardingAnObjectStoredUploadRecordsItsObject() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let stored = try await store.createUpload(
                in: id, by: "alice", filename: "a.png", declaredType: "image/png", size: 10, blurhash: nil,
                objectKey: "\(id)/refused", expiresAt: Date().addingTimeInterval(3600), maxPending: 10)
            let inDatabase = try await store.createUpload(
                in: id, by: "alice", filename: "b.png", declaredType: "image/png", size: 10, blurhash: nil,
                expiresAt: Date().addingTimeInterval(3600), maxPending: 10)
            #expect(try await store.discardUpload(inDatabase.id, in: id, by: "alice"))
            #expect(try await Self.recorded(store) == [])
            #expect(try await store.discardUpload(stored.id, in: id, by: "alice"))
            #expect(try await Self.recorded(store) == ["\(id)/refused"])
        }
    }

    /// Sweepers claiming at once get different keys, all of them between
    /// them; a claim that ran out (its sweeper stopped) is taken again; a
    /// key whose delete failed goes after the keys never tried.
    @Test func claimsAreDisjointAndRunOut() async throws {
        try await TestDatabase.withStore(maximumConnections: 10) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let keys = (0..<40).map { "\(id)/\($0)" }
            for key in keys { _ = try await Self.expiredUpload(key: key, in: id, store: store) }
            #expect(try await store.collectUploads(grace: .seconds(600), limit: 100).count == 40)

            let claims = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<8 { group.addTask { try await store.claimOrphanObjects(limit: 5, for: .seconds(900)) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let claimed = claims.flatMap { $0 }
            #expect(claimed.count == 40 && Set(claimed) == Set(keys), "\(claims)")

            // A sweeper that stopped: its claim runs out, another takes the keys.
            _ = try await store.values(
                Int.self,
                "UPDATE orphan_objects SET claimed_until = now() - interval '1 s' WHERE object_key = ANY(\(claims[0])) RETURNING 1")
            #expect(Set(try await store.claimOrphanObjects(limit: 10, for: .seconds(900))) == Set(claims[0]))

            // One failed, the others of its batch never tried: those come first.
            let batch = claims[1]
            try await store.releaseOrphanObjects(failed: [batch[0]], untried: Array(batch.dropFirst()))
            let next = try await store.claimOrphanObjects(limit: batch.count - 1, for: .seconds(900))
            #expect(Set(next) == Set(batch.dropFirst()))
            #expect(try await store.claimOrphanObjects(limit: 10, for: .seconds(900)) == [batch[0]])
        }
    }
}
