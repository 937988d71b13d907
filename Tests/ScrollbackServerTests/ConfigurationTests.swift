import Foundation
import ScrollbackObjectStorage
@testable import ScrollbackServer
import ScrollbackStore
import Testing

@Suite struct ConfigurationTests {
    static let secret = String(repeating: "s", count: 32)

    @Test func anEmptyEnvironmentGivesTheLocalDefaults() throws {
        let configuration = try ScrollbackConfiguration(environment: [:])
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.databaseURL == nil)
        #expect(configuration.store == StoreOptions())
        #expect(configuration.store.maximumConnections == 20)
        #expect(configuration.store.statementTimeout == .seconds(5))
        #expect(configuration.store.lockTimeout == .seconds(2))
        #expect(configuration.jwtSecret == nil)
        #expect(configuration.logLevel == .info)
        #expect(configuration.stateDirectory == ".scrollback")
    }

    @Test func everyVariableIsRead() throws {
        let configuration = try ScrollbackConfiguration(environment: [
            "HOST": "0.0.0.0", "PORT": "9000", "DATABASE_URL": "postgres://u:p@db:6543/chat",
            "SCROLLBACK_DB_POOL_SIZE": "7", "SCROLLBACK_DB_TIMEOUT": "1.5", "SCROLLBACK_DB_LOCK_TIMEOUT": "0.25",
            "SCROLLBACK_JWT_SECRET": Self.secret, "LOG_LEVEL": "debug", "SCROLLBACK_STATE_DIR": "/var/lib/sb",
        ])
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 9000)
        #expect(configuration.databaseURL == DatabaseURL(host: "db", port: 6543, username: "u", password: "p", database: "chat"))
        #expect(configuration.store.maximumConnections == 7)
        #expect(configuration.store.statementTimeout == .milliseconds(1500))
        #expect(configuration.store.lockTimeout == .milliseconds(250))
        #expect(configuration.jwtSecret == Self.secret)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.stateDirectory == "/var/lib/sb")
    }

    @Test func theLimitsHaveTheirDocumentedDefaultsAndAreRead() throws {
        let defaults = try ScrollbackConfiguration(environment: [:])
        #expect(defaults.rateLimits == RateLimits())
        #expect(defaults.rateLimits.send == RateLimit(burst: 30, per: .seconds(10)))
        #expect(defaults.rateLimits.conversation == RateLimit(burst: 10, per: .seconds(60)))
        #expect(defaults.rateLimits.member == RateLimit(burst: 100, per: .seconds(60)))
        #expect(defaults.rateLimits.typing == RateLimit(burst: 10, per: .seconds(10)))
        #expect(defaults.rateLimits.subscribe == RateLimit(burst: 50, per: .seconds(10)))
        #expect(defaults.connections.headerTimeout == .seconds(10))
        #expect(defaults.connections.bodyTimeout == .seconds(10))
        #expect(defaults.connections.minReceiveRate == 1_024)
        #expect(defaults.connections.idleTimeout == .seconds(60))
        #expect((16...10_000).contains(defaults.connections.maxConnections))
        #expect(defaults.liveOptions.maxSockets == 5_000)
        #expect(defaults.connections.maxBodyBytes == 65_536)
        #expect(defaults.store.maxResponseBytes == 1_048_576)
        #expect(defaults.store.pageCacheBytes == 256 * 1_048_576)
        #expect(defaults.store.sendGroupSize == 64)
        #expect(defaults.store.sendGroupWait == .milliseconds(1))

        let set = try ScrollbackConfiguration(environment: [
            "SCROLLBACK_RATE_LIMITS": "off", "SCROLLBACK_LIMIT_SEND": "5/2.5", "SCROLLBACK_MAX_CONNECTIONS": "100",
            "SCROLLBACK_MAX_SOCKETS": "50", "SCROLLBACK_HEADER_TIMEOUT": "3", "SCROLLBACK_BODY_TIMEOUT": "4",
            "SCROLLBACK_MIN_RECEIVE_RATE": "10", "SCROLLBACK_IDLE_TIMEOUT": "0.5",
            "SCROLLBACK_MAX_BODY_BYTES": "1048576", "SCROLLBACK_MAX_RESPONSE_BYTES": "65536",
            "SCROLLBACK_PAGE_CACHE_BYTES": "0", "SCROLLBACK_SEND_GROUP_SIZE": "1", "SCROLLBACK_SEND_GROUP_WAIT_MS": "0",
        ])
        #expect(set.store.pageCacheBytes == 0)
        #expect(set.store.sendGroupSize == 1 && set.store.sendGroupWait == .zero)
        #expect(set.connections.maxBodyBytes == 1_048_576)
        #expect(set.store.maxResponseBytes == 65_536)
        #expect(set.rateLimits.send == RateLimit(burst: 5, per: .milliseconds(2500)))
        #expect(set.rateLimits.conversation.isOff && set.rateLimits.typing.isOff)
        #expect(set.connections.maxConnections == 100)
        #expect(set.liveOptions.maxSockets == 50)
        #expect(set.connections.headerTimeout == .seconds(3))
        #expect(set.connections.bodyTimeout == .seconds(4))
        #expect(set.connections.minReceiveRate == 10)
        #expect(set.connections.idleTimeout == .milliseconds(500))
        #expect(try ScrollbackConfiguration(environment: ["SCROLLBACK_LIMIT_TYPING": "0"]).rateLimits.typing.isOff)
        for bad in ["30", "x/10", "30/0", "-1/10", "30/10/2"] {
            #expect(throws: ScrollbackConfiguration.Failure.self, "\(bad)") {
                try ScrollbackConfiguration(environment: ["SCROLLBACK_LIMIT_SEND": bad])
            }
        }
        #expect(throws: ScrollbackConfiguration.Failure.self) {
            try ScrollbackConfiguration(environment: ["SCROLLBACK_RATE_LIMITS": "maybe"])
        }
    }

    @Test func flagsWinOverTheEnvironment() throws {
        let configuration = try ScrollbackConfiguration(
            environment: ["PORT": "9000", "HOST": "0.0.0.0"], overrides: ["PORT": "9001"])
        #expect(configuration.port == 9001)
        #expect(configuration.host == "0.0.0.0")
    }

    @Test(arguments: [
        ("PORT", "abc", "PORT must be a whole number from 0 to 65535 (got abc)."),
        ("PORT", "70000", "PORT must be a whole number from 0 to 65535 (got 70000)."),
        ("SCROLLBACK_DB_POOL_SIZE", "0", "SCROLLBACK_DB_POOL_SIZE must be a whole number from 1 to 1000 (got 0)."),
        ("SCROLLBACK_DB_TIMEOUT", "nan", "SCROLLBACK_DB_TIMEOUT must be a number of seconds above 0 and at most 3600 (got nan)."),
        ("SCROLLBACK_DB_LOCK_TIMEOUT", "-1", "SCROLLBACK_DB_LOCK_TIMEOUT must be a number of seconds above 0 and at most 3600 (got -1)."),
        ("LOG_LEVEL", "loud", "LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical (got loud)."),
        ("SCROLLBACK_MAX_BODY_BYTES", "1000", "SCROLLBACK_MAX_BODY_BYTES must be a whole number from 16384 to 67108864 (got 1000)."),
        ("SCROLLBACK_MAX_BODY_BYTES", "64k", "SCROLLBACK_MAX_BODY_BYTES must be a whole number from 16384 to 67108864 (got 64k)."),
        ("SCROLLBACK_MAX_RESPONSE_BYTES", "0", "SCROLLBACK_MAX_RESPONSE_BYTES must be a whole number from 65536 to 67108864 (got 0)."),
        ("SCROLLBACK_PAGE_CACHE_BYTES", "-1", "SCROLLBACK_PAGE_CACHE_BYTES must be a whole number from 0 to 68719476736 (got -1)."),
        ("SCROLLBACK_SEND_GROUP_SIZE", "97", "SCROLLBACK_SEND_GROUP_SIZE must be a whole number from 0 to 96 (got 97)."),
        ("SCROLLBACK_SEND_GROUP_WAIT_MS", "0.5", "SCROLLBACK_SEND_GROUP_WAIT_MS must be a whole number from 0 to 1000 (got 0.5)."),
        ("DATABASE_URL", "mysql://x", "DATABASE_URL must look like postgres://user:password@host:5432/database (or host1:5432,host2:5432 for a primary and its standbys)"),
        ("DATABASE_URL", "postgres://u@a:5432,/chat", "DATABASE_URL must look like postgres://user:password@host:5432/database (or host1:5432,host2:5432 for a primary and its standbys)"),
        ("DATABASE_URL", "postgres://u@a,b:99999/chat", "DATABASE_URL must look like postgres://user:password@host:5432/database (or host1:5432,host2:5432 for a primary and its standbys)"),
        ("DATABASE_URL", "postgres://u@a,b/chat?target_session_attrs=any", "DATABASE_URL target_session_attrs may only be read-write or primary (got any): Scrollback writes, so it always works on the server that accepts writes; name read replicas in SCROLLBACK_REPLICA_URLS"),
        ("SCROLLBACK_REPLICA_URLS", "postgres://u@r1/chat,mysql://r2", "SCROLLBACK_REPLICA_URLS is a comma-separated list of postgres:// addresses, one server each: DATABASE_URL must look like postgres://user:password@host:5432/database (or host1:5432,host2:5432 for a primary and its standbys)"),
        ("SCROLLBACK_REPLICA_MAX_LAG_MS", "5", "SCROLLBACK_REPLICA_MAX_LAG_MS must be a whole number from 10 to 60000 (got 5)."),
        ("SCROLLBACK_REPLICA_POLL_MS", "20000", "SCROLLBACK_REPLICA_POLL_MS must be a whole number from 10 to 10000 (got 20000)."),
    ])
    func aBadValueIsAStartupErrorNamingTheVariable(_ name: String, _ value: String, _ message: String) {
        #expect(throws: ScrollbackConfiguration.Failure.self) {
            try ScrollbackConfiguration(environment: [name: value])
        }
        do {
            _ = try ScrollbackConfiguration(environment: [name: value, "SCROLLBACK_JWT_SECRET": Self.secret])
        } catch let failure as ScrollbackConfiguration.Failure {
            #expect(failure.description == message)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// libpq's host list: a primary and its standbys, each with its port
    /// or 5432; replicas one address each.
    @Test func aDatabaseURLMayNameSeveralServersAndReplicasAreAList() throws {
        let configuration = try ScrollbackConfiguration(environment: [
            "SCROLLBACK_JWT_SECRET": Self.secret,
            "DATABASE_URL": "postgres://chat:p%40ss@db-a:5433,db-b,[::1]:6000/chat?sslmode=require&target_session_attrs=read-write",
            "SCROLLBACK_REPLICA_URLS": "postgres://chat:pw@r1:5432/chat, postgres://chat:pw@r2/chat",
            "SCROLLBACK_REPLICA_MAX_LAG_MS": "1500", "SCROLLBACK_REPLICA_POLL_MS": "50",
        ])
        let url = try #require(configuration.databaseURL)
        #expect(url.endpoints.map(\.description) == ["db-a:5433", "db-b:5432", "[::1]:6000"])
        #expect(url.host == "db-a" && url.port == 5433 && url.username == "chat" && url.password == "p@ss")
        #expect(url.database == "chat" && url.tls == .require)
        #expect(url.redacted == "postgres://chat@db-a:5433,db-b:5432,[::1]:6000/chat")
        #expect(url.on(url.endpoints[1]).endpoints == [DatabaseURL.Endpoint(host: "db-b", port: 5432)])
        #expect(configuration.store.replicas.map(\.endpoints) == [[.init(host: "r1", port: 5432)], [.init(host: "r2", port: 5432)]])
        #expect(configuration.store.replicaMaxLag == .milliseconds(1500))
        #expect(configuration.store.replicaPollInterval == .milliseconds(50))
        let defaults = try ScrollbackConfiguration(environment: [:])
        #expect(defaults.store.replicas.isEmpty && defaults.store.replicaMaxLag == .seconds(2))
        #expect(defaults.store.replicaPollInterval == .milliseconds(100))
    }

    @Test func aSharedDatabaseNeedsASharedSecret() {
        #expect(throws: ScrollbackConfiguration.Failure.self) {
            try ScrollbackConfiguration(environment: ["DATABASE_URL": "postgres://u@db/chat"])
        }
        #expect(throws: ScrollbackConfiguration.Failure.self) {
            try ScrollbackConfiguration(environment: ["SCROLLBACK_JWT_SECRET": "short"])
        }
    }

    @Test func uploadsGoToAnObjectStoreOnlyWhenOneIsNamedInFull() throws {
        #expect(try ScrollbackConfiguration(environment: [:]).uploads.objectStorage == nil)
        let configured = try ScrollbackConfiguration(environment: [
            "SCROLLBACK_STORAGE_URL": "s3://chat-files/attachments", "SCROLLBACK_S3_ENDPOINT": "http://127.0.0.1:9000",
            "SCROLLBACK_S3_ACCESS_KEY_ID": "AKID", "SCROLLBACK_S3_SECRET_ACCESS_KEY": "top-secret",
        ])
        let storage = try #require(configured.uploads.objectStorage)
        #expect(storage.bucket == "chat-files" && storage.prefix == "attachments/")
        #expect(storage.endpointScheme == "http" && storage.endpointHost == "127.0.0.1:9000")
        #expect(storage.region == "us-east-1" && storage.addressingStyle == .path)
        #expect(!storage.description.contains("top-secret"))
        let aws = try #require(
            try ScrollbackConfiguration(environment: [
                "SCROLLBACK_STORAGE_URL": "s3://chat-files", "SCROLLBACK_S3_REGION": "eu-west-1",
                "SCROLLBACK_S3_ADDRESSING": "virtual", "SCROLLBACK_S3_ACCESS_KEY_ID": "AKID",
                "SCROLLBACK_S3_SECRET_ACCESS_KEY": "s", "SCROLLBACK_S3_SESSION_TOKEN": "token",
            ]).uploads.objectStorage)
        #expect(aws.endpointHost == "s3.eu-west-1.amazonaws.com" && aws.addressingStyle == .virtualHost)
        #expect(aws.credentials.sessionToken == "token")

        let refusals: [([String: String], String)] = [
            (["SCROLLBACK_S3_ENDPOINT": "http://minio:9000"], "SCROLLBACK_S3_ENDPOINT is set but SCROLLBACK_STORAGE_URL is not"),
            (["SCROLLBACK_STORAGE_URL": "s3://chat-files"], "needs SCROLLBACK_S3_ACCESS_KEY_ID and SCROLLBACK_S3_SECRET_ACCESS_KEY"),
            (["SCROLLBACK_STORAGE_URL": "https://chat-files", "SCROLLBACK_S3_ACCESS_KEY_ID": "a", "SCROLLBACK_S3_SECRET_ACCESS_KEY": "b"], "s3://bucket/prefix"),
            (["SCROLLBACK_STORAGE_URL": "s3://Bad_Bucket", "SCROLLBACK_S3_ACCESS_KEY_ID": "a", "SCROLLBACK_S3_SECRET_ACCESS_KEY": "b"], "bucket names"),
            (["SCROLLBACK_STORAGE_URL": "s3://chat-files", "SCROLLBACK_S3_ADDRESSING": "dns", "SCROLLBACK_S3_ACCESS_KEY_ID": "a", "SCROLLBACK_S3_SECRET_ACCESS_KEY": "b"], "SCROLLBACK_S3_ADDRESSING must be path or virtual"),
        ]
        Self.expectRefused(refusals)
    }

    @Test func webhooksNeedAnHTTPURLAndASecret() throws {
        let none = try ScrollbackConfiguration(environment: [:]).outbox
        #expect(none.webhookURL == nil && none.retryWindow == .seconds(86_400) && none.backoffCap == .seconds(300))
        #expect(none.deliveryTimeout == .seconds(10) && none.retention == .seconds(7 * 86_400))
        let set = try ScrollbackConfiguration(environment: [
            "SCROLLBACK_WEBHOOK_URL": "https://hooks.example.com/scrollback", "SCROLLBACK_WEBHOOK_SECRET": "0123456789abcdef",
            "SCROLLBACK_WEBHOOK_TIMEOUT": "2.5", "SCROLLBACK_OUTBOX_RETRY_WINDOW": "600",
            "SCROLLBACK_OUTBOX_BACKOFF_CAP": "30", "SCROLLBACK_OUTBOX_RETENTION": "3600",
        ]).outbox
        #expect(set.webhookURL == "https://hooks.example.com/scrollback" && set.webhookSecret == "0123456789abcdef")
        #expect(set.deliveryTimeout == .milliseconds(2500) && set.retryWindow == .seconds(600))
        #expect(set.backoffCap == .seconds(30) && set.retention == .seconds(3600))
        let push = try ScrollbackConfiguration(environment: [
            "SCROLLBACK_PUSH_GATEWAY_URL": "http://gateway:8080/push", "SCROLLBACK_WEBHOOK_SECRET": "0123456789abcdef",
            "SCROLLBACK_PUSH_CONTENT": "none", "SCROLLBACK_PUSH_WHEN": "always",
        ]).outbox
        #expect(push.pushGatewayURL == "http://gateway:8080/push" && push.pushSecret == "0123456789abcdef")
        #expect(push.withholdPushContent && push.pushEvenOnline && push.webhookURL == nil)
        let refusals: [([String: String], String)] = [
            (["SCROLLBACK_WEBHOOK_URL": "ftp://example.com/x", "SCROLLBACK_WEBHOOK_SECRET": "0123456789abcdef"],
             "SCROLLBACK_WEBHOOK_URL must be an http:// or https:// URL"),
            (["SCROLLBACK_WEBHOOK_URL": "hooks.example.com", "SCROLLBACK_WEBHOOK_SECRET": "0123456789abcdef"],
             "SCROLLBACK_WEBHOOK_URL must be an http:// or https:// URL"),
            (["SCROLLBACK_WEBHOOK_URL": "https://example.com"], "SCROLLBACK_WEBHOOK_URL is set but SCROLLBACK_WEBHOOK_SECRET is not"),
            (["SCROLLBACK_WEBHOOK_URL": "https://example.com", "SCROLLBACK_WEBHOOK_SECRET": "short"],
             "SCROLLBACK_WEBHOOK_SECRET must be at least 16 bytes"),
            (["SCROLLBACK_OUTBOX_RETRY_WINDOW": "0"], "SCROLLBACK_OUTBOX_RETRY_WINDOW must be a whole number"),
            (["SCROLLBACK_WEBHOOK_TIMEOUT": "-1"], "SCROLLBACK_WEBHOOK_TIMEOUT must be a number of seconds"),
            (["SCROLLBACK_PUSH_GATEWAY_URL": "gateway:8080"], "SCROLLBACK_PUSH_GATEWAY_URL must be an http:// or https:// URL"),
            (["SCROLLBACK_PUSH_GATEWAY_URL": "http://gateway:8080"], "SCROLLBACK_PUSH_GATEWAY_URL is set but SCROLLBACK_PUSH_SECRET is not"),
            (["SCROLLBACK_PUSH_CONTENT": "some"], "SCROLLBACK_PUSH_CONTENT must be full or none"),
            (["SCROLLBACK_PUSH_WHEN": "never"], "SCROLLBACK_PUSH_WHEN must be offline or always"),
        ]
        Self.expectRefused(refusals)
    }

    @Test func theBackoffDoublesFromASecondToItsCapWithJitter() {
        let options = OutboxOptions()
        #expect(options.backoff(afterAttempts: 1, unit: 1) == .seconds(1))
        #expect(options.backoff(afterAttempts: 2, unit: 1) == .seconds(2))
        #expect(options.backoff(afterAttempts: 4, unit: 1) == .seconds(8))
        #expect(options.backoff(afterAttempts: 4, unit: 0) == .seconds(4))
        #expect(options.backoff(afterAttempts: 40, unit: 1) == .seconds(300))
    }

    @Test func signaturesVerifyOnlyOverTheExactBodyAndAFreshTime() throws {
        let body = Array(#"{"id":"1"}"#.utf8)
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let header = WebhookSignature.sign(body, secret: "0123456789abcdef", timestamp: 1_790_000_000)
        try WebhookSignature.verify(header, body: body, secret: "0123456789abcdef", now: now)
        #expect(throws: WebhookSignature.Refusal.mismatch) {
            try WebhookSignature.verify(header, body: body, secret: "0123456789abcdeF", now: now)
        }
        #expect(throws: WebhookSignature.Refusal.stale(seconds: 301)) {
            try WebhookSignature.verify(header, body: body, secret: "0123456789abcdef", now: now.addingTimeInterval(301))
        }
        // A rotating sender may send several v1 values: one matching is enough.
        try WebhookSignature.verify(header + ",v1=00", body: body, secret: "0123456789abcdef", now: now)
        for malformed in ["", "t=1", "v1=ab", "t=-9223372036854775808,v1=00", "t=9223372036854775807,v1=00", "garbage"] {
            #expect(throws: WebhookSignature.Refusal.malformed) {
                try WebhookSignature.verify(malformed, body: body, secret: "0123456789abcdef", now: now)
            }
        }
    }

    /// Each environment is refused with a failure that says `message`.
    static func expectRefused(_ refusals: [([String: String], String)]) {
        for (environment, message) in refusals {
            do {
                _ = try ScrollbackConfiguration(environment: environment)
                Issue.record("accepted \(environment)")
            } catch let failure as ScrollbackConfiguration.Failure {
                #expect(failure.description.contains(message), "\(failure.description)")
            } catch {
                Issue.record("\(error)")
            }
        }
    }
}
