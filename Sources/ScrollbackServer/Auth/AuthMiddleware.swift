import HTTPTypes
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Requires a valid bearer token, and records the user on first sight (the
/// integrating app owns identities, as with hosted chat services). A server
/// token acts for the user its `On-Behalf-Of` header names, with that
/// user's rights, and the call is audited. The header carries the id
/// percent-encoded as UTF-8 (a header value cannot carry every character a
/// user id may hold, and HTTP drops white space around it); an id without
/// `%` is itself.
struct AuthMiddleware: RouterMiddleware {
    let tokens: TokenAuthority
    let store: ScrollbackStore

    static let onBehalfOf = HTTPField.Name("On-Behalf-Of")!

    func handle(
        _ request: Request, context: ScrollbackRequestContext,
        next: (Request, ScrollbackRequestContext) async throws -> Response
    ) async throws -> Response {
        let caller = try await tokens.caller(fromAuthorization: request.headers[.authorization])
        var context = context
        let user: UserID
        var profile = TokenProfile()
        if caller.isServer {
            guard let named = request.headers[Self.onBehalfOf]?.removingPercentEncoding,
                let valid = UserID(validating: named)
            else {
                throw APIError(
                    .badRequest, .onBehalfOfRequired,
                    "A server token calls a user route on behalf of a user: send `On-Behalf-Of: <user id>`, "
                        + "percent-encoded as UTF-8 (\(UserID.rule)).")
            }
            user = valid
            context.operatorName = caller.user.rawValue
        } else {
            user = caller.user
            profile = caller.profile
        }
        try await store.ensureUser(user, token: profile)
        // Until the replicas hold what this call wrote, the user's reads go to the primary.
        defer { if ![.get, .head].contains(request.method) { store.noteWrite(by: user) } }
        context.userID = user
        context.caller.withLockedValue { $0 = user }
        context.logger[metadataKey: "user"] = "\(user)"
        guard let name = context.operatorName else { return try await next(request, context) }
        context.logger[metadataKey: "operator"] = "\(name)"
        return try await AuditLog(store: store).record(name, onBehalfOf: user, request, context: context, next: next)
    }
}

/// The admin routes (`/v1/admin/...`): a server token only (a user's is
/// 403), every call audited.
struct OperatorMiddleware: RouterMiddleware {
    let tokens: TokenAuthority
    let store: ScrollbackStore

    func handle(
        _ request: Request, context: ScrollbackRequestContext,
        next: (Request, ScrollbackRequestContext) async throws -> Response
    ) async throws -> Response {
        let caller = try await tokens.caller(fromAuthorization: request.headers[.authorization])
        guard caller.isServer else {
            throw APIError(
                .forbidden, .serverTokenRequired,
                "The admin routes take a server token (`scrollback token --server`), not a user's.")
        }
        var context = context
        context.operatorName = caller.user.rawValue
        context.logger[metadataKey: "operator"] = "\(caller.user)"
        return try await AuditLog(store: store).record(caller.user.rawValue, onBehalfOf: nil, request, context: context, next: next)
    }
}

/// Records a server call in the audit log before it acts (a call that
/// cannot be recorded is not made: 503), then how it ended.
struct AuditLog {
    let store: ScrollbackStore

    /// The longest path (with its query) an entry keeps.
    static let maxPathLength = 1000

    func record(
        _ actor: String, onBehalfOf user: UserID?, _ request: Request, context: ScrollbackRequestContext,
        next: (Request, ScrollbackRequestContext) async throws -> Response
    ) async throws -> Response {
        let entry = try await store.beginAudit(
            actor: actor, onBehalfOf: user, method: request.method.rawValue,
            path: String(request.uri.description.prefix(Self.maxPathLength)))
        let status: Int
        let response: Response
        do {
            response = try await next(request, context)
            status = response.status.code
        } catch {
            // The status the client is answered with (ErrorMiddleware's translation).
            await finish(entry, status: (APIError(answering: error) ?? .unexpected).status.code, context: context)
            throw error
        }
        await finish(entry, status: status, context: context)
        return response
    }

    /// The call already acted: a failure to record its end is logged, and
    /// the entry keeps a NULL status.
    private func finish(_ entry: Int64, status: Int, context: ScrollbackRequestContext) async {
        do {
            try await store.finishAudit(entry, status: status, detail: context.auditDetail.withLockedValue { $0 })
        } catch {
            context.logger.error("could not record the end of an audited call", metadata: ["audit_entry": "\(entry)", "error": "\(error)"])
        }
    }
}
