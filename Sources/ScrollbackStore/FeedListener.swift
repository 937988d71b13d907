import Foundation
import Logging
import PostgresNIO

/// What the listening connection reports.
public enum FeedSignal: Sendable, Equatable {
    /// LISTEN is in place, on the first connection or after a reconnect:
    /// notifications sent while no connection listened are lost, so whoever
    /// consumes the feed catches up from the tables now.
    case listening
    /// The listening connection ended (it is being replaced): until the next
    /// `.listening`, notifications are not received.
    case lost
    case event(FeedEvent)
}

extension ScrollbackStore {
    /// The `application_name` of the listening connection (with the schema
    /// when one is set, so instances on different schemas can be told apart).
    public var listenerApplicationName: String {
        "scrollback-listener" + (options.searchPath.map { ":" + $0 } ?? "")
    }

    /// Listens to the change feed (the schema's channel, sql/027) on a
    /// connection of its own (the pool's connections cannot LISTEN), passing every notification to `handle`
    /// in commit order, until the task is cancelled. A lost connection is
    /// replaced, with backoff; each time LISTEN is in place again `handle`
    /// gets `.listening` first. A connection that stops answering is found
    /// by a probe every `probeInterval` and replaced too. The store's page
    /// cache follows the same signals, before `handle` does.
    public func listenToFeed(
        probeInterval: Duration = .seconds(10), _ handle: @escaping @Sendable (FeedSignal) async -> Void
    ) async {
        var failures = 0
        while !Task.isCancelled {
            var connection: PostgresConnection?
            var listened = false
            do {
                // The server that takes writes now: LISTEN works only there.
                let primary = self.primary.current
                let configuration = try url.on(primary.endpoint).connectionConfiguration(
                    options, applicationName: listenerApplicationName)
                let listening = try await PostgresConnection.connect(
                    configuration: configuration, id: 0, logger: logger)
                connection = listening
                let channel = try await Self.feedChannel(on: listening, within: options.deadline, logger: logger)
                try await listening.listen(on: channel) { notifications in
                    failures = 0
                    listened = true
                    logger.debug("listening to the change feed")
                    pageCache.handle(.listening)
                    profileCache.handle(.listening)
                    await handle(.listening)
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for try await notification in notifications {
                                let events = FeedEvent.events(in: notification.payload)
                                for event in events {
                                    pageCache.handle(.event(event))
                                    profileCache.handle(.event(event))
                                    await handle(.event(event))
                                }
                                if events.isEmpty, let id = FeedEvent.conversation(in: notification.payload) {
                                    pageCache.invalidate(id)
                                }
                            }
                        }
                        group.addTask {
                            while true {
                                try await Task.sleep(for: probeInterval)
                                try await Self.probe(listening, within: options.deadline, logger: logger)
                            }
                        }
                        if self.primary.canMove {
                            // After a failover, the old server's notifications are not the new one's.
                            group.addTask {
                                while self.primary.current.generation == primary.generation {
                                    try await Task.sleep(for: .milliseconds(50))
                                }
                                throw PrimaryMoved()
                            }
                        }
                        // Either ending means the connection is gone.
                        try await group.next()
                        group.cancelAll()
                    }
                }
            } catch where Task.isCancelled {
            } catch {
                logger.warning("the change feed's connection failed", metadata: ["error": "\(error)"])
            }
            try? await connection?.close()
            if listened {
                pageCache.handle(.lost)
                profileCache.handle(.lost)
                await handle(.lost)
            }
            guard !Task.isCancelled else { return }
            failures += 1
            // 0.1 s doubling up to 5 s, with jitter so instances do not reconnect in step.
            let backoff = min(0.1 * pow(2, Double(min(failures - 1, 6))), 5)
            try? await Task.sleep(for: .milliseconds(Int(backoff * Double.random(in: 500...1000))))
        }
    }

    private struct PrimaryMoved: Error {}

    /// The schema's change-feed channel (sql/027), as `connection`'s search
    /// path finds it. Before the schema is migrated (the first start on an
    /// empty database migrates while the listener starts) the function is
    /// not there yet: asked again every 100 ms, without counting it a failure.
    static func feedChannel(on connection: PostgresConnection, within limit: Duration, logger: Logger) async throws
        -> String
    {
        while true {
            do {
                return try await Deadline.run(connection: limit, total: limit) { (gate: Deadline.Gate<String>) in
                    gate.sending()
                    let rows = try await connection.query("SELECT feed_channel()", logger: logger).decode(String.self)
                    for try await channel in rows { return channel }
                    throw StoreError.unavailable
                }
            } catch let error as PSQLError where error.sqlState == "42883" {
                // undefined_function: the schema has not reached sql/027 yet.
                logger.debug("the change feed waits for the schema's migrations")
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Fails when the connection does not answer a trivial query in time.
    private static func probe(_ connection: PostgresConnection, within limit: Duration, logger: Logger) async throws {
        _ = try await Deadline.run(connection: limit, total: limit) { (gate: Deadline.Gate<Bool>) in
            gate.sending()
            _ = try await connection.query("SELECT 1", logger: logger).collect()
            return true
        }
    }
}
