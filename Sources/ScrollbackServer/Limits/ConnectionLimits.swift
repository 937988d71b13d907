import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

/// What one process accepts from its clients at the connection level (the
/// configuration table in docs/operations.md lists the variables).
public struct ConnectionLimits: Sendable, Equatable {
    /// `SCROLLBACK_MAX_CONNECTIONS`: open HTTP connections, live-stream
    /// sockets included; one more is answered 503 with `Retry-After` and
    /// closed.
    public var maxConnections: Int
    /// `SCROLLBACK_HEADER_TIMEOUT`, `SCROLLBACK_BODY_TIMEOUT`,
    /// `SCROLLBACK_MIN_RECEIVE_RATE` (bytes per second) and
    /// `SCROLLBACK_IDLE_TIMEOUT`: the rule of ``RequestTimer``.
    public var headerTimeout: Duration = .seconds(10)
    public var bodyTimeout: Duration = .seconds(10)
    public var minReceiveRate = 1_024
    public var idleTimeout: Duration = .seconds(60)
    /// `SCROLLBACK_MAX_BODY_BYTES`: the largest request body, on every
    /// route. A larger one is answered 413 (or its connection closed when
    /// the answer has begun), never read to its end.
    public var maxBodyBytes = APILimits.maxRequestBodyBytes

    var timer: RequestTimer.Limits {
        RequestTimer.Limits(
            headerTimeout: headerTimeout, bodyTimeout: bodyTimeout, minReceiveRate: minReceiveRate, idleTimeout: idleTimeout)
    }

    public init(maxConnections: Int = ConnectionLimits.defaultMaxConnections()) {
        self.maxConnections = maxConnections
    }

    /// 10,000, or fewer when the process may not open that many files: its
    /// file limit less `reserved` descriptors for the database pool, the
    /// change feed, logs and the embedded cluster's pipes.
    public static func defaultMaxConnections(reserved: Int = 256) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return 10_000 }
        return max(16, min(10_000, Int(clamping: limit.rlim_cur) - reserved))
    }

    /// Raises the process's soft limit of open files to its hard limit (at
    /// most 1,048,576), so the connection cap, not the file limit, is what
    /// refuses a client.
    public static func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let wanted = min(limit.rlim_max, 1 << 20)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = wanted
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
