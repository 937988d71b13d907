/// What went wrong with an object store call. Messages name the key and the
/// store's error code at most: never a URL with its signature, a header, or
/// the text of the store's error body (S3 echoes the string it signed).
public enum ObjectStorageError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No object under that key (404 `NoSuchKey`).
    case notFound(key: String)
    /// The store refused the credentials or the signature (403:
    /// `AccessDenied`, `SignatureDoesNotMatch`, `InvalidAccessKeyId`, ...).
    /// A configuration problem, not the caller's: retrying will not help.
    case forbidden(code: String?)
    /// The store could not be reached or answered that it is unwell (a
    /// connection error, a time-out, 500, 502, 503, 504): try again later.
    case unavailable(reason: String)
    /// An answer this client does not expect (status and the store's code).
    case badResponse(status: Int, code: String?)
    /// A key this client will not send: empty, too long, or with segments a
    /// store or proxy could rewrite (`.`, `..`, empty) or control characters.
    case invalidKey(reason: String)
    /// A request this client will not sign, such as an expiry out of range.
    case invalidRequest(reason: String)
    /// Settings that do not describe a store (see ``ObjectStorageConfiguration``).
    case invalidConfiguration(reason: String)

    public var description: String {
        switch self {
        case .notFound(let key): "no object under key \(key)"
        case .forbidden(let code): "the object store refused the request (\(code ?? "403")): check its credentials"
        case .unavailable(let reason): "the object store is unavailable: \(reason)"
        case .badResponse(let status, let code): "unexpected answer from the object store: \(status) \(code ?? "")"
        case .invalidKey(let reason): "invalid object key: \(reason)"
        case .invalidRequest(let reason): "invalid object store request: \(reason)"
        case .invalidConfiguration(let reason): "invalid object storage settings: \(reason)"
        }
    }

    /// The error an answer with this status and S3 error code stands for.
    static func from(status: Int, code: String?, key: String) -> ObjectStorageError {
        switch status {
        case 404 where code == nil || code == "NoSuchKey": .notFound(key: key)
        case 401, 403: .forbidden(code: code)
        case 500, 502, 503, 504: .unavailable(reason: "status \(status)\(code.map { " \($0)" } ?? "")")
        default: .badResponse(status: status, code: code)
        }
    }

    /// The `<Code>` of an S3 XML error body, if it has one.
    static func errorCode(inBody body: String) -> String? {
        guard let open = body.range(of: "<Code>"),
            let close = body.range(of: "</Code>", range: open.upperBound..<body.endIndex)
        else { return nil }
        let code = body[open.upperBound..<close.lowerBound]
        // A code is a short identifier; anything else is not one.
        guard !code.isEmpty, code.count <= 64, code.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." }) else {
            return nil
        }
        return String(code)
    }
}
