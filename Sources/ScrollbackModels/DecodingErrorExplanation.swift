import Foundation

// What a body that does not decode did wrong, in the words of the wire
// format: the server answers with these, the `scrollback layout` command
// prints them, and a client can show them.
extension ScrollbackJSON {
    /// `invalid_json` when a request body as a whole is wrong, `invalid_field`
    /// when one field is.
    public static func errorCode(of error: DecodingError) -> APIErrorCode {
        let path: [any CodingKey]
        switch error {
        case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            path = context.codingPath
        case .keyNotFound(let key, let context):
            path = context.codingPath + [key]
        @unknown default:
            path = []
        }
        return path.isEmpty ? .invalidJSON : .invalidField
    }

    /// A sentence naming the field (as sent: every wire type spells its keys
    /// in snake_case) and what it must be.
    public static func explain(_ error: DecodingError) -> String {
        func field(_ path: [any CodingKey]) -> String {
            let names = path.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue }
            return names.reduce("") { result, name in
                name.hasPrefix("[") || result.isEmpty ? result + name : result + "." + name
            }
        }
        switch error {
        case .typeMismatch(let type, let context):
            if context.codingPath.isEmpty { return "The request body must be a JSON object." }
            return "Field `\(field(context.codingPath))` must be \(describe(type))."
        case .valueNotFound(let type, let context):
            return "Field `\(field(context.codingPath))` must be \(describe(type)), not null."
        case .keyNotFound(let key, let context):
            return "Field `\(field(context.codingPath + [key]))` is required."
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return "The request body is not valid UTF-8 JSON, or a number in it does not fit its field (whole numbers where integers are expected, within 64 bits)."
            }
            return "Field `\(field(context.codingPath))` is not valid."
        @unknown default:
            return "The request body does not match what this route expects."
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is [String].Type: "an array of strings"
        case is Double.Type, is Float.Type: "a number"
        case is Int.Type, is Int64.Type: "an integer"
        case is Bool.Type: "true or false"
        case is [Double].Type: "an array of numbers"
        default: "of another type"
        }
    }
}
