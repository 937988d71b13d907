import Foundation
import Hummingbird
import NIOCore
import ScrollbackModels

/// Reading and decoding request bodies at the edge.
enum RequestBody {
    static let decoder = ScrollbackJSON.decoder()

    /// The body as `type`; an empty body is refused, or is `empty` when one is given.
    static func decode<T: Decodable>(
        _ type: T.Type, from request: Request, context: ScrollbackRequestContext, orEmpty empty: T? = nil
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
