import Foundation
import Logging
import NIOConcurrencyHelpers
import ScrollbackStore
import ServiceLifecycle

/// A destination of the outbox's events: the webhook receiver, the push gateway.
protocol OutboxDestination: Sendable {
    var sink: OutboxSink { get }
    /// Delivers `events`, all of one conversation and in their order, one
    /// after another, calling `delivered` after each that succeeded (and
    /// `reached` after each recipient of an event that has several, which
    /// records them and keeps the claim's lease); stops at the first that
    /// fails and answers why.
    func deliver(
        _ events: [OutboxEvent], delivered: @Sendable (OutboxEvent) async throws -> Void,
        reached: @Sendable (OutboxEvent, [String]) async throws -> Void
    ) async throws -> DeliveryFailure?
}

/// An attempt that did not succeed.
struct DeliveryFailure: Error, Sendable {
    var event: OutboxEvent
    var reason: String
    /// Push recipients that were reached before the failure.
    var done: [String] = []
}

/// Delivers one sink's events from the outbox, on every instance that is
/// configured with the sink: claims due events (`ScrollbackStore.claimOutbox`:
/// no two workers hold events of one conversation), delivers each
/// conversation's in order while other conversations go on beside it, marks
/// each delivered as it goes, and backs a failed one off with jitter until
/// its window is over (then it is dead, and the conversation goes on). It
/// also keeps the outbox's gauges and prunes old events.
struct OutboxWorker: Service {
    let store: ScrollbackStore
    let destination: any OutboxDestination
    let options: OutboxOptions
    let metrics: OutboxMetrics?
    let logger: Logger

    var sink: OutboxSink { destination.sink }

    /// How long a claim holds an event: an attempt's deadline and a margin.
    var lease: Duration { options.deliveryTimeout + .seconds(5) }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await register()
            var housekept = ContinuousClock.now - .seconds(3600)
            while !Task.isCancelled {
                if ContinuousClock.now - housekept > Self.housekeepingInterval {
                    await housekeep()
                    housekept = .now
                }
                do {
                    let events = try await store.claimOutbox(sink, limit: options.claimLimit, lease: lease)
                    if events.isEmpty {
                        try? await Task.sleep(for: options.pollInterval)
                    } else {
                        await deliver(events)
                    }
                } catch {
                    logger.warning("the outbox could not be read", metadata: ["sink": "\(sink)", "error": "\(error)"])
                    try? await Task.sleep(for: .seconds(1))
                }
            }
        }
    }

    /// How often the gauges are read and old events pruned.
    static let housekeepingInterval = Duration.seconds(10)

    /// Registers the sink, trying again while the schema is not there yet
    /// (the migrations run at start, beside this).
    func register() async {
        while !Task.isCancelled {
            do {
                try await store.registerOutboxSink(sink)
                logger.info("delivering the outbox", metadata: ["sink": "\(sink)"])
                return
            } catch {
                logger.debug("the outbox sink is not registered yet", metadata: ["error": "\(error)"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    func deliver(_ events: [OutboxEvent]) async {
        var order: [UUID] = []
        var byConversation: [UUID: [OutboxEvent]] = [:]
        for event in events {
            if byConversation[event.conversationID] == nil { order.append(event.conversationID) }
            byConversation[event.conversationID, default: []].append(event)
        }
        await withTaskGroup(of: Void.self) { group in
            for conversation in order {
                let events = byConversation[conversation] ?? []
                group.addTask { await deliverConversation(events) }
            }
        }
    }

    /// One conversation's claimed events, in order, stopping at a failure
    /// (the rest are given back and wait for it).
    func deliverConversation(_ events: [OutboxEvent]) async {
        let delivered = DeliveredRows()
        do {
            let failure = try await destination.deliver(
                events,
                delivered: { event in
                    try await mark([event.row], renewing: events.filter { $0.row > event.row }, token: event.lease)
                    delivered.add(event.row)
                    metrics?.delivered(sink, latency: Date().timeIntervalSince(event.createdAt))
                },
                reached: { event, users in
                    // The event first: its recipients are recorded on it.
                    try await mark([], renewing: events.filter { $0.row >= event.row }, token: event.lease, done: users)
                })
            guard let failure else { return }
            let token = failure.event.lease
            let rest = events.filter { $0.row > failure.event.row }.map(\.row)
            if Task.isCancelled {
                try await store.outboxRelease([failure.event.row] + rest, token: token)
                return
            }
            let wait = options.backoff(afterAttempts: failure.event.attempts + 1)
            let dead = try await store.outboxFailed(
                failure.event.row, token: token, error: failure.reason, retryAfter: wait, window: options.retryWindow,
                done: failure.done)
            try await store.outboxRelease(rest, token: token)
            metrics?.failed(sink, dead: dead)
            logger.log(
                level: dead ? .error : .notice,
                dead ? "an event of the outbox is dead: its retry window is over" : "an outbox delivery failed",
                metadata: [
                    "sink": "\(sink)", "event": "\(failure.event.event)", "type": "\(failure.event.type)",
                    "attempt": "\(failure.event.attempts + 1)", "reason": "\(failure.reason)",
                    "retry_in": "\(dead ? "never" : String(format: "%.1f s", wait / .seconds(1)))",
                ])
        } catch is ClaimLost {
            // The lease ran out (a stall longer than the lease): another
            // worker holds the rest now, and delivers them in order.
            logger.warning(
                "an outbox claim ran out before its deliveries were recorded; another worker has them",
                metadata: ["sink": "\(sink)"])
        } catch {
            // The database went away mid-way: what was not marked is given
            // back when its lease ends, and delivered again (at least once).
            logger.warning(
                "outbox deliveries could not be recorded", metadata: ["sink": "\(sink)", "error": "\(error)"])
            let left = events.map(\.row).filter { !delivered.contains($0) }
            if let token = events.first?.lease { try? await store.outboxRelease(left, token: token) }
        }
    }

    /// Marks `rows` delivered and renews the lease of `renewing`; throws
    /// `ClaimLost` when the claim no longer holds them.
    private func mark(_ rows: [Int64], renewing: [OutboxEvent], token: UUID, done: [String] = []) async throws {
        guard
            try await store.outboxDelivered(
                rows, renewing: renewing.map(\.row), lease: lease, token: token, done: done)
        else { throw ClaimLost() }
    }

    func housekeep() async {
        do {
            let counts = try await store.outboxCounts(sink)
            metrics?.observe(sink, counts)
            let pruned = try await store.pruneOutbox(retention: options.retention, limit: 5_000)
            if pruned > 0 { logger.info("pruned the outbox", metadata: ["sink": "\(sink)", "events": "\(pruned)"]) }
        } catch {
            logger.debug("the outbox's housekeeping failed", metadata: ["error": "\(error)"])
        }
    }
}

/// A mark that found the claim's lease gone: the delivery stops.
struct ClaimLost: Error {}

/// The rows one conversation's delivery has marked, read after it failed.
private final class DeliveredRows: Sendable {
    private let rows = NIOLockedValueBox<Set<Int64>>([])

    func add(_ row: Int64) { rows.withLockedValue { _ = $0.insert(row) } }
    func contains(_ row: Int64) -> Bool { rows.withLockedValue { $0.contains(row) } }
}
