import Foundation
import HTTPTypes
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// What the server reads from an upload's bytes, end to end: uploaded over
/// HTTP into the PostgreSQL storage, sent with a message (over HTTP or the
/// live stream), read back from a page and downloaded.
@Suite struct UploadMediaTests {
    typealias Flow = UploadAPITests.Flow

    /// A real encoder's file from the media module's fixtures (see their README).
    static func fixture(_ name: String) throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("ScrollbackMediaTests/Fixtures/\(name)")
        return [UInt8](try Data(contentsOf: url))
    }

    static func littleEndian16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
    static func littleEndian32(_ value: Int) -> [UInt8] { littleEndian16(value & 0xFFFF) + littleEndian16(value >> 16) }

    /// A GIF89a of `width` × `height`: header, logical screen, one 1×1 image, trailer.
    static func gif(width: Int, height: Int) -> [UInt8] {
        Array("GIF89a".utf8) + littleEndian16(width) + littleEndian16(height) + [0x00, 0x00, 0x00]
            + [0x2C] + littleEndian16(0) + littleEndian16(0) + littleEndian16(1) + littleEndian16(1) + [0x00]
            + [0x02, 0x02, 0x44, 0x01, 0x00] + [0x3B]
    }

    /// A lossless WebP (VP8L) of `width` × `height`: its sizes minus one in 14 bits each.
    static func webpLossless(width: Int, height: Int) -> [UInt8] {
        let bits = (width - 1) | (height - 1) << 14 | 1 << 28
        let chunk = Array("VP8L".utf8) + littleEndian32(8) + [0x2F] + littleEndian32(bits) + [0, 0, 0]
        return Array("RIFF".utf8) + littleEndian32(4 + chunk.count) + Array("WEBP".utf8) + chunk
    }

    static func withFlow(_ body: @escaping @Sendable (Flow) async throws -> Void) async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            try await body(Flow(server: server, conversation: conversation.id))
        }
    }

    /// Uploads `bytes`, sends them with a message, and answers the attachment
    /// as bob reads it in a page (checked to be the one the upload reported).
    static func attachment(
        _ filename: String, _ contentType: String, _ bytes: [UInt8], in flow: Flow, blurhash: String? = nil
    ) async throws -> ScrollbackModels.Attachment {
        let created = try await flow.announce(filename, contentType, size: bytes.count, blurhash: blurhash)
        try #require(created.status == .created, "\(created.text)")
        let ticket = try created.decode(UploadTicket.self)
        let put = try await flow.put(ticket, bytes)
        try #require(put.status == .ok, "\(filename): \(put.text)")
        let found = try #require(try put.decode(UploadProgress.self).attachment, "\(filename)")
        let sent = try await flow.send("", attachments: [ticket.uploadId])
        try #require(sent.status == .created, "\(sent.text)")
        #expect(try sent.decode(MessageEnvelope.self).message.attachments == [found])
        let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages?limit=1", as: "bob")
            .decode(MessagePage.self)
        let read = try #require(page.messages.first?.attachments.first)
        #expect(read == found)
        return read
    }

    @Test func aGIFAndAWebPHaveTheirPixelSize() async throws {
        try await Self.withFlow { flow in
            let cases: [(String, String, [UInt8], Int, Int)] = [
                ("loop.gif", "image/gif", try Self.fixture("gif89a-7x5.gif"), 7, 5),
                ("wide.gif", "image/gif", Self.gif(width: 321, height: 123), 321, 123),
                ("lossy.webp", "image/webp", try Self.fixture("webp-lossy-7x5.webp"), 7, 5),
                ("alpha.webp", "image/webp", try Self.fixture("webp-extended-alpha-7x5.webp"), 7, 5),
                ("tall.webp", "image/webp", Self.webpLossless(width: 200, height: 300), 200, 300),
            ]
            for (filename, contentType, bytes, width, height) in cases {
                let attachment = try await Self.attachment(filename, contentType, bytes, in: flow)
                #expect(attachment.kind == .image, "\(filename)")
                #expect(attachment.contentType == contentType, "\(filename)")
                #expect(attachment.width == width && attachment.height == height, "\(filename): \(attachment)")
                #expect(attachment.size == Int64(bytes.count))
            }
        }
    }

    /// A phone's portrait photo is stored landscape with EXIF orientation 6:
    /// the message gives the size as displayed, width and height swapped.
    @Test func aJPEGRotatedByEXIFHasItsDisplayedSize() async throws {
        try await Self.withFlow { flow in
            let upright = try await Self.attachment("upright.jpg", "image/jpeg", try Self.fixture("jpeg-baseline-7x5.jpg"), in: flow)
            #expect(upright.width == 7 && upright.height == 5)
            for name in ["jpeg-exif-big-endian-orientation6-7x5.jpg", "jpeg-exif-thumbnail-orientation6-7x5.jpg"] {
                let rotated = try await Self.attachment("portrait.jpg", "image/jpeg", try Self.fixture(name), in: flow)
                #expect(rotated.kind == .image && rotated.contentType == "image/jpeg")
                #expect(rotated.width == 5 && rotated.height == 7, "\(name): \(rotated)")
            }
        }
    }

    @Test func aClientBlurhashIsStoredAndReturnedOnTheMessage() async throws {
        try await Self.withFlow { flow in
            let hash = "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
            let attachment = try await Self.attachment(
                "blurred.png", "image/png", UploadAPITests.png(width: 40, height: 30), in: flow, blurhash: hash)
            #expect(attachment.blurhash == hash)
            #expect(try await flow.server.store.values(String.self, "SELECT blurhash FROM uploads WHERE id = \(attachment.id)") == [hash])
            // And none for an upload that gave none.
            let plain = try await Self.attachment("plain.png", "image/png", UploadAPITests.png(width: 4, height: 3), in: flow)
            #expect(plain.blurhash == nil)
        }
    }

    /// Downloads from the database are cached privately (by the member's
    /// client, never by a shared cache) and never sniffed into another type.
    @Test func aDownloadIsPrivatelyCachedAndNeverSniffed() async throws {
        try await Self.withFlow { flow in
            let nosniff = HTTPField.Name("X-Content-Type-Options")!
            let image = UploadAPITests.png(width: 16, height: 9, padding: 5_000)
            let pdf = Array("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)
            for (filename, contentType, bytes) in [("photo.png", "image/png", image), ("report.pdf", "application/pdf", pdf)] {
                let attachment = try await Self.attachment(filename, contentType, bytes, in: flow)
                for range in [nil, "bytes=0-9"] {
                    let download = try await flow.server.request(
                        .get, attachment.url, as: "bob", headers: range.map { [.range: $0] } ?? [:])
                    #expect(download.status == (range == nil ? .ok : .partialContent), "\(filename)")
                    let cacheControl = try #require(download.headers[.cacheControl], "\(filename)")
                    let directives = cacheControl.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    #expect(directives.contains("private"), "\(filename): \(cacheControl)")
                    #expect(!directives.contains("public"), "\(filename): \(cacheControl)")
                    #expect(download.headers[nosniff] == "nosniff", "\(filename)")
                    #expect(download.headers[.contentType] == contentType, "\(filename)")
                }
            }
        }
    }

    /// A `send` frame with `attachments` stores them like an HTTP send: the
    /// ack, the other member's live frame and the page all carry the image.
    @Test func aSendOverTheLiveStreamStoresItsAttachments() async throws {
        try await Self.withFlow { flow in
            let bytes = UploadAPITests.png(width: 64, height: 48)
            let ticket = try await flow.upload("live.png", "image/png", bytes)
            let found = try #require(try await flow.put(ticket, bytes).decode(UploadProgress.self).attachment)
            #expect(try await flow.server.readiness() == TestServer.ready)

            let port = try #require(flow.server.client.port)
            let alice = StreamClient(port: port, token: try await flow.server.token("alice"))
            let bob = StreamClient(port: port, token: try await flow.server.token("bob"))
            defer {
                alice.close()
                bob.close()
            }
            try await alice.waitUntilConnected()
            try await bob.waitUntilConnected()
            try bob.send(.subscribe(conversationId: flow.conversation, afterSeq: nil, presence: false))
            _ = try await bob.next { if case .subscribed = $0 { true } else { $0.isError } }

            try alice.send(.send(conversationId: flow.conversation, body: "", clientId: "live-1", attachments: [ticket.uploadId]))
            let acked = try await alice.next { if case .ack = $0 { true } else { $0.isError } }
            guard case .ack(let clientID, let message, let replayed) = acked else {
                Issue.record("expected an ack, got \(acked)")
                return
            }
            #expect(clientID == "live-1" && !replayed)
            #expect(message.body.isEmpty && message.attachments == [found])
            #expect(message.attachments.first?.width == 64 && message.attachments.first?.height == 48)

            let delivered = try await bob.next { $0.newMessage != nil || $0.isError }
            #expect(delivered.newMessage?.attachments == [found])

            let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages", as: "bob")
                .decode(MessagePage.self)
            #expect(page.messages.map(\.attachments) == [[found]])
            let download = try await flow.server.request(.get, found.url, as: "bob")
            #expect(download.status == .ok && Array(download.body) == bytes)
            // The upload was used: the same id again is refused.
            try alice.send(.send(conversationId: flow.conversation, body: "", clientId: "live-2", attachments: [ticket.uploadId]))
            let again = try await alice.next { if case .ack = $0 { true } else { $0.isError } }
            guard case .error(let code, _, let ref, _) = again else {
                Issue.record("expected an error, got \(again)")
                return
            }
            #expect(code == .invalidAttachments && ref == "live-2")
        }
    }
}
