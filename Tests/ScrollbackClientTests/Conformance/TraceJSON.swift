import Foundation
import ScrollbackModels

/// A JSON value, for traces: written with sorted keys, compared as values.
enum TraceJSON: Codable, Equatable, Sendable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([TraceJSON])
    case object([String: TraceJSON])

    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .number(Double(value)) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(arrayLiteral elements: TraceJSON...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, TraceJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    init(nilLiteral: ()) { self = .null }

    init(_ value: Int64) { self = .number(Double(value)) }
    init(_ value: Int) { self = .number(Double(value)) }
    init(_ value: Double) { self = .number(value) }
    init(_ value: String?) { self = value.map(TraceJSON.string) ?? .null }
    init(_ value: Int64?) { self = value.map { .number(Double($0)) } ?? .null }
    init(_ values: [TraceJSON]) { self = .array(values) }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([TraceJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: TraceJSON].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 { try container.encode(Int64(value)) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// A wire type as the API writes it.
    static func wire(_ value: some Encodable) -> TraceJSON {
        // Wire types always encode; a failure is a bug in the trace itself.
        let data = try! ScrollbackJSON.encoder().encode(value)
        return try! JSONDecoder().decode(TraceJSON.self, from: data)
    }

    /// The value as a wire type.
    func wire<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try ScrollbackJSON.decoder().decode(type, from: JSONEncoder().encode(self))
    }

    subscript(key: String) -> TraceJSON {
        if case .object(let object) = self { return object[key] ?? .null }
        return .null
    }

    var isNull: Bool { self == .null }
    var string: String? { if case .string(let value) = self { value } else { nil } }
    var bool: Bool? { if case .bool(let value) = self { value } else { nil } }
    var int: Int? { if case .number(let value) = self { Int(value) } else { nil } }
    var int64: Int64? { if case .number(let value) = self { Int64(value) } else { nil } }
    var double: Double? { if case .number(let value) = self { value } else { nil } }
    var array: [TraceJSON] { if case .array(let value) = self { value } else { [] } }
    var object: [String: TraceJSON] { if case .object(let value) = self { value } else { [:] } }
    var type: String? { self["type"].string }

    /// Written as the repository keeps it: two-space indents, sorted keys.
    func written() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try! encoder.encode(self), as: UTF8.self) + "\n"
    }

    /// A field the value must have.
    func required(_ key: String) throws -> TraceJSON {
        let value = self[key]
        guard !value.isNull else { throw TraceError.missing(key, in: self) }
        return value
    }
}

struct TraceError: Error, CustomStringConvertible {
    var description: String

    static func missing(_ key: String, in value: TraceJSON) -> TraceError {
        TraceError(description: "no \(key) in \(value.written())")
    }

    static func unknown(_ what: String, _ value: TraceJSON) -> TraceError {
        TraceError(description: "unknown \(what): \(value.written())")
    }
}
