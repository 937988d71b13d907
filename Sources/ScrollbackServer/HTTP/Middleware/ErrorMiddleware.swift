import Foundation
import HTTPTypes
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Turns every error into the JSON error shape: ours, the store's, and those
/// Hummingbird raises itself (unknown route, body too large). Anything else is
/// logged and becomes a 500 that reveals nothing.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The body limit a 413 of Hummingbird's own names.
    var maxBodyBytes = APILimits.maxRequestBodyBytes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as StoreError {
            return try APIError(error).response(from: request, context: context)
        } catch let error as HTTPError {
            return try Self.translate(error, maxBodyBytes: maxBodyBytes).response(from: request, context: context)
        } catch {
            context.logger.error("unexpected error", metadata: ["error": "\(String(reflecting: error))"])
            return try APIError(
                .internalServerError, .internalError, "Something went wrong on our side; the request was not completed."
            ).response(from: request, context: context)
        }
    }

    static func translate(_ error: HTTPError, maxBodyBytes: Int) -> APIError {
        switch error.status {
        case .notFound:
            APIError(.notFound, .notFound, "There is no such route; see /openapi.yaml for the API.")
        case .methodNotAllowed:
            APIError(.methodNotAllowed, .methodNotAllowed, "This route does not accept that method.")
        case .contentTooLarge:
            .payloadTooLarge(limit: maxBodyBytes)
        case let status where (400..<500).contains(status.code):
            APIError(status, .badRequest, error.body ?? status.reasonPhrase)
        default:
            APIError(.internalServerError, .internalError, "Something went wrong on our side.")
        }
    }
}
