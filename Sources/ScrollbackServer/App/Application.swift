import AsyncHTTPClient
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import ScrollbackModels
import Logging
import ScrollbackObjectStorage
import ScrollbackStore
import ServiceLifecycle

/// The HTTP and WebSocket server on `store`, which the caller runs (see
/// `runScrollback`). With `migrateOnStart`, pending migrations are applied
/// before the server accepts its first request; then the search
/// configuration is checked and set, and the search backfill starts. Without `live`, the
/// application runs its own live delivery as one of its services; pass one to
/// run it beside the application instead, so that a shutdown closes the
/// sockets (1001) before the server stops. Requests and live delivery are
/// recorded into `metrics` when given (see `buildMetricsApplication`).
public func buildApplication(
    configuration: ScrollbackConfiguration, store: ScrollbackStore, logger: Logger, migrateOnStart: Bool = true,
    live: LiveDelivery? = nil, metrics: ScrollbackMetrics? = nil,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    guard let secret = configuration.jwtSecret else {
        throw ScrollbackConfiguration.Failure("SCROLLBACK_JWT_SECRET is not set.")
    }
    let delivery = live ?? LiveDelivery(store: store, options: configuration.liveOptions, metrics: metrics, logger: logger)
    let tokens = try await TokenAuthority(
        secret: secret, identity: configuration.identity, revocations: delivery.revocations, logger: logger)
    let limiter = RateLimiter(limits: configuration.rateLimits) { action in metrics?.rateLimited(kind: action.rawValue) }
    var storage = UploadStorage.database
    var objectStoreClient: HTTPClientService?
    if let objectStorage = configuration.uploads.objectStorage {
        let client = HTTPClientService(httpClient: HTTPClient(eventLoopGroupProvider: .singleton))
        storage = .objectStore(S3ObjectStore(configuration: objectStorage, httpClient: client.httpClient, logger: logger))
        objectStoreClient = client
    }
    let uploads = UploadCommands(
        store: store, limiter: limiter, options: configuration.uploads, storage: storage, logger: logger)
    let commands = MemberCommands(store: store, limiter: limiter, uploads: uploads)
    let stream = StreamController(
        session: StreamSession(
            live: delivery, tokens: tokens, store: store, limiter: limiter, commands: commands, logger: logger),
        allowedOrigins: configuration.streamOrigins)
    let webSocketResponder = stream.webSocketRouter().buildResponder()
    let channelConfiguration = HTTP1WebSocketUpgradeChannel.Configuration(
        // Idle and slow connections are the slow-client guard's (see
        // `RequestTimer`); the observer tells it where requests begin and end.
        http1: .init(additionalChannelHandlers: [RequestBoundaryObserver()], idleTimeout: nil),
        ws: .init(
            maxFrameSize: APILimits.maxStreamFrameBytes,
            // The pings are a timer on each socket's event loop
            // (`StreamChannelHandler`), not a task per socket.
            autoPing: .disabled,
            closeTimeout: StreamChannelHandler.closeTimeout,
            validateUTF8: true))
    let gate = ConnectionGate(limit: configuration.connections.maxConnections)
    let connections = configuration.connections
    var app = Application(
        router: buildRouter(
            store: store, tokens: tokens, live: delivery, commands: commands,
            uploads: uploads, metrics: metrics,
            demo: configuration.demo,
            maxBodyBytes: configuration.connections.maxBodyBytes),
        server: HTTPServerBuilder { responder in
            GuardedChildChannel(
                base: HTTP1WebSocketUpgradeChannel(
                    responder: responder, webSocketResponder: webSocketResponder, configuration: channelConfiguration),
                limits: connections, maxUploadBytes: Int(configuration.uploads.maxBytes), gate: gate,
                onRefused: { metrics?.refusedConnection(kind: "http") },
                onTimedOut: { metrics?.refusedConnection(kind: "timed_out") },
                onBodyTooLarge: { metrics?.refusedConnection(kind: "body_too_large") },
                onMalformed: { metrics?.refusedConnection(kind: "malformed") })
        },
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "scrollback"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger)
    if live == nil { app.addServices(delivery) }
    if !tokens.providers.isEmpty { app.addServices(KeySetRefresh(providers: tokens.providers)) }
    app.addServices(UploadSweeper(store: store, options: configuration.uploads, storage: storage, logger: logger))
    app.addServices(
        RetentionSweeper(
            store: store, defaultDays: configuration.retentionDays, interval: configuration.retentionSweep, logger: logger))
    if let objectStoreClient { app.addServices(objectStoreClient) }
    app.addServices(outboxServices(configuration: configuration.outbox, store: store, metrics: metrics, logger: logger))
    // The search's backfill starts once the schema is there and its
    // configuration is set; an unknown configuration stops the start.
    let (searchReady, searchReadiness) = AsyncStream<Bool>.makeStream()
    app.addServices(SearchBackfill(store: store, logger: logger, ready: searchReady))
    app.beforeServerStarts {
        if migrateOnStart { try await store.migrate() }
        searchReadiness.yield(try await SearchBackfill.configure(configuration.searchConfig, store: store, logger: logger))
        searchReadiness.finish()
    }
    return app
}

/// Runs the service until SIGTERM or SIGINT: the store's pool, the HTTP and
/// WebSocket server, live delivery and, with a metrics port, the metrics
/// server under one service group. A shutdown goes in reverse: the sockets
/// are closed with 1001 first, then the server finishes the requests in
/// flight, then the metrics server and the pool close. `metrics` should be
/// the one whose `factory` the store was given.
public func runScrollback(
    configuration: ScrollbackConfiguration, store: ScrollbackStore, metrics: ScrollbackMetrics = ScrollbackMetrics(),
    logger: Logger
) async throws {
    let live = LiveDelivery(store: store, options: configuration.liveOptions, metrics: metrics, logger: logger)
    let app = try await buildApplication(
        configuration: configuration, store: store, logger: logger, live: live, metrics: metrics)
    var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: store)]
    if let port = configuration.metricsPort {
        services.append(
            .init(
                service: buildMetricsApplication(
                    metrics: metrics, live: live, host: configuration.host, port: port, logger: logger)))
    }
    services += [.init(service: app), .init(service: live)]
    let group = ServiceGroup(
        configuration: .init(
            services: services,
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
    try await group.run()
}

/// The outbox's workers for the sinks `configuration` names, and the HTTP
/// client they share.
func outboxServices(
    configuration: OutboxOptions, store: ScrollbackStore, metrics: ScrollbackMetrics?, logger: Logger
) -> [any Service] {
    guard configuration.webhookURL != nil || configuration.pushGatewayURL != nil else { return [] }
    var destinations: [any OutboxDestination] = []
    var clientConfiguration = HTTPClient.Configuration()
    // A receiver that redirects has not taken the event.
    clientConfiguration.redirectConfiguration = .disallow
    clientConfiguration.timeout.connect = .seconds(5)
    // A receiver that stalls in its answer's body fails the attempt too.
    clientConfiguration.timeout.read = .milliseconds(Int64(configuration.deliveryTimeout / .milliseconds(1)))
    // One connection for each conversation a claim delivers at once: a
    // request queued for a connection would spend its deadline waiting.
    clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = configuration.claimLimit
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
    if let url = configuration.webhookURL, let secret = configuration.webhookSecret {
        destinations.append(
            WebhookDestination(
                poster: SignedPost(
                    url: url, secret: secret, timeout: configuration.deliveryTimeout, userAgent: "Scrollback-Webhooks/1",
                    httpClient: client),
                store: store))
    }
    if let url = configuration.pushGatewayURL, let secret = configuration.pushSecret {
        destinations.append(
            PushDestination(
                poster: SignedPost(
                    url: url, secret: secret, timeout: configuration.deliveryTimeout, userAgent: "Scrollback-Push/1",
                    httpClient: client),
                withholdContent: configuration.withholdPushContent, evenOnline: configuration.pushEvenOnline,
                store: store))
    }
    // The client first: a service group stops its services in reverse, so
    // the workers stop before the client they post with.
    return [HTTPClientService(httpClient: client)]
        + destinations.map {
            OutboxWorker(store: store, destination: $0, options: configuration, metrics: metrics?.outbox, logger: logger)
        }
}
