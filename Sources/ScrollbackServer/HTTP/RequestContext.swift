import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels

/// Per-request state: who is calling, once the bearer token checked out.
public struct ScrollbackRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// Set by `AuthMiddleware` on the authenticated routes.
    public var userID: UserID?
    /// The same user for the request log, which runs outside the
    /// authenticated group: shared by every copy of the context.
    let caller = NIOLockedValueBox<UserID?>(nil)
    /// The server token's name on a call made with one (`OperatorMiddleware`,
    /// or `AuthMiddleware` with `On-Behalf-Of`).
    public var operatorName: String?
    /// What a route adds to the audit log's entry of a server call.
    let auditDetail = NIOLockedValueBox<[String: String]>([:])

    /// The request's connection.
    let channel: any Channel
    /// The largest body a route reads (`SCROLLBACK_MAX_BODY_BYTES`), set by
    /// `BodyLimitMiddleware`.
    var maxBodyBytes = APILimits.maxRequestBodyBytes

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.userID = nil
        self.channel = source.channel
    }

    /// Stops reading the connection: the answer being made is still
    /// written, then the connection closes instead of reading (and
    /// discarding) the rest of a body too large to take.
    func refuseRestOfRequest() {
        channel.close(mode: .input, promise: nil)
    }

    /// A path parameter, percent-decoded (`bob%40example.com` is
    /// `bob@example.com`, as a browser's `encodeURIComponent` writes it).
    func pathParameter(_ name: String) -> String? {
        guard let raw = parameters.get(name) else { return nil }
        return raw.removingPercentEncoding ?? raw
    }

    /// The caller on routes behind `AuthMiddleware`.
    func requireUser() throws -> UserID {
        guard let userID else { throw APIError.unauthorized("Send `Authorization: Bearer <token>`.") }
        return userID
    }
}
