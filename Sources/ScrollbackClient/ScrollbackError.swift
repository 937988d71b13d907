import Foundation
import ScrollbackModels

/// Everything that can go wrong in a call, as one type. A domain "no" that is
/// a normal outcome (a send that had been stored before) is not an error: it
/// is part of the call's result.
public enum ScrollbackError: Error, Sendable, Equatable, LocalizedError {
    /// The token is missing, malformed, expired or wrongly signed (401), or the
    /// token provider failed.
    case unauthorized(message: String)
    /// A member who may not do this (403 `forbidden`, see `MemberRole.may`),
    /// or adding a banned user (`member_banned`).
    case forbidden(code: APIErrorCode, message: String)
    /// No such conversation (or not a member), member or message (404).
    case notFound(code: APIErrorCode, message: String)
    /// An idempotency conflict or a deleted message (409).
    case conflict(code: APIErrorCode, message: String)
    /// The request was refused for what it carried (400, 413, 422).
    case invalidInput(code: APIErrorCode, message: String)
    /// Too many requests (429 `rate_limited`: retried by the kit), or slow
    /// mode (`slow_mode`: not retried, so that a screen can say how long to
    /// wait); retry after the given seconds.
    case rateLimited(code: APIErrorCode, retryAfter: Double?, message: String)
    /// The service or its database is unavailable (503): `service_unavailable`
    /// (nothing was stored) or `outcome_unknown` (a write may have been
    /// stored: retrying a send with its `client_id` settles it).
    case unavailable(code: APIErrorCode, retryAfter: Double?, message: String)
    /// Any other answer the server gave (a 500, an unexpected status).
    case server(status: Int, code: APIErrorCode?, message: String)
    /// The request did not get an answer: no connection, a cut connection, a timeout.
    case transport(message: String)
    /// The answer could not be read as the expected type.
    case undecodable(message: String)
    /// The caller cancelled the call (its task was cancelled): an upload
    /// stops between two pieces of its bytes.
    case cancelled

    public var errorDescription: String? {
        switch self {
        case .unauthorized(let message), .forbidden(_, let message), .notFound(_, let message),
            .conflict(_, let message), .invalidInput(_, let message), .rateLimited(_, _, let message),
            .unavailable(_, _, let message), .server(_, _, let message), .transport(let message),
            .undecodable(let message):
            message
        case .cancelled: "The call was cancelled."
        }
    }

    /// The server's code, when it sent one.
    public var code: APIErrorCode? {
        switch self {
        case .unauthorized: .unauthorized
        case .forbidden(let code, _), .notFound(let code, _), .conflict(let code, _), .invalidInput(let code, _),
            .rateLimited(let code, _, _), .unavailable(let code, _, _):
            code
        case .server(_, let code, _): code
        case .transport, .undecodable, .cancelled: nil
        }
    }

    /// Whether the same request may simply be sent again: nothing was
    /// refused for what it is, the answer was missing or said "later".
    public var isRetryable: Bool {
        switch self {
        case .transport, .unavailable: true
        case .rateLimited(let code, _, _): code != .slowMode
        case .server(let status, _, _): status == 502 || status == 504
        default: false
        }
    }

    /// The error of an HTTP answer that is not a success.
    init(status: Int, body: Data, retryAfter: String?) {
        let detail = try? ScrollbackJSON.decoder().decode(APIErrorBody.self, from: body).error
        let message = detail?.message ?? "The server answered \(status)."
        let code = detail?.code
        let delay = retryAfter.flatMap(Double.init)
        switch status {
        case 401: self = .unauthorized(message: message)
        case 403: self = .forbidden(code: code ?? .forbidden, message: message)
        case 404: self = .notFound(code: code ?? .notFound, message: message)
        case 409: self = .conflict(code: code ?? .idempotencyConflict, message: message)
        case 400, 413, 422: self = .invalidInput(code: code ?? .badRequest, message: message)
        case 429: self = .rateLimited(code: code ?? .rateLimited, retryAfter: delay, message: message)
        case 503: self = .unavailable(code: code ?? .serviceUnavailable, retryAfter: delay, message: message)
        default: self = .server(status: status, code: code, message: message)
        }
    }
}
