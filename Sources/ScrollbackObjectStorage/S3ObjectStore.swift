import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// A request a client makes itself, without credentials: the method, the
/// URL and exactly the headers that were signed (the store refuses other
/// values), valid until `expiresAt`.
public struct PresignedRequest: Sendable, Equatable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var expiresAt: Date
}

/// What the store says of an object.
public struct ObjectMetadata: Sendable, Equatable {
    public var size: Int64
    public var contentType: String?
    /// The store's entity tag, without its quotes (an MD5 for a single-part upload on S3).
    public var etag: String?
}

/// Attachment bytes in an S3-compatible object store. The bytes never pass
/// through the server: clients upload and download with presigned URLs; the
/// server only looks (HEAD, a ranged GET to sniff the type, a streamed GET
/// to hash) and deletes. Every call is signed with AWS Signature V4.
///
/// Every call throws ``ObjectStorageError`` only. Requests are logged at
/// debug level with their method, key and status, never with a URL's query
/// or a header, and credentials are never logged.
public struct S3ObjectStore: Sendable {
    public let configuration: ObjectStorageConfiguration
    let signer: SignatureV4
    let httpClient: HTTPClient
    let logger: Logger

    /// - Parameter httpClient: owned by the caller, who shuts it down. A
    ///   client that decompresses or follows redirects would change what is
    ///   read: use one with the default configuration.
    public init(configuration: ObjectStorageConfiguration, httpClient: HTTPClient, logger: Logger) {
        self.configuration = configuration
        self.signer = SignatureV4(credentials: configuration.credentials, region: configuration.region)
        self.httpClient = httpClient
        self.logger = logger
    }

    // MARK: Presigned URLs, for clients

    /// A PUT a client sends the bytes with. A content type and a length given
    /// here are signed, so the store refuses an upload with any other value:
    /// the size the server was told is the size that is stored.
    public func presignedUpload(
        key: String, contentType: String?, contentLength: Int64?, expires: Duration, now: Date = Date()
    ) throws(ObjectStorageError) -> PresignedRequest {
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append(("content-type", try Self.headerValue(contentType, "content type"))) }
        if let contentLength {
            guard contentLength >= 0 else { throw .invalidRequest(reason: "a content length is not negative") }
            headers.append(("content-length", String(contentLength)))
        }
        let request = try objectRequest(method: "PUT", key: key, headers: headers)
        let seconds = try Self.expirySeconds(expires)
        let url = signer.presignedURL(for: request, date: now, expires: seconds)
        return PresignedRequest(
            method: "PUT", url: try Self.url(url), headers: Dictionary(uniqueKeysWithValues: headers),
            expiresAt: Self.expiry(now, seconds)
        )
    }

    /// A short-lived GET for a client. The store answers it with the
    /// `Content-Disposition` asked for here (`attachment` unless `inline`,
    /// with the file name in both RFC 6266 forms) and, when given, this
    /// `Content-Type` rather than the one stored.
    public func presignedDownload(
        key: String, expires: Duration, filename: String? = nil, contentType: String? = nil, inline: Bool = false,
        now: Date = Date()
    ) throws(ObjectStorageError) -> URL {
        var query: [(name: String, value: String)] = [
            ("response-content-disposition", Self.contentDisposition(filename: filename, inline: inline))
        ]
        if let contentType { query.append(("response-content-type", try Self.headerValue(contentType, "content type"))) }
        let request = try objectRequest(method: "GET", key: key, query: query)
        let seconds = try Self.expirySeconds(expires)
        return try Self.url(signer.presignedURL(for: request, date: now, expires: seconds))
    }

    // MARK: Calls the server makes

    /// The object's size, type and entity tag; nil when there is no such object.
    public func head(key: String) async throws -> ObjectMetadata? {
        let request = try objectRequest(method: "HEAD", key: key)
        let response = try await perform(request, key: key, accepting: [200, 404])
        if response.status.code == 404 { return nil }
        return try Self.metadata(of: response)
    }

    /// The bytes in `range` (offsets from 0, both ends included), fewer when
    /// the object is shorter, none when it starts at or past the end: what the
    /// server reads to sniff a type and an image's size from the first bytes.
    public func read(key: String, range: ClosedRange<Int64>) async throws -> ByteBuffer {
        guard range.lowerBound >= 0 else { throw ObjectStorageError.invalidRequest(reason: "a range starts at 0 or later") }
        let request = try objectRequest(
            method: "GET", key: key, headers: [("range", "bytes=\(range.lowerBound)-\(range.upperBound)")])
        let response = try await perform(request, key: key, accepting: [200, 206, 416])
        if response.status.code == 416 { return ByteBuffer() }
        let limit = range.upperBound - range.lowerBound + 1
        do {
            var body = try await response.body.collect(upTo: Int(clamping: limit))
            // A store that ignores Range answers 200 with everything.
            if response.status.code == 200, range.lowerBound > 0 {
                body.moveReaderIndex(forwardBy: min(body.readableBytes, Int(clamping: range.lowerBound)))
            }
            return body
        } catch is NIOTooManyBytesError {
            throw ObjectStorageError.badResponse(status: Int(response.status.code), code: "RangeNotHonoured")
        } catch {
            throw Self.transportError(error)
        }
    }

    /// The whole object as it arrives, buffer by buffer, for hashing without
    /// holding it in memory. Consume or drop the stream before the next call
    /// that needs the same connection.
    public func stream(key: String) async throws -> ObjectStream {
        let request = try objectRequest(method: "GET", key: key)
        let response = try await perform(request, key: key, accepting: [200])
        return ObjectStream(metadata: try Self.metadata(of: response), body: response.body)
    }

    /// Removes the object. Deleting a key with no object succeeds, as on S3.
    public func delete(key: String) async throws {
        let request = try objectRequest(method: "DELETE", key: key)
        _ = try await perform(request, key: key, accepting: [200, 204])
    }

    /// Stores `body` under `key`: for tests and small writes; attachments
    /// themselves are uploaded by clients with ``presignedUpload(key:contentType:contentLength:expires:now:)``.
    public func put(key: String, body: ByteBuffer, contentType: String?) async throws {
        var headers: [(name: String, value: String)] = []
        if let contentType { headers.append(("content-type", try Self.headerValue(contentType, "content type"))) }
        let request = try objectRequest(method: "PUT", key: key, headers: headers)
        _ = try await perform(request, key: key, accepting: [200], body: body)
    }

    // MARK: Building and sending

    func objectRequest(
        method: String, key: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = []
    ) throws(ObjectStorageError) -> SignatureV4.Request {
        let location = try configuration.location(ofKey: key)
        return SignatureV4.Request(
            method: method, scheme: configuration.endpointScheme, host: location.host, path: location.path,
            query: query, headers: headers)
    }

    /// The URL and headers of a header-signed request, as sent.
    func signed(_ request: SignatureV4.Request, body: ByteBuffer?, date: Date) -> HTTPClientRequest {
        let payloadHash =
            body.map { $0.withUnsafeReadableBytes { SignatureV4.payloadHash($0) } } ?? SignatureV4.emptyPayloadSHA256
        var http = HTTPClientRequest(url: "\(request.scheme)://\(request.host)\(request.encodedPath)")
        http.method = HTTPMethod(rawValue: request.method)
        for (name, value) in signer.signedHeaders(for: request, payloadHash: payloadHash, date: date) {
            http.headers.add(name: name, value: value)
        }
        if let body { http.body = .bytes(body) }
        return http
    }

    func perform(
        _ request: SignatureV4.Request, key: String, accepting accepted: Set<UInt>, body: ByteBuffer? = nil
    ) async throws(ObjectStorageError) -> HTTPClientResponse {
        let http = signed(request, body: body, date: Date())
        let response: HTTPClientResponse
        do {
            response = try await httpClient.execute(http, timeout: Self.timeAmount(configuration.requestTimeout))
        } catch {
            logger.debug("object store unreachable", metadata: ["method": "\(request.method)", "key": "\(key)"])
            throw Self.transportError(error)
        }
        logger.debug(
            "object store answered",
            metadata: ["method": "\(request.method)", "key": "\(key)", "status": "\(response.status.code)"])
        if accepted.contains(response.status.code) { return response }
        // S3's error bodies are small XML documents; only their code is kept.
        let errorBody = try? await response.body.collect(upTo: 64 * 1024)
        let code = errorBody.flatMap { ObjectStorageError.errorCode(inBody: String(buffer: $0)) }
        throw ObjectStorageError.from(status: Int(response.status.code), code: code, key: key)
    }

    static func transportError(_ error: any Error) -> ObjectStorageError {
        if let error = error as? ObjectStorageError { return error }
        if let error = error as? HTTPClientError {
            // HTTPClientError's description names the failure, not the request.
            return .unavailable(reason: "\(error)")
        }
        return .unavailable(reason: String(describing: type(of: error)))
    }

    static func metadata(of response: HTTPClientResponse) throws(ObjectStorageError) -> ObjectMetadata {
        guard let length = response.headers.first(name: "content-length").flatMap({ Int64($0) }), length >= 0 else {
            throw .badResponse(status: Int(response.status.code), code: "MissingContentLength")
        }
        let etag = response.headers.first(name: "etag").map {
            $0.hasPrefix("\"") && $0.hasSuffix("\"") && $0.count >= 2 ? String($0.dropFirst().dropLast()) : $0
        }
        return ObjectMetadata(size: length, contentType: response.headers.first(name: "content-type"), etag: etag)
    }

    static func expirySeconds(_ expires: Duration) throws(ObjectStorageError) -> Int {
        let (seconds, attoseconds) = expires.components
        let whole = seconds + (attoseconds > 0 ? 1 : 0)
        guard (1...Int64(SignatureV4.maximumExpiry)).contains(whole) else {
            throw .invalidRequest(reason: "a presigned URL lives from 1 second to 7 days")
        }
        return Int(whole)
    }

    static func expiry(_ now: Date, _ seconds: Int) -> Date {
        Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down) + Double(seconds))
    }

    static func timeAmount(_ duration: Duration) -> TimeAmount {
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    static func url(_ text: String) throws(ObjectStorageError) -> URL {
        guard let url = URL(string: text) else { throw .invalidRequest(reason: "the signed URL does not parse") }
        return url
    }

    /// A value that can travel in a header: printable ASCII, no line breaks.
    static func headerValue(_ value: String, _ what: String) throws(ObjectStorageError) -> String {
        guard !value.isEmpty, value.utf8.count <= 256, value.unicodeScalars.allSatisfy({ (0x20..<0x7F).contains($0.value) })
        else { throw .invalidRequest(reason: "the \(what) must be 1 to 256 printable ASCII characters") }
        return value
    }

    /// `attachment; filename="a_b.png"; filename*=UTF-8''a%C3%A9b.png` (RFC 6266
    /// and 5987): the quoted form for old clients, with anything but printable
    /// ASCII, quotes and backslashes replaced; the encoded form exact.
    static func contentDisposition(filename: String?, inline: Bool) -> String {
        let type = inline ? "inline" : "attachment"
        guard let filename, !filename.isEmpty else { return type }
        let fallback = String(
            String.UnicodeScalarView(
                filename.unicodeScalars.map {
                    (0x20..<0x7F).contains($0.value) && $0 != "\"" && $0 != "\\" ? $0 : "_"
                }))
        return "\(type); filename=\"\(fallback)\"; filename*=UTF-8''\(SignatureV4.uriEncode(filename, keepingSlashes: false))"
    }
}

/// An object's bytes as they arrive, with what the store said of it.
public struct ObjectStream: AsyncSequence, Sendable {
    public typealias Element = ByteBuffer
    public let metadata: ObjectMetadata
    let body: HTTPClientResponse.Body

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: body.makeAsyncIterator()) }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: HTTPClientResponse.Body.AsyncIterator

        public mutating func next() async throws -> ByteBuffer? {
            do { return try await base.next() } catch { throw S3ObjectStore.transportError(error) }
        }
    }
}
