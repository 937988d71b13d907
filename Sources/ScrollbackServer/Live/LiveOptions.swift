import Foundation
import Logging
import Metrics
import ScrollbackModels
import ScrollbackStore
import ServiceLifecycle

/// How live delivery behaves; the defaults are the service's, tests shorten them.
public struct LiveOptions: Sendable {
    /// How often the open sockets, subscriptions and queues are logged.
    public var statisticsInterval: Duration = .seconds(60)
    /// How often the listening connection is probed.
    public var probeInterval: Duration = .seconds(10)
    /// How long a shutdown waits for sockets to close after 1001.
    public var shutdownGrace: Duration = .seconds(5)
    /// Seconds between pings to each socket; a client that does not answer
    /// one within the next period is closed.
    public var pingInterval: Duration = .seconds(30)
    /// The outbound queue of each socket.
    var queueLimits = OutboundQueue.Limits()
    /// `SCROLLBACK_MAX_SOCKETS`: open live-stream sockets; one more is
    /// closed with 1013 (try again later) right after the upgrade.
    public var maxSockets = 5_000
    /// Presence: how often this instance beats, and how long after its last
    /// beat its users still count as online (when it was killed).
    public var presenceHeartbeat: Duration = .seconds(10)
    public var presenceTTL: Duration = .seconds(30)

    public init() {}

    /// The soft and hard limit of each socket's outbound queue, how long it
    /// may stay above the soft one, and how long its writer may take nothing
    /// while it is above the hard one (see `OutboundQueue`).
    public mutating func setQueueLimits(softBytes: Int, hardBytes: Int, grace: Duration, stall: Duration) {
        queueLimits = OutboundQueue.Limits(softBytes: softBytes, hardBytes: hardBytes, grace: grace, stall: stall)
    }
}
