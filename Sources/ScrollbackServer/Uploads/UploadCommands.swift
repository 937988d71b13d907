import Crypto
import Foundation
import Logging
import NIOCore
import ScrollbackMedia
import ScrollbackModels
import ScrollbackObjectStorage
import ScrollbackStore

/// Uploads: announcing one, taking its bytes as they stream in when the
/// database keeps them (a chunk at a time, so an upload in flight holds at
/// most one chunk of memory) or handing out a presigned URL when an object
/// store does, and, once the last byte arrived, finding out what the bytes
/// are and recording it. The HTTP controller only decodes and encodes.
struct UploadCommands: Sendable {
    let store: ScrollbackStore
    let limiter: RateLimiter
    let options: UploadOptions
    var storage: UploadStorage = .database
    var logger = Logger(label: "scrollback.uploads")

    /// How much of the start of a file is read to recognise it, and how much
    /// at most when an image's header says it is longer.
    static let inspectedPrefixBytes = 64 * 1024
    static let largestInspectedPrefixBytes = 4 * 1024 * 1024

    /// Announces an upload after checking what the client declared, and
    /// answers where to send its bytes.
    func create(_ request: CreateUploadRequest, in id: UUID, by user: UserID) async throws -> UploadTicket {
        let upload = try await announce(request, in: id, by: user)
        return try ticket(for: upload)
    }

    /// Where and how the client sends the bytes of `upload`: a PUT to this
    /// server, or a presigned PUT to the object store whose signature covers
    /// the declared type and size (the store refuses other ones).
    func ticket(for upload: Upload) throws -> UploadTicket {
        guard let key = upload.objectKey, case .objectStore(let objects) = storage else {
            return UploadTicket(
                uploadId: upload.id, uploadURL: Self.path(of: upload), method: "PUT",
                headers: ["Content-Type": upload.declaredType], expiresAt: upload.expiresAt)
        }
        let presigned: PresignedRequest
        do {
            presigned = try objects.presignedUpload(
                key: key, contentType: upload.declaredType, contentLength: upload.size,
                expires: .seconds(max(1, Int64(upload.expiresAt.timeIntervalSinceNow.rounded(.down)))))
        } catch {
            throw unavailable(error)
        }
        var headers = ["Content-Type": upload.declaredType]
        for (name, value) in presigned.headers where name.lowercased() != "content-type" && name.lowercased() != "content-length" {
            headers[name] = value
        }
        return UploadTicket(
            uploadId: upload.id, uploadURL: presigned.url.absoluteString, method: presigned.method, headers: headers,
            expiresAt: upload.expiresAt)
    }

    static func path(of upload: Upload) -> String {
        "/v1/conversations/\(upload.conversation.uuidString.lowercased())/uploads/\(upload.id.uuidString.lowercased())"
    }

    private func announce(_ request: CreateUploadRequest, in id: UUID, by user: UserID) async throws -> Upload {
        let filename = try Validation.filename(request.filename)
        let declaredType = try Validation.contentType(request.contentType)
        if let kind = Self.declaredKind(declaredType), !options.allowedKinds.contains(kind) {
            throw kindNotAllowed(kind, "field `content_type` (\(declaredType)) names \(Self.article(kind)).")
        }
        guard (1...options.maxBytes).contains(request.size) else {
            throw APIError.unprocessable(
                .invalidUploadSize,
                "Field `size` must be the file's size in bytes, from 1 to \(options.maxBytes) (got \(request.size)).")
        }
        let blurhash = try request.blurhash.map(Validation.blurhash)
        try limiter.check(.upload, for: user)
        let uploadID = UUID()
        var objectKey: String?
        if case .objectStore = storage { objectKey = UploadStorage.objectKey(of: uploadID, in: id) }
        return try await store.createUpload(
            uploadID, in: id, by: user, filename: filename, declaredType: declaredType, size: request.size,
            blurhash: blurhash, objectKey: objectKey,
            expiresAt: Date().addingTimeInterval(Double(options.lifetime.components.seconds)),
            maxPending: options.maxPending)
    }

    /// The upload as it stands, for its uploader. One whose bytes go to the
    /// object store is looked at there until they have all arrived, and
    /// inspected then.
    func status(_ uploadID: UUID, in id: UUID, by user: UserID) async throws -> Upload {
        guard let upload = try await store.upload(uploadID, in: id, of: user) else { throw StoreError.uploadNotFound }
        return try await objectStoreCall { try await settle(upload, by: user) }
    }

    /// Brings the uploads a send lists up to date before the store checks
    /// them: those whose bytes went straight to the object store are
    /// inspected once they are there. Nothing to do for database uploads,
    /// which are inspected as their last byte arrives.
    func settle(_ uploadIDs: [UUID], in id: UUID, by user: UserID) async throws {
        guard case .objectStore = storage else { return }
        for uploadID in uploadIDs {
            // An id that is not the user's is the store's to refuse, with the send.
            guard let upload = try await store.upload(uploadID, in: id, of: user) else { continue }
            _ = try await objectStoreCall { try await settle(upload, by: user) }
        }
    }

    /// The object store's failures as the API's 503, in one place for both
    /// doors (the live stream's error frame too); the cause goes to the log.
    private func objectStoreCall<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ObjectStorageError {
            throw unavailable(error)
        }
    }

    private func unavailable(_ error: ObjectStorageError) -> APIError {
        logger.error("object store call failed", metadata: ["error": "\(error)"])
        return APIError.objectStoreUnavailable
    }

    /// An object-stored upload whose bytes are all there, inspected; one
    /// that is not complete yet, as it is. An object of another size than
    /// declared (the presigned PUT makes this unlikely) is refused.
    private func settle(_ upload: Upload, by user: UserID) async throws -> Upload {
        guard let key = upload.objectKey, upload.inspection == nil, upload.messageSeq == nil,
            case .objectStore(let objects) = storage
        else { return upload }
        guard let metadata = try await objects.head(key: key) else { return upload }
        guard metadata.size == upload.size else {
            try await discard(upload, by: user)
            throw APIError.unprocessable(
                .invalidUploadSize,
                "The object store holds \(metadata.size) bytes for this upload, which declared \(upload.size). The upload was discarded.")
        }
        var filled = upload
        filled.received = upload.size
        return try await inspect(filled, by: user)
    }

    /// Forgets an unsent upload, and its object when there is one: the
    /// store records the object as an orphan with the row's deletion, and
    /// forgets it once it is deleted here; one that cannot be deleted now
    /// is the sweeper's.
    private func discard(_ upload: Upload, by user: UserID) async throws {
        try await store.discardUpload(upload.id, in: upload.conversation, by: user)
        guard let key = upload.objectKey else { return }
        let deleted = await storage.deleteObjects([key], logger: logger)
        do {
            try await store.forgetOrphanObjects(deleted)
        } catch {
            // Recorded still: a sweeper deletes it again (a missing object is no error).
            logger.warning("a deleted object could not be forgotten", metadata: ["key": "\(key)", "error": "\(error)"])
        }
    }

    /// Takes the bytes of `body` into upload `uploadID` from `offset` (where
    /// the upload stands: a resumed upload sends the rest), chunk by chunk,
    /// then inspects the file when it is whole. Answers how far it is.
    /// `declaredSize`, the size of the file the client says the bytes belong
    /// to (`Content-Range`'s SIZE), must be the upload's.
    func receive(
        _ body: some AsyncSequence<ByteBuffer, any Error>, into uploadID: UUID, in id: UUID, by user: UserID,
        from offset: Int64, declaredSize: Int64? = nil
    ) async throws -> Upload {
        guard var upload = try await store.upload(uploadID, in: id, of: user) else { throw StoreError.uploadNotFound }
        if upload.objectKey != nil {
            throw APIError(
                .conflict, .uploadUnavailable,
                "This upload's bytes go to the object store: send them to the `upload_url` its creation answered.")
        }
        try Self.requireOpen(upload)
        if let declaredSize, declaredSize != upload.size {
            throw APIError.unprocessable(
                .invalidUploadSize,
                "`Content-Range` says the file has \(declaredSize) bytes, but the upload declared \(upload.size): "
                    + "send the bytes of that file (`Content-Range: bytes START-END/\(upload.size)`), or announce a new upload. Nothing was stored.")
        }
        guard offset == upload.received else { throw Self.offsetMismatch(upload.received) }
        var position = offset
        var pending = ByteBuffer()
        // A file sent whole in this request is hashed, and its start kept,
        // as it streams through: inspecting it then reads nothing back. A
        // resumed one is read back from the database once complete.
        var seen = offset == 0 ? SeenBytes() : nil
        func flush() async throws {
            guard pending.readableBytes > 0 else { return }
            position = try await append(pending, to: upload, at: position, by: user)
            pending.clear()
        }
        for try await part in body {
            guard position + Int64(pending.readableBytes + part.readableBytes) <= upload.size else {
                try await flush()
                throw Self.beyondDeclaredSize(upload.size)
            }
            seen?.take(part)
            var part = part
            while part.readableBytes > 0 {
                let take = min(part.readableBytes, ScrollbackStore.uploadChunkBytes - pending.readableBytes)
                var slice = part.readSlice(length: take)!
                pending.writeBuffer(&slice)
                if pending.readableBytes == ScrollbackStore.uploadChunkBytes { try await flush() }
            }
        }
        try await flush()
        upload.received = position
        guard upload.isFilled else { return upload }
        return try await inspect(upload, by: user, seen: seen)
    }

    /// What a request that carries a whole file saw of it on the way in.
    struct SeenBytes {
        var hash = SHA256()
        /// Its first ``UploadCommands/inspectedPrefixBytes`` bytes.
        var prefix: [UInt8] = []

        mutating func take(_ part: ByteBuffer) {
            part.withUnsafeReadableBytes { hash.update(bufferPointer: $0) }
            if prefix.count < UploadCommands.inspectedPrefixBytes {
                prefix += part.readableBytesView.prefix(UploadCommands.inspectedPrefixBytes - prefix.count)
            }
        }
    }

    private func append(_ bytes: ByteBuffer, to upload: Upload, at offset: Int64, by user: UserID) async throws -> Int64 {
        do {
            return try await store.appendToUpload(upload.id, in: upload.conversation, by: user, at: offset, bytes: bytes)
        } catch let refusal as UploadWriteRefusal {
            switch refusal {
            case .offsetMismatch(let received): throw Self.offsetMismatch(received)
            case .beyondDeclaredSize(let size): throw Self.beyondDeclaredSize(size)
            case .closed: throw Self.unavailable
            }
        }
    }

    /// Reads what a whole upload is and records it; bytes that are not what
    /// the upload declared discard it.
    func inspect(_ upload: Upload, by user: UserID, seen: SeenBytes? = nil) async throws -> Upload {
        var prefixBytes = Self.inspectedPrefixBytes
        let found: MediaInspection
        while true {
            let prefix =
                if let seen, prefixBytes == Self.inspectedPrefixBytes { seen.prefix } else {
                    try await bytes(of: upload, from: 0, upTo: prefixBytes)
                }
            let whole = Int64(prefix.count) == upload.size
            do {
                found = try MediaInspector.inspect(prefix, isWholeFile: whole)
                break
            } catch {
                // A header longer than the prefix read (a JPEG with a big
                // EXIF thumbnail): read as much as it says it takes.
                if case .truncated(_, let needed, _) = error, !whole, needed > prefixBytes,
                    needed <= Self.largestInspectedPrefixBytes
                {
                    prefixBytes = needed
                    continue
                }
                try await discard(upload, by: user)
                throw APIError.unprocessable(
                    .invalidUploadContent, "The file is not a usable image: \(error.reason). The upload was discarded.")
            }
        }
        if let mismatch = Self.mismatch(declared: upload.declaredType, found: found) {
            try await discard(upload, by: user)
            throw APIError.unprocessable(.invalidUploadContent, mismatch + " The upload was discarded.")
        }
        let kind = AttachmentKind(found.kind)
        guard options.allowedKinds.contains(kind) else {
            try await discard(upload, by: user)
            throw kindNotAllowed(
                kind, "the bytes are \(Self.article(kind)) (\(found.contentType)). The upload was discarded.")
        }
        var hash: SHA256
        if let seen {
            hash = seen.hash
        } else {
            hash = SHA256()
            var position: Int64 = 0
            while position < upload.size {
                let part = try await bytes(of: upload, from: position, upTo: 4 * ScrollbackStore.uploadChunkBytes)
                guard !part.isEmpty else { throw StoreError.unavailable }
                hash.update(data: part)
                position += Int64(part.count)
            }
        }
        let inspection = Upload.Inspection(
            kind: AttachmentKind(found.kind), contentType: found.contentType, width: found.image?.width,
            height: found.image?.height, sha256: Array(hash.finalize()))
        return try await store.recordInspection(inspection, of: upload.id, in: upload.conversation, by: user)
    }

    /// Up to `limit` bytes of an upload from `start`, wherever they live.
    func bytes(of upload: Upload, from start: Int64, upTo limit: Int) async throws -> [UInt8] {
        try await storage.bytes(of: upload, from: start, upTo: limit, store: store)
    }

    /// A short-lived link to an object-stored attachment's bytes, which the
    /// object store answers with the recorded type and the same
    /// `Content-Disposition` the server gives; nil for one the database holds.
    func downloadLink(to attachment: Upload, inspection: Upload.Inspection) throws -> URL? {
        guard let key = attachment.objectKey, case .objectStore(let objects) = storage else { return nil }
        do {
            return try objects.presignedDownload(
                key: key, expires: UploadStorage.downloadLinkLifetime, filename: Validation.withoutBidiControls(attachment.filename),
                contentType: inspection.contentType, inline: AttachmentDownload.inlineTypes.contains(inspection.contentType))
        } catch {
            throw unavailable(error)
        }
    }

    /// Why bytes that were all received are refused, or nil: whether a
    /// declared type fits the bytes is `MediaFormat.accepts` (an image must be
    /// the format declared, markup is never an image).
    static func mismatch(declared: String, found: MediaInspection) -> String? {
        guard !found.format.accepts(declaredContentType: declared) else { return nil }
        return "The upload declared `\(declared)` but its bytes are `\(found.contentType)`."
    }

    /// The kind of attachment a declared content type names, or nil when it
    /// claims nothing (`application/octet-stream`: the bytes tell). A type
    /// the server does not recognise is a file, as its bytes will be.
    static func declaredKind(_ contentType: String) -> AttachmentKind? {
        guard let format = MediaFormat(declaredContentType: contentType) else { return .file }
        return format == .octetStream ? nil : AttachmentKind(format.kind)
    }

    /// An upload of a kind `SCROLLBACK_UPLOAD_KINDS` leaves out.
    private func kindNotAllowed(_ kind: AttachmentKind, _ why: String) -> APIError {
        let allowed = AttachmentKind.allCases.filter(options.allowedKinds.contains).map(\.rawValue)
        return APIError.unprocessable(
            .uploadKindNotAllowed,
            "This server takes \(allowed.joined(separator: ", ")) uploads only, not \(Self.article(kind)): \(why)")
    }

    private static func article(_ kind: AttachmentKind) -> String {
        kind == .image ? "an image" : "a \(kind.rawValue)"
    }

    static func requireOpen(_ upload: Upload) throws {
        if upload.messageSeq != nil || upload.expiresAt <= Date() { throw unavailable }
        if upload.inspection != nil {
            throw APIError(.conflict, .uploadUnavailable, "This upload is complete: send it with a message.")
        }
    }

    static func offsetMismatch(_ received: Int64) -> APIError {
        APIError(
            .conflict, .uploadOffsetMismatch,
            "The upload has \(received) bytes: send the rest from there (`Content-Range: bytes \(received)-...`).")
    }

    static func beyondDeclaredSize(_ size: Int64) -> APIError {
        APIError.unprocessable(
            .invalidUploadSize, "The bytes go beyond the \(size) bytes the upload declared; nothing past them was kept.")
    }

    static let unavailable = APIError(
        .conflict, .uploadUnavailable, "This upload was sent with a message already, or it expired: make a new one.")
}

extension AttachmentKind {
    init(_ kind: MediaKind) {
        switch kind {
        case .image: self = .image
        case .video: self = .video
        case .file: self = .file
        }
    }
}
