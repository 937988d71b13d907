import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import Testing

@testable import ScrollbackObjectStorage

/// The signer against botocore, case by case: Fixtures/botocore-sigv4.json
/// holds inputs and what botocore's presigner (`generate_presigned_url`) and
/// header signer (`S3SigV4Auth`) made of them. It is written by
/// scripts/sigv4-oracle.py, and scripts/check-sigv4 (run by CI) fails when it
/// is not what the pinned botocore prints, so this suite needs no Python.
@Suite struct BotocoreOracleTests {
    struct Fixture: Decodable {
        var generated_by: String
        var cases: [Case]
    }

    struct Case: Decodable, CustomTestStringConvertible {
        var name: String
        var kind: String
        var storage_url: String
        var endpoint: String
        var region: String
        var addressing_style: String
        var access_key_id: String
        var secret_access_key: String
        var session_token: String?
        var timestamp: String
        var key: String
        var expires: Int?
        var content_type: String?
        var content_length: Int64?
        var filename: String?
        var inline: Bool?
        var response_content_disposition: String?
        var response_content_type: String?
        var method: String?
        var headers: [String: String]?
        var body: String?
        var expected: Expected

        struct Expected: Decodable {
            var url: String
            var headers: [String: String]?
        }

        var testDescription: String { name }
    }

    static let fixture: Fixture = {
        let url = Bundle.module.url(forResource: "botocore-sigv4", withExtension: "json", subdirectory: "Fixtures")!
        return try! JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
    }()

    /// Nothing is sent: the shared client only completes the store.
    static func store(for testCase: Case) throws -> S3ObjectStore {
        let configuration = try ObjectStorageConfiguration(
            storageURL: testCase.storage_url, endpoint: testCase.endpoint, region: testCase.region,
            credentials: S3Credentials(
                accessKeyID: testCase.access_key_id, secretAccessKey: testCase.secret_access_key,
                sessionToken: testCase.session_token),
            addressingStyle: try #require(ObjectStorageConfiguration.AddressingStyle(rawValue: testCase.addressing_style)))
        return S3ObjectStore(configuration: configuration, httpClient: .shared, logger: Logger(label: "test"))
    }

    static func date(_ timestamp: String) throws -> Date {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return try #require(formatter.date(from: timestamp))
    }

    /// Scheme, host and path as sent, and the query's pairs as sent, in any order.
    struct URLParts: Equatable, CustomStringConvertible {
        var base: String
        var query: [String]
        init(_ url: String) {
            let parts = url.split(separator: "?", maxSplits: 1).map(String.init)
            base = parts[0]
            query = parts.count > 1 ? parts[1].split(separator: "&").map(String.init).sorted() : []
        }
        var description: String { "\(base) ? \(query.joined(separator: " & "))" }
    }

    @Test func theFixtureCoversEveryKindOfRequest() {
        let kinds = Set(Self.fixture.cases.map(\.kind))
        #expect(kinds == ["presigned-upload", "presigned-download", "signed"])
        #expect(Self.fixture.cases.count >= 12)
        #expect(Self.fixture.generated_by.contains("botocore"))
    }

    @Test(arguments: fixture.cases.filter { $0.kind.hasPrefix("presigned") })
    func presignedURLIsBotocores(_ testCase: Case) throws {
        let store = try Self.store(for: testCase)
        let now = try Self.date(testCase.timestamp)
        let expires = Duration.seconds(try #require(testCase.expires))
        let url: URL
        if testCase.kind == "presigned-upload" {
            let upload = try store.presignedUpload(
                key: testCase.key, contentType: testCase.content_type, contentLength: testCase.content_length,
                expires: expires, now: now)
            #expect(upload.method == "PUT")
            #expect(upload.headers["content-type"] == testCase.content_type)
            #expect(upload.headers["content-length"] == testCase.content_length.map { String($0) })
            #expect(upload.expiresAt == now.addingTimeInterval(Double(testCase.expires!)))
            url = upload.url
        } else {
            #expect(
                S3ObjectStore.contentDisposition(filename: testCase.filename, inline: testCase.inline ?? false)
                    == testCase.response_content_disposition)
            url = try store.presignedDownload(
                key: testCase.key, expires: expires, filename: testCase.filename,
                contentType: testCase.response_content_type, inline: testCase.inline ?? false, now: now)
        }
        #expect(URLParts(url.absoluteString) == URLParts(testCase.expected.url))
    }

    @Test(arguments: fixture.cases.filter { $0.kind == "signed" })
    func headerSignedRequestIsBotocores(_ testCase: Case) throws {
        let store = try Self.store(for: testCase)
        let request = try store.objectRequest(
            method: try #require(testCase.method), key: testCase.key,
            headers: (testCase.headers ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        let body = testCase.body.map { ByteBuffer(string: $0) }
        let signed = store.signed(request, body: body, date: try Self.date(testCase.timestamp))
        #expect(signed.url == testCase.expected.url)
        #expect(signed.method.rawValue == testCase.method)
        let expected = try #require(testCase.expected.headers)
        for name in ["authorization", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"] {
            #expect(signed.headers.first(name: name) == expected[name], "\(name)")
        }
        for (name, value) in testCase.headers ?? [:] {
            #expect(signed.headers.first(name: name) == value)
        }
    }
}
