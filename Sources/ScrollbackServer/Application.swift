import Hummingbird
import Logging
import ScrollbackStore

/// What the HTTP server needs to know.
public struct ServerConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var jwtSecret: String

    public init(host: String = "127.0.0.1", port: Int = 8080, jwtSecret: String) {
        self.host = host
        self.port = port
        self.jwtSecret = jwtSecret
    }
}

/// The routes of the service, in one place.
public func buildRouter(store: ScrollbackStore, tokens: TokenAuthority) -> Router<ScrollbackRequestContext> {
    let router = Router(context: ScrollbackRequestContext.self, options: .autoGenerateHeadEndpoints)
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

/// The application: the HTTP server and the database pool, run together
/// under one service group with graceful shutdown.
/// With `migrateOnStart`, pending migrations are applied before the server
/// accepts its first request. `runsDatabaseClient` is false only when the
/// caller already runs the store's pool (the tests share one per schema).
public func buildApplication(
    configuration: ServerConfiguration, store: ScrollbackStore, logger: Logger, migrateOnStart: Bool = true,
    runsDatabaseClient: Bool = true,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> Application<RouterResponder<ScrollbackRequestContext>> {
    let tokens = try await TokenAuthority(secret: configuration.jwtSecret)
    var app = Application(
        router: buildRouter(store: store, tokens: tokens),
        // A connection that sends nothing for a minute, between requests or
        // in the middle of one, is closed rather than held forever.
        server: .http1(configuration: .init(idleTimeout: .seconds(60))),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "scrollback"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger)
    if runsDatabaseClient {
        app.addServices(store.client)
    }
    if migrateOnStart {
        app.beforeServerStarts { try await store.migrate() }
    }
    return app
}
