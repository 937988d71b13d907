import Foundation
import Hummingbird
import NIOCore
import ScrollbackModels

/// Reading and decoding request bodies at the edge.
enum RequestBody {
    /// Larger bodies get 413.
    static let limit = APILimits.maxRequestBodyBytes
    static let decoder = ScrollbackJSON.decoder()

    static func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw APIError.payloadTooLarge(limit: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw APIError.payloadTooLarge(limit: limit)
        }
        guard buffer.readableBytes > 0 else {
            throw APIError.badRequest(.invalidJSON, "The request needs a JSON object body.")
        }
        do {
            return try decoder.decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw APIError.badRequest(Self.code(of: error), Self.explain(error))
        } catch {
            throw APIError.badRequest(.invalidJSON, "The request body is not valid JSON.")
        }
    }

    /// `invalid_json` when the body as a whole is wrong, `invalid_field` when one field is.
    static func code(of error: DecodingError) -> APIErrorCode {
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

    /// A sentence naming the field (snake_case, as sent) and what it must be.
    static func explain(_ error: DecodingError) -> String {
        func field(_ path: [any CodingKey]) -> String {
            let names = path.map { key in key.intValue.map { "[\($0)]" } ?? key.stringValue.snakeCased }
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

extension String {
    /// `clientId` -> `client_id`, the spelling on the wire.
    var snakeCased: String {
        var result = ""
        for character in self {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        return result
    }
}
