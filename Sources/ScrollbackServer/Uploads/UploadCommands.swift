import Crypto
import Foundation
import NIOCore
import ScrollbackMedia
import ScrollbackModels
import ScrollbackStore

/// Uploads kept in the database: announcing one, taking its bytes as they
/// stream in (a chunk at a time, so an upload in flight holds at most one
/// chunk of memory), and, once the last byte arrived, finding out what the
/// bytes are and recording it. The HTTP controller only decodes and encodes.
struct UploadCommands: Sendable {
    let store: ScrollbackStore
    let limiter: RateLimiter
    let options: UploadOptions

    /// How much of the start of a file is read to recognise it, and how much
    /// at most when an image's header says it is longer.
    static let inspectedPrefixBytes = 64 * 1024
    static let largestInspectedPrefixBytes = 4 * 1024 * 1024

    /// Announces an upload after checking what the client declared.
    func create(_ request: CreateUploadRequest, in id: UUID, by user: UserID) async throws -> Upload {
        let filename = try Validation.filename(request.filename)
        let declaredType = try Validation.contentType(request.contentType)
        guard (1...options.maxBytes).contains(request.size) else {
            throw APIError.unprocessable(
                .invalidUploadSize,
                "Field `size` must be the file's size in bytes, from 1 to \(options.maxBytes) (got \(request.size)).")
        }
        let blurhash = try request.blurhash.map(Validation.blurhash)
        try limiter.check(.upload, for: user)
        return try await store.createUpload(
            in: id, by: user, filename: filename, declaredType: declaredType, size: request.size, blurhash: blurhash,
            expiresAt: Date().addingTimeInterval(Double(options.lifetime.components.seconds)),
            maxPending: options.maxPending)
    }

    /// Takes the bytes of `body` into upload `uploadID` from `offset` (where
    /// the upload stands: a resumed upload sends the rest), chunk by chunk,
    /// then inspects the file when it is whole. Answers how far it is.
    func receive(
        _ body: some AsyncSequence<ByteBuffer, any Error>, into uploadID: UUID, in id: UUID, by user: UserID,
        from offset: Int64
    ) async throws -> Upload {
        guard var upload = try await store.upload(uploadID, in: id, of: user) else { throw StoreError.uploadNotFound }
        try Self.requireOpen(upload)
        guard offset == upload.received else { throw Self.offsetMismatch(upload.received) }
        var position = offset
        var pending = ByteBuffer()
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
        return try await inspect(upload, by: user)
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
    func inspect(_ upload: Upload, by user: UserID) async throws -> Upload {
        var prefixBytes = Self.inspectedPrefixBytes
        let found: MediaInspection
        while true {
            let prefix = try await bytes(of: upload, from: 0, upTo: prefixBytes)
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
                try await store.discardUpload(upload.id, in: upload.conversation, by: user)
                throw APIError.unprocessable(
                    .invalidUploadContent, "The file is not a usable image: \(error.reason). The upload was discarded.")
            }
        }
        if let mismatch = Self.mismatch(declared: upload.declaredType, found: found) {
            try await store.discardUpload(upload.id, in: upload.conversation, by: user)
            throw APIError.unprocessable(.invalidUploadContent, mismatch + " The upload was discarded.")
        }
        var hash = SHA256()
        var position: Int64 = 0
        while position < upload.size {
            let part = try await bytes(of: upload, from: position, upTo: 4 * ScrollbackStore.uploadChunkBytes)
            guard !part.isEmpty else { throw StoreError.unavailable }
            hash.update(data: part)
            position += Int64(part.count)
        }
        let inspection = Upload.Inspection(
            kind: AttachmentKind(found.kind), contentType: found.contentType, width: found.image?.width,
            height: found.image?.height, sha256: Array(hash.finalize()))
        return try await store.recordInspection(inspection, of: upload.id, in: upload.conversation, by: user)
    }

    /// Up to `limit` bytes of a database-held upload from `start`.
    func bytes(of upload: Upload, from start: Int64, upTo limit: Int) async throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(min(limit, Int(upload.size - start)))
        for chunk in try await store.uploadChunks(upload.id, in: upload.conversation, from: start, limit: limit) {
            var buffer = chunk.bytes
            let skip = Int(max(0, start - chunk.start))
            buffer.moveReaderIndex(forwardBy: min(skip, buffer.readableBytes))
            let take = min(buffer.readableBytes, limit - out.count)
            out.append(contentsOf: buffer.readableBytesView.prefix(take))
            if out.count >= limit { break }
        }
        return out
    }

    /// Why bytes that were all received are refused, or nil: whether a
    /// declared type fits the bytes is `MediaFormat.accepts` (an image must be
    /// the format declared, markup is never an image).
    static func mismatch(declared: String, found: MediaInspection) -> String? {
        guard !found.format.accepts(declaredContentType: declared) else { return nil }
        return "The upload declared `\(declared)` but its bytes are `\(found.contentType)`."
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
