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
        } catch {
            guard let answer = APIError(answering: error, maxBodyBytes: maxBodyBytes) else {
                context.logger.error("unexpected error", metadata: ["error": "\(LoggedError.describe(error))"])
                return try APIError.unexpected.response(from: request, context: context)
            }
            return try answer.response(from: request, context: context)
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

extension APIError {
    /// What a client is told of `error`: ours, the store's, and those
    /// Hummingbird raises itself; nil for anything else (a 500, `unexpected`).
    /// The one translation, for the answer and for the audit log's status.
    init?(answering error: any Error, maxBodyBytes: Int = APILimits.maxRequestBodyBytes) {
        switch error {
        case let error as APIError: self = error
        case let error as StoreError: self.init(error)
        case let error as HTTPError: self = ErrorMiddleware<ScrollbackRequestContext>.translate(error, maxBodyBytes: maxBodyBytes)
        default: return nil
        }
    }

    /// A 500 that reveals nothing.
    static let unexpected = APIError(
        .internalServerError, .internalError, "Something went wrong on our side; the request was not completed.")
}
