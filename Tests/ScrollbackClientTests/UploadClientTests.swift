import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// Photos and files through the kit, against a real server and PostgreSQL:
/// progress, pieces resumed after a lost answer, cancellation, and the
/// completion form.
@Suite struct UploadClientTests {
    /// A PNG header of `width` × `height`, then `size` bytes in all.
    static func png(width: UInt32, height: UInt32, size: Int) -> Data {
        var bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        bytes += Array("IHDR".utf8)
        for value in [width, height] { bytes += withUnsafeBytes(of: value.bigEndian, Array.init) }
        bytes += [8, 6, 0, 0, 0, 0, 0, 0, 0]
        bytes += (0..<(size - bytes.count)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        return Data(bytes)
    }

    /// The bytes of an attachment, downloaded as an app's image loader
    /// would: its `url` with the member's token.
    static func download(_ attachment: ScrollbackModels.Attachment, from baseURL: String, token: String) async throws -> Data {
        var request = HTTPClientRequest(url: baseURL + attachment.url)
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        #expect(response.status.code == 200)
        return Data(buffer: try await response.body.collect(upTo: 64 << 20))
    }

    @Test func aPhotoIsUploadedInPiecesWithProgressAndSentWithAnEmptyBody() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let id = try await alice.createConversation(members: ["bob"]).id
            let photo = Self.png(width: 3024, height: 4032, size: 2 * ScrollbackClient.uploadPieceBytes + 12_345)
            let reports = NIOLockedValueBox<[UploadReport]>([])
            let attachment = try await alice.upload(
                photo, filename: "IMG_0001.png", contentType: "image/png", to: id,
                progress: { report in reports.withLockedValue { $0.append(report) } })
            #expect(attachment.kind == .image && attachment.width == 3024 && attachment.height == 4032)
            #expect(attachment.size == Int64(photo.count) && attachment.filename == "IMG_0001.png")
            let total = Int64(photo.count)
            let piece = Int64(ScrollbackClient.uploadPieceBytes)
            #expect(reports.withLockedValue { $0 }.map(\.sent) == [0, piece, 2 * piece, total])
            #expect(reports.withLockedValue { $0 }.allSatisfy { $0.total == total })

            let sent = try await alice.send("", to: id, attachments: [attachment.id])
            #expect(sent.message.attachments == [attachment] && sent.message.body.isEmpty)
            let bob = ClientTests.client(cluster, "bob")
            #expect(try await bob.page(of: id).messages.first?.attachments == [attachment])
            let bytes = try await Self.download(attachment, from: cluster.instances[0].baseURL, token: try await cluster.token("bob"))
            #expect(bytes == photo)
        }
    }

    /// A piece reaches the server but its answer is lost with the
    /// connection: the kit asks where the upload stands and sends the rest
    /// from there, so the file arrives whole, each byte once.
    @Test func anUploadWhoseAnswerIsLostResumesFromWhereTheServerStands() async throws {
        try await LiveCluster.run { cluster in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let alice = ClientTests.client(cluster, "alice", baseURL: "http://127.0.0.1:\(proxy.port)")
            let id = try await alice.createConversation().id
            let photo = Self.png(width: 800, height: 600, size: 3 * ScrollbackClient.uploadPieceBytes - 1)
            proxy.loseNextAnswer(to: "PUT /v1/conversations/\(id.uuidString.lowercased())/uploads/")
            let attachment = try await alice.upload(photo, filename: "cut.png", contentType: "image/png", to: id)
            #expect(attachment.width == 800 && attachment.height == 600 && attachment.size == Int64(photo.count))
            _ = try await alice.send("through a cut", to: id, attachments: [attachment.id])
            let bytes = try await Self.download(attachment, from: cluster.instances[0].baseURL, token: try await cluster.token("alice"))
            #expect(bytes == photo)
        }
    }

    /// Cancelling the task stops the upload between two pieces with
    /// `.cancelled`; what was sent stays an unsent upload that expires.
    @Test func aCancelledUploadStopsBetweenPieces() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let id = try await alice.createConversation().id
            let file = Self.png(width: 10, height: 10, size: 4 * ScrollbackClient.uploadPieceBytes)
            let firstPiece = AsyncStream<Void>.makeStream()
            let task = Task { () async throws(ScrollbackError) -> ScrollbackModels.Attachment in
                try await alice.upload(
                    file, filename: "big.png", contentType: "image/png", to: id,
                    progress: { report in
                        if report.sent > 0 { firstPiece.continuation.yield() }
                    })
            }
            for await _ in firstPiece.stream { break }
            task.cancel()
            switch await task.result {
            case .success: Issue.record("a cancelled upload finished")
            case .failure(let error): #expect((error as? ScrollbackError) == .cancelled, "\(error)")
            }
            // Nothing was sent with a message.
            #expect(try await alice.page(of: id).messages.isEmpty)
        }
    }

    @Test func theCompletionFormUploadsAndTheSendCarriesTheAttachment() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let id = try await alice.createConversation().id
            let file = Data("%PDF-1.7\n1 0 obj\n<<>>\nendobj\n%%EOF\n".utf8)
            let attachment = try await withCheckedThrowingContinuation { continuation in
                alice.upload(file, filename: "notes.pdf", contentType: "application/pdf", to: id) { result in
                    continuation.resume(with: result)
                }
            }
            #expect(attachment.kind == .file && attachment.contentType == "application/pdf" && attachment.width == nil)
            let sent = try await withCheckedThrowingContinuation { continuation in
                alice.send("the notes", to: id, attachments: [attachment.id]) { continuation.resume(with: $0) }
            }
            #expect(sent.message.attachments.map(\.id) == [attachment.id])

            // A file that is not what it says is refused, with the server's reason.
            do {
                _ = try await alice.upload(file, filename: "fake.png", contentType: "image/png", to: id)
                Issue.record("a PDF was taken as a PNG")
            } catch let error as ScrollbackError {
                #expect(error.code == .invalidUploadContent)
            }
        }
    }
}
