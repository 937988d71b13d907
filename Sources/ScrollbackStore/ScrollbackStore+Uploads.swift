import Foundation
import NIOCore
import PostgresNIO
import ScrollbackModels

/// An upload as the store holds it (`sql/011_attachments.sql`): announced,
/// then filled, then sent with a message, whose attachment it becomes.
public struct Upload: Sendable, Equatable {
    public var id: UUID
    public var conversation: UUID
    public var uploader: UserID
    public var filename: String
    public var declaredType: String
    public var size: Int64
    public var blurhash: String?
    /// The object holding the bytes in an object store; nil when the
    /// database holds them (`upload_chunks`).
    public var objectKey: String?
    /// Bytes stored so far, from the first.
    public var received: Int64
    public var expiresAt: Date
    /// What the bytes are, once all of them arrived and were checked.
    public var inspection: Inspection?
    /// The message that sent it, once sent.
    public var messageSeq: Int64?
    /// Its message was deleted: the bytes go after a grace period.
    public var removed: Bool

    /// What the server found the bytes to be.
    public struct Inspection: Sendable, Equatable {
        public var kind: AttachmentKind
        public var contentType: String
        public var width: Int?
        public var height: Int?
        public var sha256: [UInt8]

        public init(kind: AttachmentKind, contentType: String, width: Int?, height: Int?, sha256: [UInt8]) {
            self.kind = kind
            self.contentType = contentType
            self.width = width
            self.height = height
            self.sha256 = sha256
        }
    }

    /// All bytes arrived.
    public var isFilled: Bool { received == size }

    /// The attachment it becomes when sent (its URL answers only then).
    public var attachment: Attachment? {
        guard let inspection else { return nil }
        return Attachment(
            id: id, kind: inspection.kind, contentType: inspection.contentType, size: size, filename: filename,
            width: inspection.width, height: inspection.height, blurhash: blurhash,
            url: Attachment.path(id, in: conversation))
    }
}

/// Why bytes could not be added to an upload.
public enum UploadWriteRefusal: Error, Sendable, Equatable {
    /// The bytes do not start where the upload stands (`received`).
    case offsetMismatch(received: Int64)
    /// They would go beyond the size declared.
    case beyondDeclaredSize(size: Int64)
    /// Sent with a message already, expired, or all its bytes are there.
    case closed
}

extension ScrollbackStore {
    /// The largest piece of an upload one row of `upload_chunks` holds.
    public static let uploadChunkBytes = 256 * 1024

    /// Announces an upload of `size` bytes by `user` into conversation
    /// `id`, pending until `expiresAt`. Nil when the user is not a member;
    /// `StoreError.tooManyUploads` when they have `maxPending` pending
    /// already (counted in the same statement; uploads announced at the very
    /// same moment may pass it by a few).
    public func createUpload(
        _ uploadID: UUID = UUID(), in id: UUID, by user: UserID, filename: String, declaredType: String, size: Int64,
        blurhash: String?, objectKey: String? = nil, expiresAt: Date, maxPending: Int
    ) async throws -> Upload {
        let rows = try await rows(
            """
            WITH member AS (
                SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue)
            ), pending AS (
                SELECT count(*) AS n FROM uploads
                WHERE uploader = \(user.rawValue) AND message_seq IS NULL AND expires_at > now()
            ), ins AS (
                INSERT INTO uploads (conversation_id, id, uploader, filename, declared_type, size, blurhash, object_key, expires_at)
                SELECT \(id), \(uploadID), \(user.rawValue), \(filename), \(declaredType), \(size), \(blurhash),
                       \(objectKey), \(expiresAt)
                WHERE EXISTS (SELECT 1 FROM member) AND (SELECT n FROM pending) < \(maxPending)
                RETURNING id
            )
            SELECT EXISTS (SELECT 1 FROM member), EXISTS (SELECT 1 FROM ins)
            """,
            writes: true, as: .upload)
        let (member, created) = try rows.first?.decode((Bool, Bool).self) ?? (false, false)
        guard member else { throw StoreError.conversationNotFound }
        guard created else { throw StoreError.tooManyUploads(limit: maxPending) }
        return Upload(
            id: uploadID, conversation: id, uploader: user, filename: filename, declaredType: declaredType, size: size,
            blurhash: blurhash, objectKey: objectKey, received: 0, expiresAt: expiresAt, inspection: nil,
            messageSeq: nil, removed: false)
    }

    /// Upload `uploadID` of conversation `id` as its uploader `user` sees
    /// it; nil when there is none of theirs (or they left the conversation).
    public func upload(_ uploadID: UUID, in id: UUID, of user: UserID) async throws -> Upload? {
        let rows = try await rows(
            """
            SELECT \(unescaped: Self.uploadColumns) FROM uploads u
            WHERE u.conversation_id = \(id) AND u.id = \(uploadID) AND u.uploader = \(user.rawValue)
              AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue))
            """,
            writes: false, as: .upload)
        return try rows.first.map(Self.upload(from:))
    }

    /// Adds `bytes` at `offset` to an upload of `user` still open for bytes,
    /// in one statement that moves `received` only if the bytes start there
    /// and stay within the declared size. Answers the new `received`.
    public func appendToUpload(
        _ uploadID: UUID, in id: UUID, by user: UserID, at offset: Int64, bytes: ByteBuffer
    ) async throws -> Int64 {
        let length = Int64(bytes.readableBytes)
        let rows = try await rows(
            """
            WITH u AS (
                UPDATE uploads SET received = received + \(length)
                WHERE conversation_id = \(id) AND id = \(uploadID) AND uploader = \(user.rawValue)
                  AND received = \(offset) AND received + \(length) <= size
                  AND kind IS NULL AND message_seq IS NULL AND expires_at > now() AND object_key IS NULL
                RETURNING received
            ), c AS (
                INSERT INTO upload_chunks (conversation_id, upload_id, start, bytes)
                SELECT \(id), \(uploadID), \(offset), \(bytes) FROM u
            )
            SELECT received FROM u
            """,
            writes: true, as: .upload)
        if let received = try rows.first?.decode(Int64.self) { return received }
        // Why not: as it stands now.
        guard let upload = try await upload(uploadID, in: id, of: user) else { throw StoreError.uploadNotFound }
        if upload.inspection != nil || upload.messageSeq != nil || upload.expiresAt <= Date() || upload.objectKey != nil {
            throw UploadWriteRefusal.closed
        }
        if upload.received != offset { throw UploadWriteRefusal.offsetMismatch(received: upload.received) }
        throw UploadWriteRefusal.beyondDeclaredSize(size: upload.size)
    }

    /// Bytes of the upload held in the database from `start`, at most
    /// `limit` of them (whole chunks: the first may begin before `start`,
    /// the caller trims), in order.
    public func uploadChunks(
        _ uploadID: UUID, in id: UUID, from start: Int64, limit: Int
    ) async throws -> [(start: Int64, bytes: ByteBuffer)] {
        let chunks = max(1, limit / Self.uploadChunkBytes + 1)
        let rows = try await rows(
            """
            SELECT start, bytes FROM upload_chunks
            WHERE conversation_id = \(id) AND upload_id = \(uploadID) AND start + length(bytes) > \(start)
            ORDER BY start LIMIT \(chunks)
            """,
            writes: false, as: .uploadBytes)
        return try rows.map { row in
            let (start, bytes) = try row.decode((Int64, ByteBuffer).self)
            return (start, bytes)
        }
    }

    /// Records what a filled upload's bytes are; after this it can be sent.
    /// An upload whose bytes are in an object store is filled when the
    /// caller found its object whole there. Recorded once: a second
    /// inspection of the same upload (two status calls at once) answers the
    /// first one's record.
    public func recordInspection(_ inspection: Upload.Inspection, of uploadID: UUID, in id: UUID, by user: UserID)
        async throws -> Upload
    {
        let rows = try await rows(
            """
            UPDATE uploads u
            SET kind = \(inspection.kind.rawValue), content_type = \(inspection.contentType),
                width = \(inspection.width), height = \(inspection.height), sha256 = \(ByteBuffer(bytes: inspection.sha256)),
                received = u.size
            WHERE u.conversation_id = \(id) AND u.id = \(uploadID) AND u.uploader = \(user.rawValue)
              AND (u.received = u.size OR u.object_key IS NOT NULL) AND u.kind IS NULL
            RETURNING \(unescaped: Self.uploadColumns)
            """,
            writes: true, as: .upload)
        if let row = rows.first { return try Self.upload(from: row) }
        guard let upload = try await upload(uploadID, in: id, of: user), upload.inspection != nil else {
            throw StoreError.uploadNotFound
        }
        return upload
    }

    /// Forgets an upload not sent yet, bytes and all (bytes that are not
    /// what they were declared to be). False when there was none to forget.
    /// Its object, if it has one, is recorded as an orphan
    /// (``claimOrphanObjects(limit:for:)``): the caller deletes it, then
    /// ``forgetOrphanObjects(_:)``; if that delete fails, a sweeper does it.
    @discardableResult
    public func discardUpload(_ uploadID: UUID, in id: UUID, by user: UserID) async throws -> Bool {
        let rows = try await rows(
            """
            WITH gone AS (
                DELETE FROM uploads
                WHERE conversation_id = \(id) AND id = \(uploadID) AND uploader = \(user.rawValue) AND message_seq IS NULL
                RETURNING id, object_key
            ), orphaned AS (
                INSERT INTO orphan_objects (object_key)
                SELECT object_key FROM gone WHERE object_key IS NOT NULL
                ON CONFLICT (object_key) DO NOTHING
            )
            SELECT id FROM gone
            """,
            writes: true, as: .upload)
        return !rows.isEmpty
    }

    /// The attachment `attachmentID` of a message of conversation `id` that
    /// `user` may read: the upload it was made from, sent and not removed.
    /// Nil for a non-member, as for an unknown attachment.
    public func attachment(_ attachmentID: UUID, in id: UUID, for user: UserID) async throws -> Upload? {
        let rows = try await rows(
            """
            SELECT \(unescaped: Self.uploadColumns) FROM uploads u
            WHERE u.conversation_id = \(id) AND u.id = \(attachmentID) AND u.message_seq IS NOT NULL
              AND u.removed_at IS NULL
              AND EXISTS (SELECT 1 FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue))
            """,
            writes: false, as: .upload)
        return try rows.first.map(Self.upload(from:))
    }

    /// What the sweeper collects in one go: at most `limit` uploads that
    /// expired unsent, and those whose message was deleted more than
    /// `grace` ago, with their bytes. Answers what it deleted, with the
    /// object keys of those whose bytes are in an object store, which the
    /// same statement records as orphans (`sql/025_orphan_objects.sql`):
    /// they stay recorded until ``forgetOrphanObjects(_:)``, so an object
    /// whose delete fails is deleted at a later pass.
    public func collectUploads(grace: Duration, limit: Int) async throws -> (count: Int, objectKeys: [String]) {
        let graceSeconds = Double(grace.components.seconds)
        let rows = try await rows(
            """
            WITH gone AS (
                SELECT conversation_id, id FROM uploads
                WHERE message_seq IS NULL AND expires_at <= now()
                UNION ALL
                SELECT conversation_id, id FROM uploads
                WHERE removed_at IS NOT NULL AND removed_at <= now() - make_interval(secs => \(graceSeconds))
                LIMIT \(limit)
            ), deleted AS (
                DELETE FROM uploads u USING gone
                WHERE u.conversation_id = gone.conversation_id AND u.id = gone.id
                RETURNING u.object_key
            ), orphaned AS (
                INSERT INTO orphan_objects (object_key)
                SELECT object_key FROM deleted WHERE object_key IS NOT NULL
                ON CONFLICT (object_key) DO NOTHING
            )
            SELECT object_key FROM deleted
            """,
            writes: true, as: .collectUploads)
        return (rows.count, try rows.compactMap { try $0.decode(String?.self) })
    }

    /// Claims up to `limit` recorded orphan objects for `lease`: keys no
    /// other claim holds (`FOR UPDATE SKIP LOCKED`: two sweepers at once get
    /// different keys), never tried first, oldest first. The caller deletes
    /// their objects, then ``forgetOrphanObjects(_:)`` the deleted ones and
    /// ``releaseOrphanObjects(failed:untried:)`` the rest; a claim it never
    /// ends (it stopped) runs out after `lease`.
    public func claimOrphanObjects(limit: Int, for lease: Duration) async throws -> [String] {
        let leaseSeconds = Double(lease.components.seconds)
        let rows = try await rows(
            """
            UPDATE orphan_objects o SET claimed_until = now() + make_interval(secs => \(leaseSeconds))
            FROM (
                SELECT object_key FROM orphan_objects
                WHERE claimed_until IS NULL OR claimed_until <= now()
                ORDER BY claimed_until NULLS FIRST, since
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            ) free
            WHERE o.object_key = free.object_key
            RETURNING o.object_key
            """,
            writes: true, as: .collectUploads)
        return try rows.map { try $0.decode(String.self) }
    }

    /// Removes orphan objects whose objects are deleted (or were missing).
    public func forgetOrphanObjects(_ keys: [String]) async throws {
        guard !keys.isEmpty else { return }
        _ = try await rows(
            "DELETE FROM orphan_objects WHERE object_key = ANY(\(keys))", writes: true, as: .collectUploads)
    }

    /// Ends a claim on orphan objects still there: those whose delete
    /// `failed` go after the keys never tried, `untried` ones keep their place.
    public func releaseOrphanObjects(failed: [String], untried: [String] = []) async throws {
        guard !failed.isEmpty || !untried.isEmpty else { return }
        _ = try await rows(
            """
            UPDATE orphan_objects
            SET claimed_until = CASE WHEN object_key = ANY(\(failed)) THEN now() ELSE NULL END
            WHERE object_key = ANY(\(failed + untried))
            """,
            writes: true, as: .collectUploads)
    }

    static let uploadColumns = """
        u.id, u.conversation_id, u.uploader, u.filename, u.declared_type, u.size, u.blurhash, u.object_key,
        u.received, u.expires_at, u.kind, u.content_type, u.width, u.height, u.sha256, u.message_seq,
        u.removed_at IS NOT NULL
        """

    static func upload(from row: PostgresRow) throws -> Upload {
        var reader = RowReader(row)
        var upload = Upload(
            id: try reader.required(UUID.self), conversation: try reader.required(UUID.self),
            uploader: UserID(rawValue: try reader.required(String.self)), filename: try reader.required(String.self),
            declaredType: try reader.required(String.self), size: try reader.required(Int64.self),
            blurhash: try reader.next(String.self), objectKey: try reader.next(String.self),
            received: try reader.required(Int64.self), expiresAt: try reader.required(Date.self), inspection: nil,
            messageSeq: nil, removed: false)
        let kind = try reader.next(String.self)
        let contentType = try reader.next(String.self)
        let width = try reader.next(Int32.self)
        let height = try reader.next(Int32.self)
        let sha256 = try reader.next(ByteBuffer.self)
        if let kind, let contentType, let sha256 {
            guard let kind = AttachmentKind(rawValue: kind) else { throw MalformedRow() }
            upload.inspection = Upload.Inspection(
                kind: kind, contentType: contentType, width: width.map(Int.init), height: height.map(Int.init),
                sha256: Array(buffer: sha256))
        }
        upload.messageSeq = try reader.next(Int64.self)
        upload.removed = try reader.required(Bool.self)
        return upload
    }
}
