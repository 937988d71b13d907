import Crypto
import Foundation
import HTTPTypes
import NIOCore
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Images and files through the HTTP API on a real server and PostgreSQL:
/// announced, sent in one or several pieces, checked against what they
/// declared, sent with a message, downloaded by members only.
@Suite struct UploadAPITests {
    /// A PNG of `width` × `height` as far as a header goes: the signature,
    /// IHDR, and `padding` bytes of data after it.
    static func png(width: UInt32, height: UInt32, padding: Int = 100) -> [UInt8] {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        bytes += Array("IHDR".utf8)
        for value in [width, height] { bytes += withUnsafeBytes(of: value.bigEndian, Array.init) }
        bytes += [8, 6, 0, 0, 0, 0, 0, 0, 0]
        bytes += (0..<padding).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        return bytes
    }

    /// The start of a JPEG: SOI, then a baseline frame header of `width` × `height`.
    static func jpeg(width: UInt16, height: UInt16) -> [UInt8] {
        var bytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x11, 0x08]
        bytes += withUnsafeBytes(of: height.bigEndian, Array.init) + withUnsafeBytes(of: width.bigEndian, Array.init)
        bytes += [0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xFF, 0xD9]
        return bytes
    }

    /// The `ETag` of an attachment: its SHA-256, quoted.
    static func etag(of bytes: [UInt8]) -> String {
        "\"" + SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() + "\""
    }

    struct Flow {
        let server: TestServer
        let conversation: UUID

        func announce(
            _ filename: String, _ contentType: String, size: Int, as user: String = "alice", blurhash: String? = nil
        ) async throws -> TestServer.Reply {
            try await server.request(
                .post, "/v1/conversations/\(conversation)/uploads", as: user,
                json: CreateUploadRequest(filename: filename, contentType: contentType, size: Int64(size), blurhash: blurhash))
        }

        func upload(
            _ filename: String, _ contentType: String, _ bytes: [UInt8], as user: String = "alice"
        ) async throws -> UploadTicket {
            let created = try await announce(filename, contentType, size: bytes.count, as: user)
            try #require(created.status == .created, "\(created.text)")
            return try created.decode(UploadTicket.self)
        }

        func put(
            _ ticket: UploadTicket, _ bytes: some Collection<UInt8>, as user: String = "alice", range: String? = nil
        ) async throws -> TestServer.Reply {
            var headers: HTTPFields = [.contentType: ticket.headers["Content-Type"] ?? "application/octet-stream"]
            if let range { headers[.contentRange] = range }
            return try await server.request(.put, ticket.uploadURL, as: user, bytes: Array(bytes), headers: headers)
        }

        func send(_ body: String, attachments: [UUID], as user: String = "alice", clientID: String? = nil)
            async throws -> TestServer.Reply
        {
            try await server.request(
                .post, "/v1/conversations/\(conversation)/messages", as: user,
                json: SendMessageRequest(body: body, clientId: clientID, attachments: attachments))
        }
    }

    static func withFlow(_ body: @escaping @Sendable (Flow) async throws -> Void) async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            try await body(Flow(server: server, conversation: conversation.id))
        }
    }

    @Test func anImageIsSentWithItsSizeAndDownloadedByMembersOnly() async throws {
        try await Self.withFlow { flow in
            let bytes = Self.png(width: 640, height: 480, padding: 300_000)
            let ticket = try await flow.upload("cat.png", "image/png", bytes)
            #expect(ticket.method == "PUT")
            let put = try await flow.put(ticket, bytes)
            #expect(put.status == .ok, "\(put.text)")
            let progress = try put.decode(UploadProgress.self)
            #expect(progress.complete && progress.received == Int64(bytes.count))
            let found = try #require(progress.attachment)
            #expect(found.kind == .image && found.contentType == "image/png" && found.width == 640 && found.height == 480)

            // Sent with an empty body: the message carries the image's box.
            let sent = try await flow.send("", attachments: [ticket.uploadId])
            #expect(sent.status == .created, "\(sent.text)")
            let message = try sent.decode(MessageEnvelope.self).message
            #expect(message.body.isEmpty)
            #expect(message.attachments == [found])

            // bob reads it in a page, then downloads it.
            let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages", as: "bob")
                .decode(MessagePage.self)
            #expect(page.messages.first?.attachments == [found])
            let download = try await flow.server.request(.get, found.url, as: "bob")
            #expect(download.status == .ok)
            #expect(Array(download.body) == bytes)
            #expect(download.headers[.contentType] == "image/png")
            // The SHA-256 of the bytes, taken as they streamed in.
            #expect(download.headers[.eTag] == Self.etag(of: bytes))
            #expect(download.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            #expect(download.headers[HTTPField.Name("Content-Disposition")!]?.hasPrefix("inline") == true)
            let part = try await flow.server.request(.get, found.url, as: "bob", headers: [.range: "bytes=10-19"])
            #expect(part.status == .partialContent)
            #expect(Array(part.body) == Array(bytes[10...19]))
            #expect(part.headers[.contentRange] == "bytes 10-19/\(bytes.count)")
            let past = try await flow.server.request(.get, found.url, as: "bob", headers: [.range: "bytes=\(bytes.count)-"])
            #expect(try past.status == .rangeNotSatisfiable && (past.error().error.code) == .rangeNotSatisfiable)
            // A start beyond the end (it once trapped the server, a range made upside down).
            for range in ["bytes=\(bytes.count + 5)-", "bytes=\(bytes.count + 5)-\(bytes.count + 9)", "bytes=999999999999999999-"] {
                let beyond = try await flow.server.request(.get, found.url, as: "bob", headers: [.range: range])
                #expect(beyond.status == .rangeNotSatisfiable, "\(range)")
            }
            #expect(try await flow.server.request(.get, found.url, as: "bob").status == .ok)

            // Not for someone outside the conversation.
            let stranger = try await flow.server.request(.get, found.url, as: "mallory")
            #expect(try stranger.status == .notFound && (stranger.error().error.code) == .attachmentNotFound)
        }
    }

    @Test func anUploadResumesFromWhereItStands() async throws {
        try await Self.withFlow { flow in
            let bytes = Self.jpeg(width: 120, height: 90) + [UInt8](repeating: 7, count: 70_000)
            let ticket = try await flow.upload("photo.jpg", "image/jpeg", bytes)
            let half = bytes.count / 2
            let first = try await flow.put(ticket, bytes[..<half], range: "bytes 0-\(half - 1)/\(bytes.count)")
            #expect(try first.decode(UploadProgress.self) == UploadProgress(
                uploadId: ticket.uploadId, size: Int64(bytes.count), received: Int64(half), complete: false))
            let status = try await flow.server.request(.get, ticket.uploadURL, as: "alice")
            #expect(try status.decode(UploadProgress.self).received == Int64(half))
            // From the start again: refused, with where to go on from.
            let again = try await flow.put(ticket, bytes)
            #expect(try again.status == .conflict && (again.error().error.code) == .uploadOffsetMismatch)
            #expect(again.text.contains("\(half)"))
            let rest = try await flow.put(
                ticket, bytes[half...], range: "bytes \(half)-\(bytes.count - 1)/\(bytes.count)")
            let done = try rest.decode(UploadProgress.self)
            #expect(done.complete && done.attachment?.width == 120 && done.attachment?.height == 90)
            // Resumed: hashed from what the database holds, the same digest.
            _ = try await flow.send("resumed", attachments: [ticket.uploadId])
            let download = try await flow.server.request(.get, try #require(done.attachment).url, as: "bob")
            #expect(Array(download.body) == bytes)
            #expect(download.headers[.eTag] == Self.etag(of: bytes))
        }
    }

    /// A phone photo's header runs past its first pieces (a 30 KB EXIF
    /// segment before the frame header) and the pieces are short: the
    /// inspection reads as many stored pieces as the header takes.
    @Test func aResumedPhotoWhoseHeaderOutrunsItsFirstPiecesIsInspectedWhole() async throws {
        try await Self.withFlow { flow in
            var exif: [UInt8] = Array("Exif".utf8) + [0, 0] + Array("MM".utf8) + [0, 42, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0]
            exif += [UInt8](repeating: 0, count: 30_000 - exif.count)
            let length = UInt16(exif.count + 2)
            let frame = Self.jpeg(width: 640, height: 480)
            let bytes = [0xFF, 0xD8, 0xFF, 0xE1] + withUnsafeBytes(of: length.bigEndian, Array.init) + exif
                + frame.dropFirst(2) + [UInt8](repeating: 9, count: 5_000)
            let ticket = try await flow.upload("photo.jpg", "image/jpeg", bytes)
            var sent = 0
            var last: TestServer.Reply?
            for piece in [10_000, 7, 300, bytes.count - 10_307] {
                let reply = try await flow.put(
                    ticket, bytes[sent..<(sent + piece)], range: "bytes \(sent)-\(sent + piece - 1)/\(bytes.count)")
                #expect(reply.status == .ok, "after \(sent + piece) bytes: \(reply.text)")
                sent += piece
                last = reply
            }
            let done = try #require(last).decode(UploadProgress.self)
            #expect(done.complete && done.attachment?.width == 640 && done.attachment?.height == 480, "\(done)")
            _ = try await flow.send("resumed photo", attachments: [ticket.uploadId])
            let download = try await flow.server.request(.get, try #require(done.attachment).url, as: "bob")
            #expect(Array(download.body) == bytes)
            #expect(download.headers[.eTag] == Self.etag(of: bytes))
        }
    }

    /// Each bad input gets its own clear 4xx, and leaves what was stored as it was.
    @Test func badUploadsAreRefusedWithWhatToFix() async throws {
        try await Self.withFlow { flow in
            func code(_ reply: TestServer.Reply) throws -> APIErrorCode { try reply.error().error.code }
            #expect(try code(try await flow.announce("a.png", "image/png", size: 0)) == .invalidUploadSize)
            #expect(try code(try await flow.announce("a.png", "image/png", size: 26 * 1024 * 1024)) == .invalidUploadSize)
            #expect(try code(try await flow.announce("../a.png", "image/png", size: 10)) == .invalidUpload)
            // Bidirectional controls: a name that shows other than it is.
            for control in ["\u{202E}", "\u{202A}", "\u{202D}", "\u{2066}", "\u{2069}", "\u{200F}", "\u{061C}"] {
                let bidi = try await flow.announce("invoice\(control)gnp.exe", "image/png", size: 10)
                #expect(bidi.status == .unprocessableContent, "\(bidi.text)")
                let hex = String(control.unicodeScalars.first!.value, radix: 16, uppercase: true)
                #expect(try bidi.error().error.code == .invalidUpload && bidi.text.contains("U+\(hex)"), "\(bidi.text)")
            }
            // Right-to-left names themselves are names.
            let hebrew = try await flow.announce("תמונה.png", "image/png", size: 10)
            #expect(hebrew.status == .created, "\(hebrew.text)")
            #expect(try code(try await flow.announce("a.png", "not a type", size: 10)) == .invalidUpload)
            #expect(try code(try await flow.announce("a.png", "image/png", size: 10, blurhash: "nope")) == .invalidUpload)
            let outsider = try await flow.announce("a.png", "image/png", size: 10, as: "mallory")
            #expect(try outsider.status == .notFound && (code(outsider)) == .conversationNotFound)

            // Declared a PNG, sent a JPEG: refused and discarded.
            let jpeg = Self.jpeg(width: 10, height: 10)
            let lying = try await flow.upload("a.png", "image/png", jpeg)
            let refused = try await flow.put(lying, jpeg)
            #expect(try refused.status == .unprocessableContent && (code(refused)) == .invalidUploadContent)
            #expect(refused.text.contains("image/jpeg"))
            #expect(try await flow.server.request(.get, lying.uploadURL, as: "alice").status == .notFound)

            // A PNG whose header gives no size.
            let broken = Self.png(width: 0, height: 10)
            let zero = try await flow.upload("zero.png", "image/png", broken)
            #expect(try code(try await flow.put(zero, broken)) == .invalidUploadContent)

            // More bytes than declared: what fits is kept, nothing past it.
            let declared = Self.png(width: 5, height: 5)
            let short = try await flow.upload("five.png", "image/png", declared)
            let over = try await flow.put(short, declared + [1, 2, 3])
            #expect(try over.status == .unprocessableContent && (code(over)) == .invalidUploadSize)

            // Someone else's upload: not theirs to fill, nor to send.
            let mine = try await flow.upload("mine.png", "image/png", declared)
            #expect(try await flow.put(mine, declared, as: "bob").status == .notFound)
            #expect(try await flow.put(mine, declared).status == .ok)
            let stolen = try await flow.send("look", attachments: [mine.uploadId], as: "bob")
            #expect(try stolen.status == .unprocessableContent && (code(stolen)) == .invalidAttachments)

            // Incomplete, twice listed, too many, sent twice.
            let pending = try await flow.upload("later.png", "image/png", declared)
            #expect(try code(try await flow.send("x", attachments: [pending.uploadId])) == .invalidAttachments)
            #expect(try code(try await flow.send("x", attachments: [mine.uploadId, mine.uploadId])) == .invalidAttachments)
            #expect(try code(try await flow.send("x", attachments: (0..<11).map { _ in UUID() })) == .invalidAttachments)
            let sent = try await flow.send("first", attachments: [mine.uploadId], clientID: "c1")
            #expect(sent.status == .created)
            #expect(try code(try await flow.send("second", attachments: [mine.uploadId], clientID: "c2")) == .invalidAttachments)
            // The same send retried is the same message, attachments and all.
            let retried = try await flow.send("first", attachments: [mine.uploadId], clientID: "c1")
            #expect(retried.status == .ok)
            #expect(try retried.decode(MessageEnvelope.self) == (try sent.decode(MessageEnvelope.self)))
            // No body and no attachment is still no message.
            #expect(try code(try await flow.send("", attachments: [])) == .invalidMessageBody)

            // An upload that expired unsent.
            let late = try await flow.upload("late.png", "image/png", declared)
            #expect(try await flow.put(late, declared).status == .ok)
            _ = try await flow.server.store.values(
                Int.self, "UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = \(late.uploadId) RETURNING 1")
            #expect(try code(try await flow.send("too late", attachments: [late.uploadId])) == .invalidAttachments)

            // Nothing refused was stored: one message.
            let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages", as: "alice")
                .decode(MessagePage.self)
            #expect(page.messages.map(\.body) == ["first"])
        }
    }

    /// Markup is never shown inline: an HTML or SVG file is a download.
    @Test func markupIsAFileAndADownload() async throws {
        try await Self.withFlow { flow in
            let html = Array("<!DOCTYPE html><html><script>alert(1)</script></html>".utf8)
            let ticket = try await flow.upload("page.html", "text/html", html)
            let put = try await flow.put(ticket, html)
            let attachment = try #require(try put.decode(UploadProgress.self).attachment)
            #expect(attachment.kind == .file && attachment.width == nil)
            #expect(try await flow.send("", attachments: [ticket.uploadId]).status == .created)
            let download = try await flow.server.request(.get, attachment.url, as: "bob")
            #expect(download.headers[HTTPField.Name("Content-Disposition")!]?.hasPrefix("attachment;") == true)
            #expect(download.headers[HTTPField.Name("X-Content-Type-Options")!] == "nosniff")
            // Declared an image, the bytes are markup: refused.
            let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#.utf8)
            let pretending = try await flow.upload("logo.png", "image/png", svg)
            #expect(try await flow.put(pretending, svg).status == .unprocessableContent)
        }
    }

    /// Edits keep a message's attachments; a deletion takes them away.
    @Test func anEditKeepsAttachmentsAndADeletionRemovesThem() async throws {
        try await Self.withFlow { flow in
            let bytes = Self.png(width: 2, height: 3)
            let ticket = try await flow.upload("dot.png", "image/png", bytes)
            _ = try await flow.put(ticket, bytes)
            let message = try await flow.send("caption", attachments: [ticket.uploadId]).decode(MessageEnvelope.self).message
            let path = "/v1/conversations/\(flow.conversation)/messages/\(message.seq)"
            let edited = try await flow.server.request(.patch, path, as: "alice", json: EditMessageRequest(body: "new caption"))
                .decode(MessageEnvelope.self).message
            #expect(edited.attachments == message.attachments)
            let deleted = try await flow.server.request(.delete, path, as: "alice").decode(MessageEnvelope.self).message
            #expect(deleted.attachments.isEmpty)
            let url = try #require(message.attachments.first?.url)
            #expect(try await flow.server.request(.get, url, as: "bob").status == .notFound)
        }
    }
}
