import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ScrollbackTestSupport
import Testing

@testable import ScrollbackObjectStorage

@Test func theS3TestServerIsConfiguredWhenRequired() {
    guard S3TestServer.isRequired else { return }
    for name in S3TestServer.names {
        #expect(S3TestServer.environment[name] != nil, "\(name) must be set when SCROLLBACK_TEST_S3_REQUIRED=1")
    }
}

@Suite(
    .enabled(
        if: S3TestServer.isConfigured,
        "needs an S3-compatible server in SCROLLBACK_TEST_S3_ENDPOINT: run scripts/test-object-storage"),
    .timeLimit(.minutes(2))
)
struct S3IntegrationTests {
    /// A store in a prefix of its own (tests run in parallel), and a plain
    /// HTTP client standing for the app that uses presigned URLs.
    static func withStore(
        secretAccessKey: String? = nil, accessKeyID: String? = nil,
        _ body: (S3ObjectStore, HTTPClient) async throws -> Void
    ) async throws {
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let configuration = try S3TestServer.configuration(secretAccessKey: secretAccessKey, accessKeyID: accessKeyID)
            try await body(S3ObjectStore(configuration: configuration, httpClient: httpClient, logger: Logger(label: "s3-test")), httpClient)
        } catch {
            try await httpClient.shutdown()
            throw error
        }
        try await httpClient.shutdown()
    }

    /// Sends a request as an app would with what the server handed it.
    static func send(
        _ httpClient: HTTPClient, _ method: HTTPMethod, _ url: URL, headers: [String: String] = [:],
        body: [UInt8]? = nil
    ) async throws -> (status: UInt, headers: HTTPHeaders, body: [UInt8]) {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        for (name, value) in headers where name != "content-length" { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body, length: .known(Int64(body.count))) }
        let response = try await httpClient.execute(request, timeout: .seconds(20))
        let bytes = try await response.body.collect(upTo: 16 * 1024 * 1024)
        return (response.status.code, response.headers, Array(bytes.readableBytesView))
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    @Test func presignedUploadThenHeadShowsSizeTypeAndETag() async throws {
        try await Self.withStore { store, http in
            let bytes = Self.randomBytes(70_000)
            let key = "uploads/a b+ü$=&(1).png"
            let upload = try store.presignedUpload(
                key: key, contentType: "image/png", contentLength: Int64(bytes.count), expires: .seconds(300))
            #expect(upload.headers == ["content-type": "image/png", "content-length": "70000"])
            let sent = try await Self.send(http, .PUT, upload.url, headers: upload.headers, body: bytes)
            #expect(sent.status == 200)
            let metadata = try #require(try await store.head(key: key))
            #expect(metadata.size == 70_000)
            #expect(metadata.contentType == "image/png")
            #expect(metadata.etag == Insecure.MD5.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
        }
    }

    @Test func uploadOfAnotherLengthThanSignedIsRefusedAndStoresNothing() async throws {
        try await Self.withStore { store, http in
            let upload = try store.presignedUpload(key: "k", contentType: "image/png", contentLength: 10, expires: .seconds(60))
            let longer = try await Self.send(http, .PUT, upload.url, headers: upload.headers, body: Self.randomBytes(11))
            #expect(longer.status == 403)
            #expect(String(decoding: longer.body, as: UTF8.self).contains("SignatureDoesNotMatch"))
            let shorter = try await Self.send(http, .PUT, upload.url, headers: upload.headers, body: Self.randomBytes(9))
            #expect(shorter.status == 403)
            #expect(try await store.head(key: "k") == nil)
        }
    }

    @Test func uploadOfAnotherTypeThanSignedIsRefused() async throws {
        try await Self.withStore { store, http in
            let upload = try store.presignedUpload(key: "k", contentType: "image/png", contentLength: 4, expires: .seconds(60))
            let html = try await Self.send(http, .PUT, upload.url, headers: ["content-type": "text/html"], body: Array("<b>".utf8) + [0])
            #expect(html.status == 403)
            let untyped = try await Self.send(http, .PUT, upload.url, body: [1, 2, 3, 4])
            #expect(untyped.status == 403)
            #expect(try await store.head(key: "k") == nil)
            // The same URL with the signed values still works.
            let right = try await Self.send(http, .PUT, upload.url, headers: upload.headers, body: [1, 2, 3, 4])
            #expect(right.status == 200)
        }
    }

    @Test func presignedDownloadReturnsTheBytesWithTheAskedDispositionAndHonoursRange() async throws {
        try await Self.withStore { store, http in
            let bytes = Self.randomBytes(100_000)
            try await store.put(key: "photo.jpg", body: ByteBuffer(bytes: bytes), contentType: "image/jpeg")
            let url = try store.presignedDownload(
                key: "photo.jpg", expires: .seconds(60), filename: "Café.jpg", contentType: "image/jpeg", inline: true)
            let whole = try await Self.send(http, .GET, url)
            #expect(whole.status == 200)
            #expect(whole.body == bytes)
            #expect(whole.headers.first(name: "content-type") == "image/jpeg")
            #expect(
                whole.headers.first(name: "content-disposition")
                    == "inline; filename=\"Caf_.jpg\"; filename*=UTF-8''Caf%C3%A9.jpg")
            let part = try await Self.send(http, .GET, url, headers: ["range": "bytes=1000-1999"])
            #expect(part.status == 206)
            #expect(part.body == Array(bytes[1000...1999]))
        }
    }

    @Test func readReturnsTheFirstBytesAndNothingPastTheEnd() async throws {
        try await Self.withStore { store, _ in
            let bytes = Self.randomBytes(200_000)
            try await store.put(key: "big.bin", body: ByteBuffer(bytes: bytes), contentType: "application/octet-stream")
            let head = try await store.read(key: "big.bin", range: 0...65_535)
            #expect(Array(head.readableBytesView) == Array(bytes[0..<65_536]))
            let middle = try await store.read(key: "big.bin", range: 100_000...100_009)
            #expect(Array(middle.readableBytesView) == Array(bytes[100_000...100_009]))
            try await store.put(key: "small.txt", body: ByteBuffer(string: "tiny"), contentType: "text/plain")
            #expect(String(buffer: try await store.read(key: "small.txt", range: 0...65_535)) == "tiny")
            #expect(try await store.read(key: "small.txt", range: 10...20).readableBytes == 0)
        }
    }

    @Test func streamYieldsEveryByteForHashing() async throws {
        try await Self.withStore { store, _ in
            let bytes = Self.randomBytes(1_500_000)
            try await store.put(key: "hash-me", body: ByteBuffer(bytes: bytes), contentType: "video/mp4")
            let stream = try await store.stream(key: "hash-me")
            #expect(stream.metadata.size == 1_500_000)
            #expect(stream.metadata.contentType == "video/mp4")
            var hasher = SHA256()
            var count = 0
            for try await buffer in stream {
                buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                count += buffer.readableBytes
            }
            #expect(count == bytes.count)
            #expect(Array(hasher.finalize()) == Array(SHA256.hash(data: bytes)))
        }
    }

    @Test func anExpiredPresignedURLIsRefused() async throws {
        try await Self.withStore { store, http in
            try await store.put(key: "soon-gone", body: ByteBuffer(string: "x"), contentType: "text/plain")
            let download = try store.presignedDownload(key: "soon-gone", expires: .seconds(1))
            let upload = try store.presignedUpload(key: "late", contentType: "text/plain", contentLength: 1, expires: .seconds(1))
            try await Task.sleep(for: .milliseconds(2200))
            let get = try await Self.send(http, .GET, download)
            #expect(get.status == 403)
            #expect(String(decoding: get.body, as: UTF8.self).contains("Request has expired"))
            let put = try await Self.send(http, .PUT, upload.url, headers: upload.headers, body: [0x78])
            #expect(put.status == 403)
            #expect(try await store.head(key: "late") == nil)
        }
    }

    @Test func deleteRemovesTheObjectAndDeletingAgainSucceeds() async throws {
        try await Self.withStore { store, http in
            try await store.put(key: "doomed", body: ByteBuffer(string: "bytes"), contentType: "text/plain")
            let url = try store.presignedDownload(key: "doomed", expires: .seconds(60))
            #expect(try await store.head(key: "doomed") != nil)
            try await store.delete(key: "doomed")
            #expect(try await store.head(key: "doomed") == nil)
            #expect(try await Self.send(http, .GET, url).status == 404)
            try await store.delete(key: "doomed")
        }
    }

    @Test func aMissingObjectIsNilForHeadAndNotFoundForReads() async throws {
        try await Self.withStore { store, _ in
            let metadata = try await store.head(key: "never-written")
            #expect(metadata == nil)
            await #expect(throws: ObjectStorageError.notFound(key: "never-written")) {
                try await store.read(key: "never-written", range: 0...10)
            }
            await #expect(throws: ObjectStorageError.notFound(key: "never-written")) {
                _ = try await store.stream(key: "never-written")
            }
        }
    }

    @Test func aWrongSecretIsRefusedForSignedCallsAndPresignedURLs() async throws {
        try await Self.withStore(secretAccessKey: "not-the-secret") { store, http in
            await #expect(throws: ObjectStorageError.forbidden(code: "SignatureDoesNotMatch")) {
                try await store.put(key: "k", body: ByteBuffer(string: "x"), contentType: "text/plain")
            }
            await #expect(throws: ObjectStorageError.forbidden(code: "SignatureDoesNotMatch")) {
                try await store.read(key: "k", range: 0...1)
            }
            await #expect(throws: ObjectStorageError.forbidden(code: "SignatureDoesNotMatch")) {
                try await store.delete(key: "k")
            }
            let upload = try store.presignedUpload(key: "k", contentType: "text/plain", contentLength: 1, expires: .seconds(60))
            #expect(try await Self.send(http, .PUT, upload.url, headers: upload.headers, body: [0x78]).status == 403)
            let download = try store.presignedDownload(key: "k", expires: .seconds(60))
            #expect(try await Self.send(http, .GET, download).status == 403)
        }
    }

    @Test func anUnknownAccessKeyIsRefused() async throws {
        try await Self.withStore(accessKeyID: "AKIAUNKNOWN") { store, _ in
            await #expect(throws: ObjectStorageError.forbidden(code: "InvalidAccessKeyId")) {
                try await store.delete(key: "k")
            }
        }
    }
}
