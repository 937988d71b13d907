import Foundation
import Logging
import Metrics
import ScrollbackModels
import ScrollbackStore
import ServiceLifecycle

/// Live delivery of one instance, as a `Service`: the change feed's
/// listening connection (reconnected by the store), the catch-up worker
/// that reads what the feed announced and hands it to the hub, and the
/// periodic statistics line. On graceful shutdown every socket is closed
/// with 1001 once the frame it is handling is answered, before the HTTP
/// server stops (run it after the application in the service group).
public struct LiveDelivery: Service {
    let hub = LiveHub()
    let counters: LiveCounters
    let metrics: LiveMetrics
    let store: ScrollbackStore
    let options: LiveOptions
    let logger: Logger
    /// Who has a socket here, in the database for every instance.
    let presence: PresenceTracker
    /// Whom each user blocked, kept current by the change feed.
    let blockLists: BlockLists
    /// When each user's tokens were last revoked, kept current by the change feed.
    let revocations: Revocations

    /// Records into `metrics` when given (the same as the application's).
    public init(
        store: ScrollbackStore, options: LiveOptions = LiveOptions(), metrics: ScrollbackMetrics? = nil, logger: Logger
    ) {
        self.store = store
        self.options = options
        self.metrics = metrics?.live ?? LiveMetrics(factory: NOOPMetricsHandler.instance)
        self.counters = LiveCounters(
            slowConsumerCloses: self.metrics.slowConsumerCloses,
            onRefusedSocket: { metrics?.refusedConnection(kind: "socket") })
        self.logger = logger
        self.blockLists = BlockLists(store: store)
        self.revocations = Revocations(store: store)
        self.presence = PresenceTracker(
            store: store, ttl: options.presenceTTL, heartbeat: options.presenceHeartbeat, logger: logger)
    }

    /// Whether the change feed's listening connection is in place (part of
    /// `/readyz`).
    public var isListening: Bool {
        get async { await hub.isListening }
    }

    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [store, hub, options, metrics, blockLists, revocations] in
                await store.listenToFeed(probeInterval: options.probeInterval) { signal in
                    metrics.received(signal)
                    switch signal {
                    case .event(.blocks(let user)): blockLists.changed(user)
                    case .event(.erased(let user)): store.forgetKnownUser(user)
                    // Known before the hub closes the user's sockets, so a
                    // socket signing in meanwhile is refused (`StreamSession`).
                    case .event(.revoked(let user, let before)): revocations.revoked(user, before: before)
                    case .listening, .lost:
                        blockLists.forgetAll()
                        revocations.forgetAll()
                    case .event: break
                    }
                    await hub.handle(signal)
                }
            }
            group.addTask { await catchUp() }
            group.addTask { [presence] in await presence.run() }
            group.addTask { await logStatistics() }
            // Until the service group shuts down (or the task is cancelled).
            try? await gracefulShutdown()
            await closeSockets()
            group.cancelAll()
        }
    }

    /// Reads what the feed announced, one read per conversation (and one of
    /// the presence it named), and fans it out; a read that fails is tried again shortly. A conversation is
    /// never read twice at once: the next pass starts after every read of
    /// this one was applied. Ends with `stopWorker` or cancellation.
    private func catchUp() async {
        for await _ in hub.wakeUps {
            let requests = await hub.takeReads()
            let inboxRequests = await hub.takeInboxReads()
            let presence = await hub.takePresence()
            let blockReads = await hub.takeBlockReads()
            let profiles = await hub.takeProfiles()
            let details = await hub.takeDetails()
            var failed = false
            await withTaskGroup(of: Bool.self) { group in
                if !details.isEmpty {
                    group.addTask { [store, hub] in
                        do {
                            await hub.apply(try await store.details(of: details))
                            return true
                        } catch {
                            await hub.retryDetails(details)
                            return false
                        }
                    }
                }
                if let profiles {
                    group.addTask { [store, hub] in
                        do {
                            let audience = try await store.sharing(profiles.changed, with: profiles.viewers)
                            await hub.apply(try await store.profiles(named: Set(profiles.changed)), audience: audience)
                            return true
                        } catch {
                            await hub.retry(profiles)
                            return false
                        }
                    }
                }
                if !blockReads.isEmpty {
                    group.addTask { [hub, blockLists] in
                        var left = blockReads[...]
                        do {
                            while let user = left.first {
                                await hub.setBlocked(try await blockLists.blocked(by: user), for: user)
                                left = left.dropFirst()
                            }
                            return true
                        } catch {
                            await hub.retryBlocks(Array(left))
                            return false
                        }
                    }
                }
                if let presence {
                    group.addTask { [store, hub] in
                        do {
                            let rows = try await store.presence(of: presence.users, in: presence.conversations)
                            await hub.apply(rows, for: presence)
                            return true
                        } catch {
                            await hub.retry(presence)
                            return false
                        }
                    }
                }
                for request in inboxRequests {
                    group.addTask { [store, hub] in
                        do {
                            let read = try await store.inbox(
                                of: request.user, after: request.after, limit: APILimits.maxStreamBacklog,
                                memberships: request.memberships)
                            await hub.apply(read, for: request)
                            return true
                        } catch {
                            await hub.retry(request)
                            return false
                        }
                    }
                }
                for request in requests {
                    group.addTask { [store, hub, metrics] in
                        do {
                            let read = try await store.feed(
                                of: request.conversation, afterSeq: request.afterSeq,
                                afterVersion: request.afterVersion, checking: request.users,
                                limit: APILimits.maxStreamBacklog)
                            if let read { metrics.fanningOut(read) }
                            await hub.apply(read, for: request)
                            return true
                        } catch {
                            await hub.retry(request)
                            return false
                        }
                    }
                }
                for await succeeded in group where !succeeded { failed = true }
            }
            if failed {
                logger.warning("live delivery could not read new messages; retrying")
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    private func logStatistics() async {
        while (try? await Task.sleep(for: options.statisticsInterval)) != nil {
            var statistics = await hub.statistics()
            statistics.closedTooSlow = counters.closedForSlowness
            logger.info(
                "live delivery",
                metadata: [
                    "sockets": "\(statistics.sockets)", "subscriptions": "\(statistics.subscriptions)",
                    "inboxes": "\(statistics.inboxes)",
                    "conversations": "\(statistics.conversations)", "queued_frames": "\(statistics.queuedFrames)",
                    "queued_bytes": "\(statistics.queuedBytes)", "closed_too_slow": "\(statistics.closedTooSlow)",
                ])
        }
    }

    private func closeSockets() async {
        let sockets = await hub.shutDown()
        for socket in sockets { socket.beginShutdown(grace: options.shutdownGrace) }
        let deadline = ContinuousClock.now + options.shutdownGrace + .seconds(1)
        while await hub.openSockets > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        hub.stopWorker()
    }
}
