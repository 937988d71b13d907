import Hummingbird
import ScrollbackStore

/// Requires a valid bearer token, and records the user on first sight (the
/// integrating app owns identities, as with hosted chat services).
struct AuthMiddleware: RouterMiddleware {
    let tokens: TokenAuthority
    let store: ScrollbackStore

    func handle(
        _ request: Request, context: ScrollbackRequestContext,
        next: (Request, ScrollbackRequestContext) async throws -> Response
    ) async throws -> Response {
        let user = try await tokens.user(fromAuthorization: request.headers[.authorization])
        try await store.ensureUser(user)
        var context = context
        context.userID = user
        context.caller.withLockedValue { $0 = user }
        context.logger[metadataKey: "user"] = "\(user)"
        return try await next(request, context)
    }
}
