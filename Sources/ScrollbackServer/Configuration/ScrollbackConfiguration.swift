import Logging
import ScrollbackModels
import ScrollbackObjectStorage
import ScrollbackStore

/// Every setting of the service, read once at start from the environment
/// (and the command line's flags, which win), checked, and typed. A value
/// that does not parse is a start-up error that names the variable, never a
/// silent default. The configuration table in docs/operations.md lists the same names.
public struct ScrollbackConfiguration: Sendable {
    /// `HOST` (`--host`): the address to listen on.
    public var host = "127.0.0.1"
    /// `SCROLLBACK_DEMO` (`--demo`): serve the web client at `/` and the
    /// demo's token route (`POST /demo/token`). Off by default; refused on a
    /// non-loopback `host` unless `SCROLLBACK_DEMO_PUBLIC` (`--demo-public`).
    public var demo = false
    /// `PORT` (`--port`): 0 to 65535 (0 picks a free port).
    public var port = 8080
    /// `SCROLLBACK_METRICS_PORT` (`--metrics-port`): where `GET /metrics`
    /// is served, on `host`; nil (the default) serves no metrics.
    public var metricsPort: Int?
    /// `DATABASE_URL`: nil runs the embedded PostgreSQL cluster.
    public var databaseURL: DatabaseURL?
    /// `SCROLLBACK_DB_POOL_SIZE`, `SCROLLBACK_DB_TIMEOUT` (the statement
    /// timeout), `SCROLLBACK_DB_LOCK_TIMEOUT` and
    /// `SCROLLBACK_MAX_RESPONSE_BYTES`.
    public var store = StoreOptions()
    /// `SCROLLBACK_JWT_SECRET`: at least 32 bytes. Required with
    /// `DATABASE_URL`; with the embedded database a generated one is kept in
    /// the state directory.
    public var jwtSecret: String?
    /// `SCROLLBACK_JWT_JWKS_URL`, `SCROLLBACK_JWT_ISSUER`,
    /// `SCROLLBACK_JWT_AUDIENCE`, `SCROLLBACK_JWT_USER_CLAIM`: the identity
    /// providers whose tokens are taken beside the secret's.
    public var identity = IdentityOptions()
    /// `LOG_LEVEL`: trace, debug, info, notice, warning, error or critical.
    public var logLevel = Logger.Level.info
    /// `SCROLLBACK_STATE_DIR`: the embedded cluster and the generated secret.
    public var stateDirectory = ".scrollback"
    /// `SCROLLBACK_ALLOWED_ORIGINS`: comma-separated web origins whose pages
    /// may open the live stream (`*` for any); requests without `Origin`
    /// (native apps) are always allowed. None by default.
    public var allowedOrigins = AllowedOrigins([])
    /// `SCROLLBACK_RATE_LIMITS=off` and `SCROLLBACK_LIMIT_SEND`,
    /// `_CONVERSATIONS`, `_MEMBERS`, `_TYPING`, `_SUBSCRIBE`, `_UPLOADS`
    /// (`BURST/SECONDS`, 0 for none): per user, per instance.
    public var rateLimits = RateLimits()
    /// `SCROLLBACK_MAX_CONNECTIONS`, `SCROLLBACK_HEADER_TIMEOUT`,
    /// `SCROLLBACK_BODY_TIMEOUT`, `SCROLLBACK_MIN_RECEIVE_RATE`,
    /// `SCROLLBACK_IDLE_TIMEOUT`, `SCROLLBACK_MAX_BODY_BYTES`.
    public var connections = ConnectionLimits()
    /// `SCROLLBACK_SEARCH_CONFIG`: the PostgreSQL text search configuration
    /// that messages are indexed and searched with (`simple`, the default,
    /// finds words of any language without stemming; `english`, `german`,
    /// ... stem and skip stop words). Checked against the database at start.
    public var searchConfig = "simple"
    /// `SCROLLBACK_MAX_SOCKETS` (live delivery's other settings are not
    /// configurable).
    public var liveOptions = LiveOptions()
    /// `SCROLLBACK_MAX_UPLOAD_BYTES`, `SCROLLBACK_MAX_PENDING_UPLOADS`,
    /// `SCROLLBACK_UPLOAD_KINDS` and the object store's settings.
    public var uploads = UploadOptions()
    /// `SCROLLBACK_WEBHOOK_URL`, `SCROLLBACK_WEBHOOK_SECRET`,
    /// `SCROLLBACK_WEBHOOK_TIMEOUT`, `SCROLLBACK_OUTBOX_RETRY_WINDOW`,
    /// `SCROLLBACK_OUTBOX_BACKOFF_CAP`, `SCROLLBACK_OUTBOX_RETENTION`.
    public var outbox = OutboxOptions()
    /// `SCROLLBACK_RETENTION_DAYS`: how long messages are kept where a
    /// conversation sets no retention of its own; nil (the default) keeps
    /// them forever.
    public var retentionDays: Int?
    /// `SCROLLBACK_RETENTION_SWEEP_SECONDS`: how often the retention sweeper runs.
    public var retentionSweep = Duration.seconds(300)

    public init() {}

    /// The settings in `environment`, with `overrides` (the command line's
    /// flags, by variable name) taking precedence.
    public init(environment: [String: String], overrides: [String: String] = [:]) throws {
        let values = environment.merging(overrides) { _, flag in flag }
        func value(_ name: String) -> String? {
            guard let text = values[name], !text.isEmpty else { return nil }
            return text
        }
        if let text = value("HOST") { host = text }
        demo = try Self.flag(value("SCROLLBACK_DEMO"), "SCROLLBACK_DEMO")
        let demoPublic = try Self.flag(value("SCROLLBACK_DEMO_PUBLIC"), "SCROLLBACK_DEMO_PUBLIC")
        if demo, !demoPublic, !Loopback.contains(host) {
            throw Failure(
                "The demo (--demo) hands a token for any user name to whoever asks, so it listens only on a loopback address (HOST=127.0.0.1, ::1 or localhost; got \(host)). Add --demo-public (SCROLLBACK_DEMO_PUBLIC=1) to serve it on \(host) anyway."
            )
        }
        if let text = value("PORT") { port = try Self.integer(text, "PORT", in: 0...65_535) }
        if let text = value("SCROLLBACK_METRICS_PORT") {
            metricsPort = try Self.integer(text, "SCROLLBACK_METRICS_PORT", in: 0...65_535)
        }
        if let text = value("DATABASE_URL") {
            do {
                databaseURL = try DatabaseURL(text)
            } catch let error as DatabaseURL.ParseError {
                throw Failure(error.description)
            }
        }
        if let text = value("SCROLLBACK_DB_POOL_SIZE") {
            store.maximumConnections = try Self.integer(text, "SCROLLBACK_DB_POOL_SIZE", in: 1...1_000)
        }
        if let text = value("SCROLLBACK_DB_TIMEOUT") { store.statementTimeout = try Self.seconds(text, "SCROLLBACK_DB_TIMEOUT") }
        if let text = value("SCROLLBACK_DB_LOCK_TIMEOUT") {
            store.lockTimeout = try Self.seconds(text, "SCROLLBACK_DB_LOCK_TIMEOUT")
        }
        if let text = value("SCROLLBACK_MAX_RESPONSE_BYTES") {
            store.maxResponseBytes = try Self.integer(text, "SCROLLBACK_MAX_RESPONSE_BYTES", in: Self.responseBytesRange)
        }
        if let text = value("SCROLLBACK_PAGE_CACHE_BYTES") {
            store.pageCacheBytes = try Self.integer(text, "SCROLLBACK_PAGE_CACHE_BYTES", in: Self.pageCacheBytesRange)
        }
        if let text = value("SCROLLBACK_SEND_GROUP_SIZE") {
            store.sendGroupSize = try Self.integer(text, "SCROLLBACK_SEND_GROUP_SIZE", in: Self.sendGroupSizeRange)
        }
        if let text = value("SCROLLBACK_SEND_GROUP_WAIT_MS") {
            store.sendGroupWait = .milliseconds(
                try Self.integer(text, "SCROLLBACK_SEND_GROUP_WAIT_MS", in: Self.sendGroupWaitRange))
        }
        if let text = value("SCROLLBACK_REPLICA_URLS") {
            do {
                store.replicas = try text.split(separator: ",").map {
                    try DatabaseURL(String($0).trimmingCharacters(in: .whitespaces))
                }
            } catch let error as DatabaseURL.ParseError {
                throw Failure("SCROLLBACK_REPLICA_URLS is a comma-separated list of postgres:// addresses, one server each: \(error.description)")
            }
        }
        if let text = value("SCROLLBACK_REPLICA_MAX_LAG_MS") {
            store.replicaMaxLag = .milliseconds(
                try Self.integer(text, "SCROLLBACK_REPLICA_MAX_LAG_MS", in: Self.replicaMaxLagRange))
        }
        if let text = value("SCROLLBACK_REPLICA_POLL_MS") {
            store.replicaPollInterval = .milliseconds(
                try Self.integer(text, "SCROLLBACK_REPLICA_POLL_MS", in: Self.replicaPollRange))
        }
        if let text = value("SCROLLBACK_JWT_SECRET") {
            guard text.utf8.count >= TokenAuthority.minimumSecretBytes else { throw Failure(TokenAuthority.WeakSecret().description) }
            jwtSecret = text
        }
        identity = try IdentityOptions.read(value)
        if let text = value("LOG_LEVEL") {
            guard let level = Logger.Level(rawValue: text.lowercased()) else {
                throw Failure(
                    "LOG_LEVEL must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")) (got \(text)).")
            }
            logLevel = level
        }
        if let text = value("SCROLLBACK_STATE_DIR") { stateDirectory = text }
        if let text = value("SCROLLBACK_ALLOWED_ORIGINS") { allowedOrigins = AllowedOrigins(list: text) }
        if let text = value("SCROLLBACK_RATE_LIMITS") {
            guard text == "off" || text == "on" else {
                throw Failure("SCROLLBACK_RATE_LIMITS must be on or off (got \(text)).")
            }
            if text == "off" { rateLimits = .off }
        }
        for (name, action) in Self.rateLimitVariables {
            if let text = value(name) { rateLimits[action] = try Self.rateLimit(text, name) }
        }
        if let text = value("SCROLLBACK_SEARCH_CONFIG") {
            guard text.wholeMatch(of: #/[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?/#) != nil else {
                throw Failure(
                    "SCROLLBACK_SEARCH_CONFIG must name a PostgreSQL text search configuration, such as simple or english (got \(text)).")
            }
            searchConfig = text
        }
        if let text = value("SCROLLBACK_MAX_CONNECTIONS") {
            connections.maxConnections = try Self.integer(text, "SCROLLBACK_MAX_CONNECTIONS", in: 1...1_000_000)
        }
        if let text = value("SCROLLBACK_MAX_SOCKETS") {
            liveOptions.maxSockets = try Self.integer(text, "SCROLLBACK_MAX_SOCKETS", in: 1...1_000_000)
        }
        if let text = value("SCROLLBACK_HEADER_TIMEOUT") {
            connections.headerTimeout = try Self.seconds(text, "SCROLLBACK_HEADER_TIMEOUT")
        }
        if let text = value("SCROLLBACK_BODY_TIMEOUT") {
            connections.bodyTimeout = try Self.seconds(text, "SCROLLBACK_BODY_TIMEOUT")
        }
        if let text = value("SCROLLBACK_MIN_RECEIVE_RATE") {
            connections.minReceiveRate = try Self.integer(text, "SCROLLBACK_MIN_RECEIVE_RATE", in: 0...1_000_000_000)
        }
        if let text = value("SCROLLBACK_IDLE_TIMEOUT") {
            connections.idleTimeout = try Self.seconds(text, "SCROLLBACK_IDLE_TIMEOUT")
        }
        if let text = value("SCROLLBACK_MAX_BODY_BYTES") {
            connections.maxBodyBytes = try Self.integer(text, "SCROLLBACK_MAX_BODY_BYTES", in: Self.bodyBytesRange)
        }
        if let text = value("SCROLLBACK_MAX_UPLOAD_BYTES") {
            uploads.maxBytes = Int64(try Self.integer(text, "SCROLLBACK_MAX_UPLOAD_BYTES", in: UploadOptions.maxBytesRange))
        }
        if let text = value("SCROLLBACK_MAX_PENDING_UPLOADS") {
            uploads.maxPending = try Self.integer(text, "SCROLLBACK_MAX_PENDING_UPLOADS", in: 1...100_000)
        }
        if let text = value("SCROLLBACK_UPLOAD_KINDS") {
            guard let kinds = UploadOptions.kinds(text) else {
                throw Failure(
                    "SCROLLBACK_UPLOAD_KINDS must be a comma-separated list of image, video and file, such as image,file (got \(text)).")
            }
            uploads.allowedKinds = kinds
        }
        uploads.objectStorage = try Self.objectStorage(value)
        if let text = value("SCROLLBACK_RETENTION_DAYS") {
            retentionDays = try Self.integer(text, "SCROLLBACK_RETENTION_DAYS", in: 1...36_500)
        }
        if let text = value("SCROLLBACK_RETENTION_SWEEP_SECONDS") {
            retentionSweep = .seconds(try Self.integer(text, "SCROLLBACK_RETENTION_SWEEP_SECONDS", in: 1...86_400))
        }
        if let text = value("SCROLLBACK_WEBHOOK_URL") {
            outbox.webhookURL = try OutboxOptions.endpoint(text, "SCROLLBACK_WEBHOOK_URL")
            outbox.webhookSecret = try OutboxOptions.secret(
                value("SCROLLBACK_WEBHOOK_SECRET"), "SCROLLBACK_WEBHOOK_SECRET", for: "SCROLLBACK_WEBHOOK_URL")
        }
        if let text = value("SCROLLBACK_PUSH_GATEWAY_URL") {
            outbox.pushGatewayURL = try OutboxOptions.endpoint(text, "SCROLLBACK_PUSH_GATEWAY_URL")
            // The webhook secret serves when the push gateway has none of its own.
            let secretName = value("SCROLLBACK_PUSH_SECRET") == nil && value("SCROLLBACK_WEBHOOK_SECRET") != nil
                ? "SCROLLBACK_WEBHOOK_SECRET" : "SCROLLBACK_PUSH_SECRET"
            outbox.pushSecret = try OutboxOptions.secret(
                value("SCROLLBACK_PUSH_SECRET") ?? value("SCROLLBACK_WEBHOOK_SECRET"), secretName,
                for: "SCROLLBACK_PUSH_GATEWAY_URL")
        }
        if let text = value("SCROLLBACK_PUSH_CONTENT") {
            guard text == "full" || text == "none" else {
                throw Failure("SCROLLBACK_PUSH_CONTENT must be full or none (got \(text)).")
            }
            outbox.withholdPushContent = text == "none"
        }
        if let text = value("SCROLLBACK_PUSH_WHEN") {
            guard text == "offline" || text == "always" else {
                throw Failure("SCROLLBACK_PUSH_WHEN must be offline or always (got \(text)).")
            }
            outbox.pushEvenOnline = text == "always"
        }
        if let text = value("SCROLLBACK_WEBHOOK_TIMEOUT") {
            outbox.deliveryTimeout = try Self.seconds(text, "SCROLLBACK_WEBHOOK_TIMEOUT")
        }
        if let text = value("SCROLLBACK_OUTBOX_RETRY_WINDOW") {
            outbox.retryWindow = .seconds(try Self.integer(text, "SCROLLBACK_OUTBOX_RETRY_WINDOW", in: 1...30 * 86_400))
        }
        if let text = value("SCROLLBACK_OUTBOX_BACKOFF_CAP") {
            outbox.backoffCap = .seconds(try Self.integer(text, "SCROLLBACK_OUTBOX_BACKOFF_CAP", in: 1...86_400))
        }
        if let text = value("SCROLLBACK_OUTBOX_RETENTION") {
            outbox.retention = .seconds(try Self.integer(text, "SCROLLBACK_OUTBOX_RETENTION", in: 1...365 * 86_400))
        }
        if databaseURL != nil && jwtSecret == nil {
            throw Failure(
                """
                SCROLLBACK_JWT_SECRET is not set. With DATABASE_URL set, every instance must share one \
                signing secret: set SCROLLBACK_JWT_SECRET (for example to the output of `openssl rand -hex 32`).
                """)
        }
    }

    /// The object store of uploads, when `SCROLLBACK_STORAGE_URL` names one.
    static func objectStorage(_ value: (String) -> String?) throws -> ObjectStorageConfiguration? {
        let s3Names = [
            "SCROLLBACK_S3_ENDPOINT", "SCROLLBACK_S3_REGION", "SCROLLBACK_S3_ACCESS_KEY_ID",
            "SCROLLBACK_S3_SECRET_ACCESS_KEY", "SCROLLBACK_S3_SESSION_TOKEN", "SCROLLBACK_S3_ADDRESSING",
        ]
        guard let url = value("SCROLLBACK_STORAGE_URL") else {
            if let set = s3Names.first(where: { value($0) != nil }) {
                throw Failure("\(set) is set but SCROLLBACK_STORAGE_URL is not: set it to s3://bucket/prefix to keep uploads in that object store, or unset \(set).")
            }
            return nil
        }
        guard let keyID = value("SCROLLBACK_S3_ACCESS_KEY_ID"), let secret = value("SCROLLBACK_S3_SECRET_ACCESS_KEY") else {
            throw Failure("SCROLLBACK_STORAGE_URL needs SCROLLBACK_S3_ACCESS_KEY_ID and SCROLLBACK_S3_SECRET_ACCESS_KEY.")
        }
        let addressing = value("SCROLLBACK_S3_ADDRESSING") ?? "path"
        guard let style = ObjectStorageConfiguration.AddressingStyle(rawValue: addressing) else {
            throw Failure("SCROLLBACK_S3_ADDRESSING must be path or virtual (got \(addressing)).")
        }
        do {
            return try ObjectStorageConfiguration(
                storageURL: url, endpoint: value("SCROLLBACK_S3_ENDPOINT"), region: value("SCROLLBACK_S3_REGION") ?? "us-east-1",
                credentials: S3Credentials(
                    accessKeyID: keyID, secretAccessKey: secret, sessionToken: value("SCROLLBACK_S3_SESSION_TOKEN")),
                addressingStyle: style)
        } catch {
            throw Failure("SCROLLBACK_STORAGE_URL and the SCROLLBACK_S3_ settings do not describe an object store: \(error).")
        }
    }

    /// A setting that cannot be used, with what to fix.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String

        init(_ description: String) {
            self.description = description
        }
    }

    /// `SCROLLBACK_MAX_BODY_BYTES`: from 16 KiB, which holds the longest
    /// message (4,000 code points, escaped), to 64 MiB.
    static let bodyBytesRange = 16 * 1024...64 * 1024 * 1024
    /// `SCROLLBACK_MAX_RESPONSE_BYTES`: from 64 KiB to 64 MiB.
    static let responseBytesRange = 64 * 1024...64 * 1024 * 1024
    /// `SCROLLBACK_PAGE_CACHE_BYTES`: 0 (off) to 64 GiB.
    static let pageCacheBytesRange = 0...64 << 30
    /// `SCROLLBACK_SEND_GROUP_SIZE`: 0 or 1 (off) to the largest group.
    static let sendGroupSizeRange = 0...StoreOptions.maximumSendGroupSize
    /// `SCROLLBACK_SEND_GROUP_WAIT_MS`: 0 to 1 s.
    static let sendGroupWaitRange = 0...1_000

    /// `SCROLLBACK_REPLICA_MAX_LAG_MS`: 10 ms to a minute (a replica also
    /// shows a removed member's or an erased user's messages that long).
    static let replicaMaxLagRange = 10...60_000
    /// `SCROLLBACK_REPLICA_POLL_MS`: 10 ms to 10 s.
    static let replicaPollRange = 10...10_000

    static func integer(_ text: String, _ name: String, in range: ClosedRange<Int>) throws -> Int {
        guard let number = Int(text), range.contains(number) else {
            throw Failure("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound) (got \(text)).")
        }
        return number
    }

    /// Seconds, above 0 and at most an hour; fractions allowed (0.5).
    /// The origins whose pages may open the live stream: those of
    /// `SCROLLBACK_ALLOWED_ORIGINS`, and with the demo, the demo's own page.
    var streamOrigins: AllowedOrigins {
        var origins = allowedOrigins
        origins.allowsSameOrigin = demo
        return origins
    }

    /// A yes/no setting: `1`, `true`, `yes` or `0`, `false`, `no`; absent is no.
    static func flag(_ text: String?, _ name: String) throws -> Bool {
        guard let text else { return false }
        switch text.lowercased() {
        case "1", "true", "yes": return true
        case "0", "false", "no": return false
        default: throw Failure("\(name) must be 1 or 0 (got \(text)).")
        }
    }

    static func seconds(_ text: String, _ name: String) throws -> Duration {
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 3600 else {
            throw Failure("\(name) must be a number of seconds above 0 and at most 3600 (got \(text)).")
        }
        return .milliseconds(max(1, Int((seconds * 1000).rounded())))
    }

    static let rateLimitVariables: [(String, RateLimitedAction)] = [
        ("SCROLLBACK_LIMIT_SEND", .send), ("SCROLLBACK_LIMIT_CONVERSATIONS", .conversation),
        ("SCROLLBACK_LIMIT_MEMBERS", .member), ("SCROLLBACK_LIMIT_TYPING", .typing),
        ("SCROLLBACK_LIMIT_SUBSCRIBE", .subscribe), ("SCROLLBACK_LIMIT_UPLOADS", .upload),
    ]

    /// `BURST/SECONDS` (`30/10`: 30 at once, 30 more every 10 seconds), or
    /// `0` for no limit.
    static func rateLimit(_ text: String, _ name: String) throws -> RateLimit {
        if text == "0" || text == "off" { return .off }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let burst = Int(parts[0]), (1...1_000_000).contains(burst) else {
            throw Failure(
                "\(name) must be BURST/SECONDS, such as 30/10 (30 at once, 30 more every 10 seconds), or 0 for no limit (got \(text)).")
        }
        return RateLimit(burst: burst, per: try seconds(String(parts[1]), name))
    }

    /// A logger at the configured level.
    public func logger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = logLevel
        return logger
    }
}
