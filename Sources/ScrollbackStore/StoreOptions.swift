import ScrollbackModels

/// How the store uses its database: pool size and the limits PostgreSQL
/// enforces on every statement.
public struct StoreOptions: Sendable, Equatable {
    /// Connections in the pool.
    public var maximumConnections: Int
    /// `statement_timeout`: PostgreSQL cancels a statement that runs longer
    /// (and rolls it back), so no request holds a connection past it.
    public var statementTimeout: Duration
    /// `lock_timeout`: a statement that waits longer for a row lock is
    /// cancelled (and rolled back).
    public var lockTimeout: Duration
    /// The schema to use (`search_path`); nil for the server's default. The
    /// tests give each test a schema of its own.
    public var searchPath: String?
    /// About the most JSON a page of the change log or of the conversation
    /// list makes before it stops with `has_more` (see ``ResponseBudget``);
    /// ``APILimits/maxResponseBytes`` by default.
    public var maxResponseBytes: Int
    /// The most bytes the newest-page cache holds (see ``PageCache``); 0
    /// turns it off.
    public var pageCacheBytes: Int

    /// The most sends committed together (see ``SendGroups``); 0 or 1
    /// turns grouping off (each send is its own statement).
    public var sendGroupSize: Int
    /// How long sends wait for the commit in flight before they start a
    /// group beside it.
    public var sendGroupWait: Duration

    /// Streaming replicas that serve reads (`SCROLLBACK_REPLICA_URLS`; see
    /// ``ReplicaSet``).
    public var replicas: [DatabaseURL] = []
    /// A replica further behind the primary than this leaves the rotation
    /// until it catches up (`SCROLLBACK_REPLICA_MAX_LAG_MS`).
    public var replicaMaxLag: Duration = .seconds(2)
    /// How often the replicas' replay and, when `DATABASE_URL` names
    /// several servers, which one is the primary are read
    /// (`SCROLLBACK_REPLICA_POLL_MS`).
    public var replicaPollInterval: Duration = .milliseconds(100)

    /// `SCROLLBACK_PAGE_CACHE_BYTES`'s default: 256 MiB, the newest pages
    /// of more than 10,000 conversations of 50 messages of about 140
    /// characters (a page holds about its JSON, `EncodedPage`).
    public static let defaultPageCacheBytes = 256 << 20
    /// `SCROLLBACK_SEND_GROUP_SIZE`'s default.
    public static let defaultSendGroupSize = 64
    /// `SCROLLBACK_SEND_GROUP_WAIT_MS`'s default.
    public static let defaultSendGroupWait = Duration.milliseconds(1)
    /// The largest group: its notification names each conversation it
    /// changed (about 80 bytes at most each) within PostgreSQL's 8,000.
    public static let maximumSendGroupSize = 96

    public init(
        maximumConnections: Int = 20, statementTimeout: Duration = .seconds(5), lockTimeout: Duration = .seconds(2),
        searchPath: String? = nil, maxResponseBytes: Int = APILimits.maxResponseBytes,
        pageCacheBytes: Int = StoreOptions.defaultPageCacheBytes,
        sendGroupSize: Int = StoreOptions.defaultSendGroupSize,
        sendGroupWait: Duration = StoreOptions.defaultSendGroupWait
    ) {
        self.maximumConnections = maximumConnections
        self.statementTimeout = statementTimeout
        self.lockTimeout = lockTimeout
        self.searchPath = searchPath
        self.maxResponseBytes = maxResponseBytes
        self.pageCacheBytes = pageCacheBytes
        self.sendGroupSize = min(sendGroupSize, Self.maximumSendGroupSize)
        self.sendGroupWait = sendGroupWait
    }

    /// How long a request waits for the database at most, lease included:
    /// the statement timeout, plus a grace for the round trip and for a
    /// server that stopped answering altogether (which no server-side limit
    /// can end).
    var deadline: Duration { statementTimeout + .seconds(2) }

    /// Session settings sent with every new connection.
    var startupParameters: [(String, String)] {
        var parameters = [
            ("application_name", "scrollback"),
            ("statement_timeout", "\(Self.milliseconds(statementTimeout))"),
            ("lock_timeout", "\(Self.milliseconds(lockTimeout))"),
            // A transaction left open by a stuck task must not hold its locks.
            ("idle_in_transaction_session_timeout", "\(Self.milliseconds(statementTimeout) * 2)"),
            // Every statement here takes milliseconds; compiling one (when its
            // estimate passes `jit_above_cost`, as a search of many
            // conversations can) takes tens of them.
            ("jit", "off"),
        ]
        if let searchPath { parameters.append(("search_path", searchPath)) }
        return parameters
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        max(1, duration.nanoseconds / 1_000_000)
    }
}
