import Hummingbird
import Logging
import ScrollbackStore
import ServiceLifecycle

/// The routes of the service, in one place.
public func buildRouter(store: ScrollbackStore, tokens: TokenAuthority) -> Router<ScrollbackRequestContext> {
    let router = Router(context: ScrollbackRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.add(middleware: RequestLogMiddleware())
    router.add(middleware: ErrorMiddleware())
    HealthController(store: store).addRoutes(to: router)
    LayoutController().addRoutes(to: router)  // public: outside the authenticated group
    let v1 = router.group("v1").add(middleware: AuthMiddleware(tokens: tokens, store: store))
    ConversationController(store: store).addRoutes(to: v1)
    MessageController(store: store).addRoutes(to: v1)
    MessageChangeController(store: store).addRoutes(to: v1)
    router.add(middleware: MethodNotAllowedMiddleware(routes: router.routes.map { ($0.method, $0.path.description) }))
    return router
}

/// The HTTP server on `store`, which the caller runs (see `runScrollback`).
/// With `migrateOnStart`, pending migrations are applied before the server
/// accepts its first request.
public func buildApplication(
    configuration: ScrollbackConfiguration, store: ScrollbackStore, logger: Logger, migrateOnStart: Bool = true,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    guard let secret = configuration.jwtSecret else {
        throw ScrollbackConfiguration.Failure("SCROLLBACK_JWT_SECRET is not set.")
    }
    let tokens = try await TokenAuthority(secret: secret)
    var app = Application(
        router: buildRouter(store: store, tokens: tokens),
        // A connection that sends nothing for a minute, between requests or
        // in the middle of one, is closed rather than held forever.
        server: .http1(configuration: .init(idleTimeout: .seconds(60))),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "scrollback"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger)
    if migrateOnStart {
        app.beforeServerStarts { try await store.migrate() }
    }
    return app
}

/// Runs the service until SIGTERM or SIGINT: the store's pool and the HTTP
/// server under one service group. On shutdown the server stops first
/// (finishing requests in flight), then the pool.
public func runScrollback(configuration: ScrollbackConfiguration, store: ScrollbackStore, logger: Logger) async throws {
    let app = try await buildApplication(configuration: configuration, store: store, logger: logger)
    let group = ServiceGroup(
        configuration: .init(
            services: [.init(service: store), .init(service: app)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
    try await group.run()
}
