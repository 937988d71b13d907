import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// Uploads and the attachments they become: announcing an upload, sending
/// its bytes (resumable with `Content-Range`), how far it is, and
/// downloading an attachment (with `Range`).
struct UploadController {
    let uploads: UploadCommands

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.post("conversations/:id/uploads", use: create)
        group.get("conversations/:id/uploads/:upload_id", use: status)
        group.put("conversations/:id/uploads/:upload_id", use: receive)
        group.get("conversations/:id/attachments/:attachment_id", use: download)
    }

    /// 201 with where to send the bytes.
    @Sendable func create(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UploadTicket> {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        let input = try await RequestBody.decode(CreateUploadRequest.self, from: request, context: context)
        return JSONBody(try await uploads.create(input, in: id, by: user), status: .created)
    }

    /// How far the upload is: a client resumes from `received`. For an
    /// upload sent to the object store, this is when the server looks at it.
    @Sendable func status(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UploadProgress> {
        let user = try context.requireUser()
        let (id, uploadID) = try Self.uploadAddress(context)
        return JSONBody(Self.progress(try await uploads.status(uploadID, in: id, by: user)))
    }

    /// Takes the bytes, from the start or, with `Content-Range:
    /// bytes START-END/SIZE`, from where the upload stands.
    @Sendable func receive(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UploadProgress> {
        let user = try context.requireUser()
        let (id, uploadID) = try Self.uploadAddress(context)
        // A refusal leaves the rest of the body to the server, which reads
        // and drops it (at most the largest upload: the connection's guard
        // cuts anything longer), so the client reads the answer.
        let range = try Self.contentRange(request.headers)
        let upload = try await uploads.receive(
            request.body, into: uploadID, in: id, by: user, from: range?.start ?? 0, declaredSize: range?.size)
        return JSONBody(Self.progress(upload))
    }

    /// The bytes of an attachment, for the conversation's members.
    @Sendable func download(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        guard let text = context.pathParameter("attachment_id"), let attachmentID = UUID(uuidString: text),
            let attachment = try await uploads.store.attachment(attachmentID, in: id, for: user),
            let inspection = attachment.inspection
        else {
            throw APIError(.notFound, .attachmentNotFound, "This conversation has no attachment with that id.")
        }
        if let link = try uploads.downloadLink(to: attachment, inspection: inspection) {
            // The object store serves the bytes (and `Range`); the link is
            // for this member now, so the redirect is not stored by caches.
            return Response(status: .found, headers: [.location: link.absoluteString, .cacheControl: "private, no-store"])
        }
        let range = try AttachmentDownload.range(request.headers[.range], size: attachment.size)
        var headers = AttachmentDownload.headers(for: attachment, inspection: inspection)
        let status: HTTPResponse.Status
        if let range {
            status = .partialContent
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(attachment.size)"
        } else {
            status = .ok
        }
        let served = range ?? 0..<attachment.size
        headers[.contentLength] = "\(served.count)"
        let uploads = self.uploads
        return Response(
            status: status, headers: headers,
            body: ResponseBody { writer in
                var position = served.lowerBound
                while position < served.upperBound {
                    let want = Int(min(Int64(AttachmentDownload.windowBytes), served.upperBound - position))
                    let bytes = try await uploads.bytes(of: attachment, from: position, upTo: want)
                    guard !bytes.isEmpty else { throw StoreError.unavailable }
                    try await writer.write(ByteBuffer(bytes: bytes))
                    position += Int64(bytes.count)
                }
                try await writer.finish(nil)
            })
    }

    static func progress(_ upload: Upload) -> UploadProgress {
        UploadProgress(
            uploadId: upload.id, size: upload.size, received: upload.received, complete: upload.inspection != nil,
            attachment: upload.attachment)
    }

    /// A path id that is not a UUID names no upload: the same 404.
    static func uploadAddress(_ context: ScrollbackRequestContext) throws -> (UUID, UUID) {
        let id = try ConversationController.conversationID(context)
        guard let text = context.pathParameter("upload_id"), let uploadID = UUID(uuidString: text) else {
            throw StoreError.uploadNotFound
        }
        return (id, uploadID)
    }

    /// `Content-Range: bytes START-END/SIZE` of a PUT: where its bytes go
    /// in the file, and the file's size (nil for `*`).
    struct ContentRange: Equatable {
        var start: Int64
        var end: Int64
        var size: Int64?
    }

    /// The `Content-Range` of a PUT, or nil without one (the bytes start at
    /// 0). START-END must name exactly the body's bytes, which
    /// `Content-Length` gives before any of them is stored (a body of
    /// unknown length could not be refused whole). SIZE is checked against
    /// the upload's declared size by ``UploadCommands/receive(_:into:in:by:from:declaredSize:)``.
    static func contentRange(_ headers: HTTPFields) throws -> ContentRange? {
        guard let text = headers[.contentRange] else { return nil }
        guard let match = text.wholeMatch(of: #/bytes (\d{1,18})-(\d{1,18})\/(\d{1,18}|\*)/#),
            let start = Int64(match.1), let end = Int64(match.2), end >= start
        else {
            throw APIError.badRequest(
                .invalidParameter,
                "`Content-Range` must be `bytes START-END/SIZE`, START and END the first and last byte of the body (got \(text)).")
        }
        let range = ContentRange(start: start, end: end, size: match.3 == "*" ? nil : Int64(match.3))
        let named = end - start + 1
        guard let lengthText = headers[.contentLength], let length = Int64(lengthText) else {
            throw APIError.badRequest(
                .invalidParameter,
                "A PUT with `Content-Range` needs `Content-Length`: send the \(named) bytes \(start)-\(end) with their length.")
        }
        guard length == named else {
            throw APIError.badRequest(
                .invalidParameter,
                "`Content-Range` (\(text)) names \(named) bytes but the body has \(length): END must be START plus the body's length minus 1.")
        }
        return range
    }
}

/// The headers and ranges of attachment downloads.
enum AttachmentDownload {
    /// How much is read from the database per step of a download: a slow
    /// reader holds no connection between steps, and at most this much memory.
    static let windowBytes = 1024 * 1024

    /// Images a browser shows as they are, never running anything: served
    /// inline. Everything else, SVG and HTML above all, is a download.
    static let inlineTypes: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp"]

    static func headers(for attachment: Upload, inspection: Upload.Inspection) -> HTTPFields {
        var headers: HTTPFields = [
            .contentType: inspection.contentType,
            .acceptRanges: "bytes",
            .cacheControl: "private, max-age=3600",
            .eTag: "\"" + inspection.sha256.map { String(format: "%02x", $0) }.joined() + "\"",
        ]
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        let disposition = inlineTypes.contains(inspection.contentType) ? "inline" : "attachment"
        headers[HTTPField.Name("Content-Disposition")!] = disposition + "; " + contentDispositionFilename(attachment.filename)
        return headers
    }

    /// `filename` for any client (ASCII, quoted) and `filename*` (RFC 5987)
    /// for the real name, without bidirectional controls (a name stored
    /// before they were refused).
    static func contentDispositionFilename(_ stored: String) -> String {
        let name = Validation.withoutBidiControls(stored)
        let ascii = String(name.unicodeScalars.map { $0.isASCII && $0 != "\"" && $0 != "\\" && $0.value >= 0x20 ? Character($0) : "_" })
        let encoded = name.addingPercentEncoding(withAllowedCharacters: rfc5987) ?? ""
        return "filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    private static let rfc5987: CharacterSet = {
        var set = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        set.insert(charactersIn: "!#$&+-.^_`|~")
        return set
    }()

    /// The bytes a `Range` header asks for, or nil for all of them (no
    /// header, or one this server does not serve partially: several ranges).
    static func range(_ header: String?, size: Int64) throws -> Range<Int64>? {
        guard let header else { return nil }
        guard let match = header.wholeMatch(of: #/bytes=(\d{0,18})-(\d{0,18})/#) else { return nil }
        let first = Int64(match.1)
        let last = Int64(match.2)
        // The bounds, checked before a `Range` value is made of them: a start
        // past the end names no byte (416), it must never make an empty or
        // inverted range.
        let bounds: (lower: Int64, upper: Int64)
        switch (first, last) {
        case (let first?, let last?) where first <= last:
            bounds = (first, min(last + 1, size))
        case (let first?, nil):
            bounds = (first, size)
        case (nil, let suffix?) where suffix > 0:
            bounds = (max(0, size - suffix), size)
        default:
            return nil
        }
        guard bounds.lower < bounds.upper else {
            throw APIError(
                .rangeNotSatisfiable, .rangeNotSatisfiable,
                "`Range` names no byte of this \(size)-byte attachment (got \(header)).",
                headers: [.contentRange: "bytes */\(size)"])
        }
        return bounds.lower..<bounds.upper
    }
}
