import Foundation
import Logging
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import ServiceLifecycle
import Testing

/// One or more Scrollback instances on loopback sharing one fresh schema, each
/// run as `runScrollback` runs it (store, server, live delivery under one
/// service group), for the live-stream tests.
struct LiveCluster: Sendable {
    struct Instance: Sendable {
        let port: Int
        let store: ScrollbackStore
        let live: LiveDelivery
        let group: ServiceGroup
    }

    let instances: [Instance]
    let tokens: TokenAuthority
    let url: DatabaseURL
    let schema: String

    /// The first instance's store, for setting up conversations.
    var store: ScrollbackStore { instances[0].store }

    static func run(
        instances count: Int = 1, options: LiveOptions = LiveOptions(), logger: Logger? = nil,
        configure: (inout ScrollbackConfiguration) -> Void = { _ in },
        _ test: @escaping @Sendable (LiveCluster) async throws -> Void
    ) async throws {
        let logger = logger ?? {
            var logger = Logger(label: "scrollback.tests.live")
            logger.logLevel = .warning
            return logger
        }()
        var configuration = TestServer.configuration
        configure(&configuration)
        try await TestDatabase.withSchema { url, schema in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                var instances: [Instance] = []
                for index in 0..<count {
                    let store = ScrollbackStore(
                        url: url, options: StoreOptions(maximumConnections: 10, searchPath: schema), logger: logger)
                    let live = LiveDelivery(store: store, options: options, logger: logger)
                    let (ports, portReported) = AsyncStream<Int>.makeStream()
                    let app = try await buildApplication(
                        configuration: configuration, store: store, logger: logger, migrateOnStart: index == 0,
                        live: live, onServerRunning: { portReported.yield($0) })
                    let group = ServiceGroup(
                        configuration: .init(
                            services: [.init(service: store), .init(service: app), .init(service: live)],
                            logger: logger))
                    tasks.addTask { try await group.run() }
                    var iterator = ports.makeAsyncIterator()
                    let port = try #require(await iterator.next())
                    instances.append(Instance(port: port, store: store, live: live, group: group))
                }
                let cluster = LiveCluster(
                    instances: instances, tokens: try await TokenAuthority(secret: TestServer.secret), url: url,
                    schema: schema)
                let outcome: Result<Void, any Error>
                do {
                    outcome = .success(try await test(cluster))
                } catch {
                    outcome = .failure(error)
                }
                for instance in instances { await instance.group.triggerGracefulShutdown() }
                try await tasks.waitForAll()
                try outcome.get()
            }
        }
    }

    func token(_ user: String, ttl: TimeInterval = 600) async throws -> String {
        try await tokens.token(for: user, ttl: ttl)
    }

    /// A socket of `user` on instance `index`, authenticated by header.
    func connect(_ user: String, to index: Int = 0, paused: Bool = false) async throws -> StreamClient {
        let client = StreamClient(port: instances[index].port, token: try await token(user), paused: paused)
        if !paused { try await client.waitUntilConnected() }
        return client
    }

    /// Subscribes and waits for `subscribed`, returning it.
    @discardableResult
    func subscribe(_ client: StreamClient, to id: UUID, after: Int64? = nil) async throws -> (lastSeq: Int64, version: Int64) {
        try client.send(.subscribe(conversationId: id, afterSeq: after))
        let frame = try await client.next { if case .subscribed = $0 { true } else { $0.isError } }
        guard case .subscribed(_, let lastSeq, let version) = frame else {
            Issue.record("expected subscribed, got \(frame)")
            throw StreamClientError.noFrame
        }
        return (lastSeq, version)
    }

    /// A conversation of `creator` with `members`.
    func conversation(_ creator: String, members: [String]) async throws -> UUID {
        try await store.createConversation(
            creator: UserID(rawValue: creator), title: nil, members: members.map(UserID.init(rawValue:))
        ).id
    }

    /// Sends `count` messages through the store of instance `index`.
    func send(_ count: Int, to id: UUID, as user: String, from index: Int = 0, prefix: String = "m") async throws {
        for n in 0..<count {
            _ = try await instances[index].store.send(
                to: id, from: UserID(rawValue: user), body: "\(prefix) \(n)", clientID: nil)
        }
    }
}

extension ServerFrame {
    var isError: Bool {
        if case .error = self { true } else { false }
    }

    /// The message of a `message` frame.
    var newMessage: Message? {
        if case .message(let message) = self { message } else { nil }
    }
}

extension StreamClient {
    /// The next `count` new messages, skipping other frames; fails when one
    /// is missing after `timeout`.
    func messages(_ count: Int, timeout: Duration = .seconds(20)) async throws -> [Message] {
        var messages: [Message] = []
        let deadline = ContinuousClock.now + timeout
        while messages.count < count {
            let frame = try await next(where: { $0.newMessage != nil }, timeout: deadline - ContinuousClock.now)
            messages.append(frame.newMessage!)
        }
        return messages
    }
}
