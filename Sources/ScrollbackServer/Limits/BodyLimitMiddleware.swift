import Foundation
import Hummingbird
import NIOCore
import ScrollbackModels

/// Refuses a body whose declared `Content-Length` is over the limit
/// (`SCROLLBACK_MAX_BODY_BYTES`) with 413 before reading a byte of it, and
/// closes the connection after the answer rather than reading the rest
/// (which a keep-alive connection would have to). It also hands the limit
/// to the routes that read a body (``RequestBody/decode(_:from:context:)``);
/// a chunked body is cut at the same limit on every route by the
/// connection's ``SlowClientGuard``.
struct BodyLimitMiddleware: RouterMiddleware {
    typealias Context = ScrollbackRequestContext

    var limit = APILimits.maxRequestBodyBytes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.maxBodyBytes = limit
        // An upload's bytes are checked against the upload's own size.
        if UploadBodies.allows(request.method, request.uri.path) { return try await next(request, context) }
        if let declared = request.headers[.contentLength], let length = Int(declared), length > limit {
            context.refuseRestOfRequest()
            throw APIError.payloadTooLarge(limit: limit)
        }
        return try await next(request, context)
    }
}
