import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import Testing

@testable import ScrollbackObjectStorage

@Suite struct ObjectStorageConfigurationTests {
    static let credentials = S3Credentials(accessKeyID: "AKID", secretAccessKey: "do-not-print-me")

    static func configuration(
        _ url: String, endpoint: String? = nil, region: String = "us-east-1",
        style: ObjectStorageConfiguration.AddressingStyle = .path
    ) throws -> ObjectStorageConfiguration {
        try ObjectStorageConfiguration(
            storageURL: url, endpoint: endpoint, region: region, credentials: credentials, addressingStyle: style)
    }

    @Test func storageURLGivesTheBucketAndANormalizedPrefix() throws {
        let bare = try Self.configuration("s3://scrollback-media")
        #expect(bare.bucket == "scrollback-media" && bare.prefix == "")
        let prefixed = try Self.configuration("s3://scrollback-media//attachments/2026/")
        #expect(prefixed.prefix == "attachments/2026/")
        #expect(try prefixed.location(ofKey: "a/b.png").path == "/scrollback-media/attachments/2026/a/b.png")
    }

    @Test func endpointDefaultsToAWSRegionalOneAndDropsDefaultPorts() throws {
        let aws = try Self.configuration("s3://b-1", region: "eu-west-3")
        #expect(aws.endpointScheme == "https" && aws.endpointHost == "s3.eu-west-3.amazonaws.com")
        #expect(try Self.configuration("s3://b-1", endpoint: "https://S3.Example.com:443/").endpointHost == "s3.example.com")
        #expect(try Self.configuration("s3://b-1", endpoint: "http://127.0.0.1:80").endpointHost == "127.0.0.1")
        #expect(try Self.configuration("s3://b-1", endpoint: "http://127.0.0.1:9000").endpointHost == "127.0.0.1:9000")
    }

    @Test func virtualHostStylePutsTheBucketInTheHost() throws {
        let configuration = try Self.configuration("s3://b-1/p", style: .virtualHost)
        let location = try configuration.location(ofKey: "k")
        #expect(location.host == "b-1.s3.us-east-1.amazonaws.com" && location.path == "/p/k")
        #expect(throws: ObjectStorageError.self) { try Self.configuration("s3://b.1", style: .virtualHost) }
    }

    @Test(arguments: [
        "bucket", "s3://", "s3://ab", "s3://Upper", "s3://-leading", "s3://under_score", "s3://bucket/../x",
    ])
    func storageURLsThatNameNoBucketAreRefused(_ url: String) {
        #expect(throws: ObjectStorageError.self) { try Self.configuration(url) }
    }

    @Test(arguments: ["ftp://host", "https://", "https://host/path", "https://user@host", "host:9000"])
    func endpointsThatAreNotASchemeAndAHostAreRefused(_ endpoint: String) {
        #expect(throws: ObjectStorageError.self) { try Self.configuration("s3://bucket", endpoint: endpoint) }
    }

    @Test(arguments: ["", "a//b", "./a", "a/..", "/a", "a/", "tab\there", String(repeating: "k", count: 1025)])
    func keysAStoreOrProxyCouldRewriteAreRefused(_ key: String) throws {
        let configuration = try Self.configuration("s3://bucket")
        #expect(throws: ObjectStorageError.self) { try configuration.location(ofKey: key) }
    }

    @Test func descriptionNamesTheStoreButNotTheSecret() throws {
        let text = "\(try Self.configuration("s3://bucket/p"))"
        #expect(text.contains("s3://bucket/p/") && text.contains("AKID"))
        #expect(!text.contains("do-not-print-me"))
    }

    @Test func presignedURLsLiveOneSecondToSevenDays() throws {
        let store = S3ObjectStore(
            configuration: try Self.configuration("s3://bucket"), httpClient: .shared, logger: Logger(label: "test"))
        for expires in [Duration.zero, .seconds(604_801), .seconds(-5)] {
            #expect(throws: ObjectStorageError.self) { try store.presignedDownload(key: "k", expires: expires) }
        }
        let upload = try store.presignedUpload(
            key: "k", contentType: "image/png", contentLength: 1, expires: .milliseconds(1500),
            now: Date(timeIntervalSince1970: 100))
        #expect(upload.url.absoluteString.contains("X-Amz-Expires=2&"))
        #expect(upload.expiresAt == Date(timeIntervalSince1970: 102))
        #expect(throws: ObjectStorageError.self) {
            try store.presignedUpload(key: "k", contentType: "image/png\r\nx: y", contentLength: 1, expires: .seconds(60))
        }
    }

    @Test func contentDispositionHasAnASCIIFallbackAndTheExactName() {
        #expect(S3ObjectStore.contentDisposition(filename: nil, inline: false) == "attachment")
        #expect(S3ObjectStore.contentDisposition(filename: "", inline: true) == "inline")
        #expect(
            S3ObjectStore.contentDisposition(filename: "résumé \"final\".pdf", inline: false)
                == "attachment; filename=\"r_sum_ _final_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.pdf")
    }

    @Test func errorCodesComeFromS3ErrorBodies() {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature...</Message>\
            <StringToSign>AWS4-HMAC-SHA256...</StringToSign></Error>
            """
        #expect(ObjectStorageError.errorCode(inBody: body) == "SignatureDoesNotMatch")
        #expect(ObjectStorageError.errorCode(inBody: "<html>502</html>") == nil)
        #expect(ObjectStorageError.from(status: 404, code: "NoSuchKey", key: "k") == .notFound(key: "k"))
        #expect(ObjectStorageError.from(status: 404, code: "NoSuchBucket", key: "k") == .badResponse(status: 404, code: "NoSuchBucket"))
        #expect(ObjectStorageError.from(status: 403, code: "AccessDenied", key: "k") == .forbidden(code: "AccessDenied"))
        #expect(ObjectStorageError.from(status: 503, code: "SlowDown", key: "k") == .unavailable(reason: "status 503 SlowDown"))
    }

    @Test func aStoreThatCannotBeReachedIsUnavailable() async throws {
        // Port 1 on loopback: nothing listens there, the connection is refused at once.
        let configuration = try ObjectStorageConfiguration(
            storageURL: "s3://bucket", endpoint: "http://127.0.0.1:1", region: "us-east-1",
            credentials: Self.credentials, requestTimeout: .seconds(5))
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton)
        let store = S3ObjectStore(configuration: configuration, httpClient: httpClient, logger: Logger(label: "test"))
        await #expect {
            try await store.head(key: "k")
        } throws: { error in
            guard case .unavailable(let reason) = error as? ObjectStorageError else { return false }
            return !reason.contains("do-not-print-me")
        }
        try await httpClient.shutdown()
    }
}
