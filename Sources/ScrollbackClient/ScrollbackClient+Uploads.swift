import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ScrollbackModels

/// How far an upload is while the kit sends it.
public struct UploadReport: Sendable, Equatable {
    /// Bytes the server (or the object store) has taken so far.
    public var sent: Int64
    /// The file's size.
    public var total: Int64

    public init(sent: Int64, total: Int64) {
        self.sent = sent
        self.total = total
    }

    /// From 0 to 1.
    public var fraction: Double { total == 0 ? 1 : Double(sent) / Double(total) }
}

/// What an upload publisher emits: progress, then the attachment.
public enum UploadEvent: Sendable, Equatable {
    case progress(UploadReport)
    case finished(Attachment)
}

extension ScrollbackClient {
    /// The size of the pieces an upload to the server is sent in: one
    /// request each, so a cut connection costs at most one piece, and a
    /// cancellation takes effect between two.
    public static let uploadPieceBytes = 1024 * 1024

    /// Uploads a photo or a file into conversation `id` and answers its
    /// attachment (kind, content type and pixel size as the server found
    /// them), ready to be sent: `send(_:to:clientId:replyTo:attachments:)`
    /// with its `id`.
    ///
    /// The bytes go where the server says: to the server itself, in pieces
    /// of ``uploadPieceBytes`` with `Content-Range`, resumed from where the
    /// server stands after a cut connection or a 503; or, when the server
    /// keeps files in an object store, in one presigned PUT there.
    /// `progress` is called as bytes are taken, from 0 to the size. Cancel
    /// the calling task to stop: the upload ends with `.cancelled` between
    /// two pieces, and the server forgets it when it expires (an hour).
    public func upload(
        _ data: Data, filename: String, contentType: String, to id: UUID, blurhash: String? = nil,
        progress: (@Sendable (UploadReport) -> Void)? = nil
    ) async throws(ScrollbackError) -> Attachment {
        let total = Int64(data.count)
        let announce = CreateUploadRequest(filename: filename, contentType: contentType, size: total, blurhash: blurhash)
        let ticket: UploadTicket = try await retrying { () async throws(ScrollbackError) in
            try await self.call(.POST, "/v1/conversations/\(id.wire)/uploads", body: announce)
        }
        progress?(UploadReport(sent: 0, total: total))
        let finished: UploadProgress
        if ticket.uploadURL.hasPrefix("/") {
            finished = try await sendPieces(of: data, to: ticket, progress: progress)
        } else {
            finished = try await sendToObjectStore(data, ticket: ticket, in: id, progress: progress)
        }
        guard let attachment = finished.attachment else {
            throw .server(
                status: 200, code: nil,
                message: "The upload has \(finished.received) of \(finished.size) bytes but is not complete.")
        }
        return attachment
    }

    /// The upload as the server has it (`GET` of its `upload_url`).
    public func uploadStatus(_ uploadID: UUID, in id: UUID) async throws(ScrollbackError) -> UploadProgress {
        try await call(.GET, "/v1/conversations/\(id.wire)/uploads/\(uploadID.wire)")
    }

    private func sendPieces(
        of data: Data, to ticket: UploadTicket, progress: (@Sendable (UploadReport) -> Void)?
    ) async throws(ScrollbackError) -> UploadProgress {
        let total = Int64(data.count)
        var received: Int64 = 0
        var failures = 0
        while true {
            if Task.isCancelled { throw .cancelled }
            let end = min(received + Int64(Self.uploadPieceBytes), total)
            let piece = data[data.startIndex + Int(received)..<data.startIndex + Int(end)]
            do throws(ScrollbackError) {
                let answer = try await putPiece(piece, from: received, of: total, to: ticket)
                failures = 0
                received = answer.received
                progress?(UploadReport(sent: received, total: total))
                if answer.complete || received >= total { return answer }
            } catch {
                // A lost answer, a 503, or bytes from the wrong place: ask
                // the server where the upload stands and go on from there.
                let resumable = error.isRetryable || error.code == .uploadOffsetMismatch
                failures += 1
                guard resumable, failures < retry.maxAttempts else { throw error }
                do {
                    try await waitToRetry(retry.delay(afterFailure: failures))
                } catch {
                    throw .cancelled
                }
                let status = try await retrying { () async throws(ScrollbackError) in
                    try await self.call(.GET, ticket.uploadURL) as UploadProgress
                }
                if status.complete { return status }
                received = status.received
            }
        }
    }

    private func putPiece(
        _ piece: Data, from start: Int64, of total: Int64, to ticket: UploadTicket
    ) async throws(ScrollbackError) -> UploadProgress {
        var request = HTTPClientRequest(url: baseURL + ticket.uploadURL)
        request.method = .PUT
        do {
            request.headers.add(name: "Authorization", value: "Bearer \(try await token())")
            addOnBehalfOf(to: &request.headers)
        } catch {
            throw .unauthorized(message: "The token provider failed: \(error)")
        }
        for (name, value) in ticket.headers { request.headers.add(name: name, value: value) }
        if !piece.isEmpty {
            request.headers.add(
                name: "Content-Range", value: "bytes \(start)-\(start + Int64(piece.count) - 1)/\(total)")
        }
        request.body = .bytes(ByteBuffer(bytes: piece))
        return try Self.decode(try await perform(request, path: ticket.uploadURL).body)
    }

    /// One presigned PUT of the whole file to the object store (no token:
    /// the URL carries its signature), then the server looks at it.
    private func sendToObjectStore(
        _ data: Data, ticket: UploadTicket, in id: UUID, progress: (@Sendable (UploadReport) -> Void)?
    ) async throws(ScrollbackError) -> UploadProgress {
        let total = Int64(data.count)
        var failures = 0
        while true {
            if Task.isCancelled { throw .cancelled }
            var request = HTTPClientRequest(url: ticket.uploadURL)
            request.method = HTTPMethod(rawValue: ticket.method)
            for (name, value) in ticket.headers { request.headers.add(name: name, value: value) }
            request.body = .stream(
                UploadPieces(data: data, pieceBytes: Self.uploadPieceBytes, progress: progress), length: .known(total))
            do throws(ScrollbackError) {
                _ = try await perform(request, path: "(object store)")
                break
            } catch {
                failures += 1
                guard error.isRetryable, failures < retry.maxAttempts else { throw error }
                do {
                    try await waitToRetry(retry.delay(afterFailure: failures))
                } catch {
                    throw .cancelled
                }
            }
        }
        let status = try await retrying { () async throws(ScrollbackError) in
            try await self.uploadStatus(ticket.uploadId, in: id)
        }
        progress?(UploadReport(sent: status.received, total: total))
        return status
    }
}

/// A file's bytes as the pieces of a streamed request body, reporting each
/// piece as the HTTP client takes it, and stopping when the task is cancelled.
struct UploadPieces: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let data: Data
    let pieceBytes: Int
    let progress: (@Sendable (UploadReport) -> Void)?

    func makeAsyncIterator() -> Iterator { Iterator(pieces: self) }

    struct Iterator: AsyncIteratorProtocol {
        let pieces: UploadPieces
        var offset = 0

        mutating func next() async throws -> ByteBuffer? {
            try Task.checkCancellation()
            let data = pieces.data
            guard offset < data.count else { return nil }
            let end = Swift.min(offset + pieces.pieceBytes, data.count)
            let buffer = ByteBuffer(bytes: data[data.startIndex + offset..<data.startIndex + end])
            offset = end
            pieces.progress?(UploadReport(sent: Int64(offset), total: Int64(data.count)))
            return buffer
        }
    }
}
