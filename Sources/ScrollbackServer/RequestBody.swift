import Foundation
import Hummingbird
import NIOCore
import ScrollbackModels

/// Reading and decoding request bodies at the edge.
enum RequestBody {
    static let decoder = ScrollbackJSON.decoder()

    static func decode<T: Decodable>(
        _ type: T.Type, from request: Request, context: ScrollbackRequestContext
    ) async throws -> T {
        var request = request
        let limit = context.maxBodyBytes
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            // A chunked body that passed the limit: the rest is never read.
            context.refuseRestOfRequest()
            throw APIError.payloadTooLarge(limit: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            context.refuseRestOfRequest()
            throw APIError.payloadTooLarge(limit: limit)
        }
        guard buffer.readableBytes > 0 else {
            throw APIError.badRequest(.invalidJSON, "The request needs a JSON object body.")
        }
        do {
            return try decoder.decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest(ScrollbackJSON.errorCode(of: error), ScrollbackJSON.explain(error))
        } catch {
            throw APIError.badRequest(.invalidJSON, "The request body is not valid JSON.")
        }
    }
}

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
        if let declared = request.headers[.contentLength], let length = Int(declared), length > limit {
            context.refuseRestOfRequest()
            throw APIError.payloadTooLarge(limit: limit)
        }
        return try await next(request, context)
    }
}
