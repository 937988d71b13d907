import Foundation
import Hummingbird
import NIOCore
import ScrollbackModels

/// Reading and decoding request bodies at the edge.
enum RequestBody {
    static let decoder = ScrollbackJSON.decoder()

    /// The whole body, of at most `limit` bytes (413 past it).
    static func bytes(of request: Request, context: ScrollbackRequestContext, limit: Int) async throws -> ByteBuffer {
        var request = request
        if let declared = request.headers[.contentLength], let length = Int(declared), length > limit {
            context.refuseRestOfRequest()
            throw APIError.payloadTooLarge(limit: limit)
        }
        do {
            return try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            // A chunked body that passed the limit: the rest is never read.
            context.refuseRestOfRequest()
            throw APIError.payloadTooLarge(limit: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            context.refuseRestOfRequest()
            throw APIError.payloadTooLarge(limit: limit)
        }
    }

    /// The body as `type`; an empty body is refused, or is `empty` when one is given.
    static func decode<T: Decodable>(
        _ type: T.Type, from request: Request, context: ScrollbackRequestContext, orEmpty empty: T? = nil
    ) async throws -> T {
        let buffer = try await bytes(of: request, context: context, limit: context.maxBodyBytes)
        guard buffer.readableBytes > 0 else {
            if let empty { return empty }
            throw APIError.badRequest(.invalidJSON, "The request needs a JSON object body.")
        }
        do {
            return try decoder.decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as CustomDataError {
            throw APIError.unprocessable(.invalidData, error.description)
        } catch let error as DecodingError {
            throw APIError.badRequest(ScrollbackJSON.errorCode(of: error), ScrollbackJSON.explain(error))
        } catch {
            throw APIError.badRequest(.invalidJSON, "The request body is not valid JSON.")
        }
    }
}
