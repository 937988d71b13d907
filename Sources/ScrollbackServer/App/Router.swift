import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import ScrollbackModels
import Logging
import ScrollbackStore
import ServiceLifecycle

/// The routes of the service, in one place. With `metrics`, every request
/// is counted and timed there.
func buildRouter(
    store: ScrollbackStore, tokens: TokenAuthority, live: LiveDelivery, commands: MemberCommands? = nil,
    uploads: UploadCommands? = nil, metrics: ScrollbackMetrics? = nil, demo: Bool = false,
    maxBodyBytes: Int = APILimits.maxRequestBodyBytes
) -> Router<ScrollbackRequestContext> {
    let commands = commands ?? MemberCommands(store: store, limiter: RateLimiter(limits: RateLimits()))
    let limiter = commands.limiter
    let uploads = uploads ?? UploadCommands(store: store, limiter: limiter, options: UploadOptions())
    let router = Router(context: ScrollbackRequestContext.self, options: .autoGenerateHeadEndpoints)
    router.add(middleware: RequestLogMiddleware(metrics: metrics?.http))
    router.add(middleware: ErrorMiddleware(maxBodyBytes: maxBodyBytes))
    router.add(middleware: BodyLimitMiddleware(limit: maxBodyBytes))
    HealthController(store: store, live: live).addRoutes(to: router)
    LayoutController().addRoutes(to: router)  // public: outside the authenticated group
    let v1 = router.group("v1").add(middleware: AuthMiddleware(tokens: tokens, store: store))
    ConversationController(store: store, limiter: limiter, commands: commands).addRoutes(to: v1)
    MessageController(store: store, commands: commands, blockLists: live.blockLists).addRoutes(to: v1)
    MessageChangeController(store: store, blockLists: live.blockLists).addRoutes(to: v1)
    ThreadController(store: store, limiter: limiter, blockLists: live.blockLists).addRoutes(to: v1)
    SafetyController(store: store, limiter: limiter, blockLists: live.blockLists).addRoutes(to: v1)
    SearchController(store: store).addRoutes(to: v1)
    MentionController(store: store).addRoutes(to: v1)
    UploadController(uploads: uploads).addRoutes(to: v1)
    DeviceController(store: store).addRoutes(to: v1)
    MuteController(store: store).addRoutes(to: v1)
    PresenceController(store: store).addRoutes(to: v1)
    UserController(store: store).addRoutes(to: v1)
    ImageController(store: store).addRoutes(to: v1)
    // The operator's routes: server tokens only, every call audited.
    let admin = router.group("v1/admin").add(middleware: OperatorMiddleware(tokens: tokens, store: store))
    AdminController(store: store, revocations: tokens.revocations).addRoutes(to: admin)
    UserController(store: store).addAdminRoutes(to: admin)
    ImageController(store: store).addAdminRoutes(to: admin)
    StreamController.addPlainRoute(to: router)
    if demo { DemoController(tokens: tokens).addRoutes(to: router) }
    router.add(middleware: MethodNotAllowedMiddleware(routes: router.routes.map { ($0.method, $0.path.description) }))
    return router
}
