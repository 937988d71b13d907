import AsyncHTTPClient
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import ScrollbackModels
import ScrollbackObjectStorage
import ScrollbackStore
import ScrollbackTestSupport
import Testing

@testable import ScrollbackServer

/// Uploads whose bytes live in an S3-compatible object store
/// (`SCROLLBACK_STORAGE_URL`), end to end: the server hands out a presigned
/// PUT, the client sends the bytes straight to the store, the server
/// inspects them there, downloads are redirects to presigned GETs, and the
/// sweeper deletes the objects it collects. Against the S3 test server that
/// scripts/test-object-storage starts (moto behind a Signature V4 gate).
@Suite(
    .enabled(
        if: S3TestServer.isConfigured,
        "needs an S3-compatible server in SCROLLBACK_TEST_S3_ENDPOINT: run scripts/test-object-storage"),
    .timeLimit(.minutes(3))
)
struct ObjectStoredUploadTests {
    struct Flow {
        let server: TestServer
        let conversation: UUID
        let http: HTTPClient
        let objects: S3ObjectStore

        func announce(_ filename: String, _ contentType: String, size: Int) async throws -> UploadTicket {
            let created = try await server.request(
                .post, "/v1/conversations/\(conversation)/uploads", as: "alice",
                json: CreateUploadRequest(filename: filename, contentType: contentType, size: Int64(size)))
            try #require(created.status == .created, "\(created.text)")
            return try created.decode(UploadTicket.self)
        }

        /// Sends `bytes` to where the ticket says, as an app would: no
        /// credentials of its own, only what the server handed out.
        func put(_ ticket: UploadTicket, _ bytes: [UInt8]) async throws -> UInt {
            var request = HTTPClientRequest(url: ticket.uploadURL)
            request.method = HTTPMethod(rawValue: ticket.method)
            for (name, value) in ticket.headers { request.headers.add(name: name, value: value) }
            request.body = .bytes(ByteBuffer(bytes: bytes))
            let response = try await http.execute(request, timeout: .seconds(20))
            _ = try await response.body.collect(upTo: 1 << 20)
            return response.status.code
        }

        func status(_ ticket: UploadTicket) async throws -> TestServer.Reply {
            try await server.request(.get, "/v1/conversations/\(conversation)/uploads/\(ticket.uploadId)", as: "alice")
        }

        func send(_ body: String, attachments: [UUID]) async throws -> TestServer.Reply {
            try await server.request(
                .post, "/v1/conversations/\(conversation)/messages", as: "alice",
                json: SendMessageRequest(body: body, attachments: attachments))
        }

        func key(_ uploadID: UUID) -> String { UploadStorage.objectKey(of: uploadID, in: conversation) }

        /// Fetches a presigned link as a browser would, with no token.
        func fetch(_ url: String, headers: [String: String] = [:]) async throws -> (UInt, HTTPHeaders, [UInt8]) {
            var request = HTTPClientRequest(url: url)
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let response = try await http.execute(request, timeout: .seconds(20))
            let body = try await response.body.collect(upTo: 64 << 20)
            return (response.status.code, response.headers, Array(buffer: body))
        }
    }

    static func withFlow(_ body: @escaping @Sendable (Flow) async throws -> Void) async throws {
        let storage = try S3TestServer.configuration(prefix: "server")
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await TestServer.run(configure: {
                $0.uploads.objectStorage = storage
                // Collected at once, so a test sees the sweeper delete objects.
                $0.uploads.removalGrace = .zero
                $0.uploads.sweepInterval = .milliseconds(200)
            }) { server in
                let conversation = try await server.createConversation(as: "alice", members: ["bob"])
                let objects = S3ObjectStore(configuration: storage, httpClient: http, logger: Logger(label: "s3-test"))
                try await body(Flow(server: server, conversation: conversation.id, http: http, objects: objects))
            }
        } catch {
            try await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    @Test func aPhotoGoesStraightToTheStoreAndComesBackThroughAPresignedLink() async throws {
        try await Self.withFlow { flow in
            let bytes = UploadAPITests.png(width: 1600, height: 1200, padding: 400_000)
            let ticket = try await flow.announce("view.png", "image/png", size: bytes.count)
            #expect(ticket.method == "PUT")
            #expect(ticket.uploadURL.hasPrefix(S3TestServer.environment["SCROLLBACK_TEST_S3_ENDPOINT"] ?? "-"))
            #expect(ticket.uploadURL.contains("X-Amz-Signature="))

            // Nothing there yet: the upload waits, and cannot be sent.
            let waiting = try await flow.status(ticket).decode(UploadProgress.self)
            #expect(waiting.received == 0 && !waiting.complete)
            let early = try await flow.send("", attachments: [ticket.uploadId])
            #expect(try early.status == .unprocessableContent && early.error().error.code == .invalidAttachments)

            // Not through this server: its own PUT route refuses the bytes.
            let wrongDoor = try await flow.server.request(
                .put, "/v1/conversations/\(flow.conversation)/uploads/\(ticket.uploadId)", as: "alice", bytes: bytes)
            #expect(try wrongDoor.status == .conflict && wrongDoor.error().error.code == .uploadUnavailable)

            #expect(try await flow.put(ticket, bytes) == 200)
            let done = try await flow.status(ticket).decode(UploadProgress.self)
            #expect(done.complete && done.received == Int64(bytes.count))
            let found = try #require(done.attachment)
            #expect(found.kind == .image && found.contentType == "image/png" && found.width == 1600 && found.height == 1200)

            let sent = try await flow.send("", attachments: [ticket.uploadId])
            #expect(sent.status == .created, "\(sent.text)")
            #expect(try sent.decode(MessageEnvelope.self).message.attachments == [found])

            // bob's download is a redirect to a short-lived link the store answers.
            let download = try await flow.server.request(.get, found.url, as: "bob")
            #expect(download.status == .found)
            #expect(download.headers[.cacheControl] == "private, no-store")
            let link = try #require(download.headers[.location])
            let (status, headers, body) = try await flow.fetch(link)
            #expect(status == 200)
            #expect(body == bytes)
            #expect(headers.first(name: "Content-Type") == "image/png")
            #expect(headers.first(name: "Content-Disposition")?.hasPrefix("inline") == true)
            let (partStatus, _, part) = try await flow.fetch(link, headers: ["Range": "bytes=100-199"])
            #expect(partStatus == 206 && part == Array(bytes[100...199]))
            // Not for someone outside the conversation, not even a redirect.
            let stranger = try await flow.server.request(.get, found.url, as: "mallory")
            #expect(stranger.status == .notFound && stranger.headers[.location] == nil)

            // Deleted: the sweeper deletes the object too.
            let seq = try sent.decode(MessageEnvelope.self).message.seq
            let deleted = try await flow.server.request(
                .delete, "/v1/conversations/\(flow.conversation)/messages/\(seq)", as: "alice")
            #expect(deleted.status == .ok, "\(deleted.text)")
            let key = flow.key(ticket.uploadId)
            let deadline = ContinuousClock.now + .seconds(20)
            while try await flow.objects.head(key: key) != nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await flow.objects.head(key: key) == nil, "the deleted attachment's object is still stored")
        }
    }

    /// What the presigned PUT and the server's inspection refuse.
    @Test func bytesThatAreNotWhatWasDeclaredAreRefusedAndTheirObjectDeleted() async throws {
        try await Self.withFlow { flow in
            // Another size than declared: the signature covers the length.
            let png = UploadAPITests.png(width: 40, height: 30)
            let sized = try await flow.announce("a.png", "image/png", size: png.count)
            #expect(try await flow.put(sized, png + [0]) == 403)
            #expect(try await flow.status(sized).decode(UploadProgress.self).received == 0)

            // Declared a PNG, the bytes are a JPEG of the same length: the
            // store takes them, the server's inspection refuses them.
            let jpeg = UploadAPITests.jpeg(width: 10, height: 10)
            let lying = try await flow.announce("b.png", "image/png", size: jpeg.count)
            #expect(try await flow.put(lying, jpeg) == 200)
            let refused = try await flow.send("look", attachments: [lying.uploadId])
            #expect(try refused.status == .unprocessableContent && refused.error().error.code == .invalidUploadContent)
            #expect(refused.text.contains("image/jpeg"))
            #expect(try await flow.status(lying).status == .notFound)
            #expect(try await flow.objects.head(key: flow.key(lying.uploadId)) == nil)

            // Nothing refused was stored.
            let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages", as: "alice")
            #expect(try page.decode(MessagePage.self).messages.isEmpty)
        }
    }
}

/// An object store that cannot be reached: the calls that need it answer
/// 503 with `Retry-After`, everything else goes on. Needs no S3 server.
@Suite struct UnreachableObjectStoreTests {
    @Test func callsThatNeedTheStoreAnswer503AndTheRestGoesOn() async throws {
        // Port 1 of loopback: nothing listens there, connections are refused at once.
        let port = 1
        let storage = try ObjectStorageConfiguration(
            storageURL: "s3://unreachable-bucket/uploads", endpoint: "http://127.0.0.1:\(port)", region: "us-east-1",
            credentials: S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret"), requestTimeout: .seconds(5))
        try await TestServer.run(configure: { $0.uploads.objectStorage = storage }) { server in
            let conversation = try await server.createConversation(as: "alice")
            // Announcing only signs a URL: no call to the store.
            let created = try await server.request(
                .post, "/v1/conversations/\(conversation.id)/uploads", as: "alice",
                json: CreateUploadRequest(filename: "a.png", contentType: "image/png", size: 100))
            #expect(created.status == .created, "\(created.text)")
            let ticket = try created.decode(UploadTicket.self)
            #expect(ticket.uploadURL.hasPrefix("http://127.0.0.1:\(port)/unreachable-bucket/uploads/"))

            let status = try await server.request(
                .get, "/v1/conversations/\(conversation.id)/uploads/\(ticket.uploadId)", as: "alice")
            #expect(try status.status == .serviceUnavailable && status.error().error.code == .serviceUnavailable)
            #expect(status.headers[.retryAfter] == "1")
            let send = try await server.request(
                .post, "/v1/conversations/\(conversation.id)/messages", as: "alice",
                json: SendMessageRequest(body: "look", attachments: [ticket.uploadId]))
            #expect(send.status == .serviceUnavailable, "\(send.text)")

            // Messages without attachments do not need the store.
            #expect(try await server.send("still here", to: conversation.id, as: "alice").status == .created)
            let page = try await server.request(.get, "/v1/conversations/\(conversation.id)/messages", as: "alice")
            #expect(try page.decode(MessagePage.self).messages.map(\.body) == ["still here"])
        }
    }
}
