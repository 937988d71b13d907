import Metrics
import NIOConcurrencyHelpers

/// The store's operations, by the name their latency is reported under
/// (`scrollback_db_statement_duration_seconds{statement="..."}`): one name
/// per operation, so the label's values are this fixed set. An operation
/// that runs a transaction is timed as a whole.
public enum StatementName: String, CaseIterable, Sendable {
    case ping
    case ensureUser = "ensure_user"
    case createConversation = "create_conversation"
    case conversation
    case conversations
    case markRead = "mark_read"
    case addMember = "add_member"
    case removeMember = "remove_member"
    case page
    case seqAtTime = "seq_at_time"
    case changes
    case send
    case sendGroup = "send_group"
    case changeMessage = "change_message"
    case diagnoseChange = "diagnose_change"
    case react
    case thread
    case feed
    case inbox
    case mentions
    case typing
    case migrate
    case search
    case searchBackfill = "search_backfill"
    case upload
    case uploadBytes = "upload_bytes"
    case collectUploads = "collect_uploads"
    case devices
    case outbox
    case mute
    case presence
    case roles
    case blocks
    case reports
    case audit
    case moderation
    case privacy
    case importing
    case retention
    case revocations
    case profiles
}

/// Why the store gave up on a statement or on waiting for a connection,
/// as `scrollback_db_timeouts_total{kind="..."}` counts it.
enum TimeoutKind: String, CaseIterable, Sendable {
    /// SQLSTATE 57014: PostgreSQL cancelled the statement (its
    /// `statement_timeout`, or an operator's cancel).
    case statementTimeout = "statement_timeout"
    /// SQLSTATE 55P03: a lock was not granted within `lock_timeout`.
    case lockTimeout = "lock_timeout"
    /// The statement was sent and the database did not answer within the
    /// store's own deadline (a server that stopped answering).
    case noAnswer = "no_answer"
    /// No connection came from the pool in time.
    case noConnection = "no_connection"
}

/// What the store reports through swift-metrics: its pool's leases, each
/// operation's latency and the timeouts. Every handle is made here, once
/// per store, with fixed label names, so recording is a lookup in a
/// dictionary built at start and never registers anything.
struct StoreMetrics: Sendable {
    private let durations: [StatementName: Timer]
    private let timeouts: [TimeoutKind: Counter]
    private let leased: Meter
    private let idle: Meter
    private let waiting: Meter
    private let groups: Counter
    private let groupedSends: Counter
    private let groupFallbacks: Counter

    init(factory: any MetricsFactory, poolSize: Int) {
        durations = Dictionary(
            uniqueKeysWithValues: StatementName.allCases.map { name in
                (
                    name,
                    Timer(
                        label: "scrollback_db_statement_duration_seconds", dimensions: [("statement", name.rawValue)],
                        factory: factory)
                )
            })
        timeouts = Dictionary(
            uniqueKeysWithValues: TimeoutKind.allCases.map { kind in
                (
                    kind,
                    Counter(label: "scrollback_db_timeouts_total", dimensions: [("kind", kind.rawValue)], factory: factory)
                )
            })
        groups = Counter(label: "scrollback_send_groups_total", factory: factory)
        groupedSends = Counter(label: "scrollback_send_group_sends_total", factory: factory)
        groupFallbacks = Counter(label: "scrollback_send_group_fallbacks_total", factory: factory)
        leased = Meter(label: "scrollback_db_pool_leased_connections", factory: factory)
        idle = Meter(label: "scrollback_db_pool_idle_connections", factory: factory)
        waiting = Meter(label: "scrollback_db_pool_waiting_requests", factory: factory)
        // Added rather than set: stores that share a factory add up.
        Meter(label: "scrollback_db_pool_max_connections", factory: factory).increment(by: Double(poolSize))
        idle.increment(by: Double(poolSize))
    }

    func ran(_ statement: StatementName, for duration: Duration) {
        durations[statement]?.record(duration: duration)
    }

    /// The database answered a group of `count` sends (see `SendGroups`).
    func grouped(_ count: Int) {
        groups.increment()
        groupedSends.increment(by: count)
    }

    /// A group was refused as a whole and its sends stored one by one.
    func fellBack() {
        groupFallbacks.increment()
    }

    func timedOut(_ kind: TimeoutKind) {
        timeouts[kind]?.increment()
    }

    /// One call's lease of a pooled connection: counted as waiting from its
    /// start until the pool grants it (then as leased) or gives up, and
    /// uncounted exactly once at its end.
    final class Lease: Sendable {
        private let metrics: StoreMetrics
        private let granted = NIOLockedValueBox(false)

        init(_ metrics: StoreMetrics) {
            self.metrics = metrics
            metrics.waiting.increment()
        }

        /// The pool handed out the connection.
        func grant() {
            granted.withLockedValue { $0 = true }
            metrics.waiting.decrement()
            metrics.leased.increment()
            metrics.idle.decrement()
        }

        /// The call is over: its connection went back to the pool, or none
        /// came (a deadline, a pool error, cancellation).
        func end() {
            if granted.withLockedValue({ $0 }) {
                metrics.leased.decrement()
                metrics.idle.increment()
            } else {
                metrics.waiting.decrement()
            }
        }
    }
}
