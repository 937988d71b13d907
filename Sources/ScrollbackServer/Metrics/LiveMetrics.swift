import Foundation
import Metrics
import ScrollbackStore

/// Live delivery's metrics: what the change feed brought and how late,
/// sockets closed for slowness, listener reconnects (counted as they
/// happen), and the sockets, subscriptions and queues (read from the hub
/// when scraped, see `ScrollbackMetrics.exposition(of:)`).
struct LiveMetrics: Sendable {
    let slowConsumerCloses: Counter
    private let notifications: LabeledCounters
    private let listenerReconnects: Counter
    private let feedLag: Timer
    private let sockets: Gauge
    private let subscriptions: Gauge
    private let conversations: Gauge
    private let queuedFrames: Gauge
    private let queuedBytes: Gauge
    private let listening: Gauge

    /// The `kind` of a notification: what happened in a conversation, or
    /// `presence` (users whose presence may have changed).
    static let notificationKinds = [
        "message", "read", "member_added", "member_removed", "member_updated", "typing", "presence", "blocks",
        "erased", "profile", "conversation_updated",
    ]

    init(factory: any MetricsFactory) {
        slowConsumerCloses = Counter(label: "scrollback_live_slow_consumer_closes_total", factory: factory)
        notifications = LabeledCounters(
            "scrollback_live_notifications_total", label: "kind", Self.notificationKinds, factory)
        listenerReconnects = Counter(label: "scrollback_live_listener_reconnects_total", factory: factory)
        feedLag = Timer(label: "scrollback_live_feed_lag_seconds", factory: factory)
        sockets = Gauge(label: "scrollback_live_sockets", factory: factory)
        subscriptions = Gauge(label: "scrollback_live_subscriptions", factory: factory)
        conversations = Gauge(label: "scrollback_live_conversations", factory: factory)
        queuedFrames = Gauge(label: "scrollback_live_queued_frames", factory: factory)
        queuedBytes = Gauge(label: "scrollback_live_queued_bytes", factory: factory)
        listening = Gauge(label: "scrollback_live_listening", factory: factory)
    }

    /// A signal of the change feed's listening connection.
    func received(_ signal: FeedSignal) {
        switch signal {
        case .event(let event):
            notifications.increment(Self.kind(of: event))
        case .lost:
            // The connection is replaced at once (with backoff).
            listenerReconnects.increment()
        case .listening:
            break
        }
    }

    /// A read of the feed is about to be fanned out: each new message's lag
    /// is the time since the database stamped it (`created_at`, when its
    /// sending transaction began), on this host's clock.
    func fanningOut(_ read: FeedRead, at now: Date = Date()) {
        for message in read.added {
            feedLag.recordSeconds(max(0, now.timeIntervalSince(message.createdAt)))
        }
    }

    /// The gauges read when scraped.
    func observe(_ statistics: LiveStatistics, listening isListening: Bool) {
        sockets.record(statistics.sockets)
        subscriptions.record(statistics.subscriptions)
        conversations.record(statistics.conversations)
        queuedFrames.record(statistics.queuedFrames)
        queuedBytes.record(statistics.queuedBytes)
        listening.record(isListening ? 1 : 0)
    }

    private static func kind(of event: FeedEvent) -> String {
        switch event {
        case .changed: "message"
        case .read: "read"
        case .memberRemoved: "member_removed"
        case .memberAdded: "member_added"
        case .typing: "typing"
        case .presence: "presence"
        case .memberUpdated: "member_updated"
        case .blocks: "blocks"
        case .erased: "erased"
        case .revoked: "revoked"
        case .profile: "profile"
        case .conversationUpdated: "conversation_updated"
        }
    }
}
