import Foundation
import ScrollbackObjectStorage
import Testing

/// The S3-compatible server these tests run against, as scripts/test-object-storage
/// starts it (moto's S3 behind a Signature V4 gate, on loopback) and describes it:
/// SCROLLBACK_TEST_S3_ENDPOINT, _BUCKET, _ACCESS_KEY_ID and _SECRET_ACCESS_KEY.
///
/// Without SCROLLBACK_TEST_S3_ENDPOINT the integration suite is disabled (a
/// plain `swift test` has no S3 server), and Swift Testing reports it as
/// skipped. It never passes silently where it should run: the script sets
/// SCROLLBACK_TEST_S3_REQUIRED=1, under which a missing setting fails
/// `theS3TestServerIsConfiguredWhenRequired`, and the script itself fails if
/// any test reports skipped.
public enum S3TestServer {
    public static let environment = ProcessInfo.processInfo.environment
    public static let names = ["ENDPOINT", "BUCKET", "ACCESS_KEY_ID", "SECRET_ACCESS_KEY"].map { "SCROLLBACK_TEST_S3_\($0)" }
    public static var isConfigured: Bool { environment["SCROLLBACK_TEST_S3_ENDPOINT"] != nil }
    public static var isRequired: Bool { environment["SCROLLBACK_TEST_S3_REQUIRED"] == "1" }

    public static func configuration(
        prefix: String = "integration", secretAccessKey: String? = nil, accessKeyID: String? = nil
    ) throws
        -> ObjectStorageConfiguration
    {
        func value(_ name: String) throws -> String {
            try #require(environment["SCROLLBACK_TEST_S3_\(name)"], "SCROLLBACK_TEST_S3_\(name) is not set")
        }
        return try ObjectStorageConfiguration(
            storageURL: "s3://\(try value("BUCKET"))/\(prefix)/\(UUID().uuidString.lowercased())",
            endpoint: try value("ENDPOINT"), region: "us-east-1",
            credentials: S3Credentials(
                accessKeyID: try accessKeyID ?? value("ACCESS_KEY_ID"),
                secretAccessKey: try secretAccessKey ?? value("SECRET_ACCESS_KEY")),
            requestTimeout: .seconds(20))
    }
}
