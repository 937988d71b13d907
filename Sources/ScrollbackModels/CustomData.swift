import Foundation

/// A JSON value of any shape, as custom data carries it: numbers are whole
/// (64-bit) where they have no fraction or exponent that leaves the
/// integers, doubles otherwise.
public indirect enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// How deep the value nests: 0 for a scalar, 1 for an object or array
    /// of scalars, one more for each level inside.
    public var depth: Int {
        switch self {
        case .array(let elements): 1 + (elements.map(\.depth).max() ?? 0)
        case .object(let members): 1 + (members.values.map(\.depth).max() ?? 0)
        default: 0
        }
    }
}

extension JSONValue: JSONWritable {
    /// Keys in the order of their UTF-8 bytes, as `ScrollbackJSON.encoder()`
    /// sorts them.
    public func write(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.null()
        case .bool(let value): writer.bool(value)
        case .integer(let value): writer.number(value)
        case .number(let value): writer.number(value)
        case .string(let value): writer.string(value)
        case .array(let elements): writer.array(elements)
        case .object(let members):
            writer.beginObject()
            let sorted = members.sorted { Array($0.key.utf8).lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { writer.raw(UInt8(ascii: ",")) }
                writer.string(member.key)
                writer.raw(UInt8(ascii: ":"))
                member.value.write(to: &writer)
            }
            writer.endObject()
        }
    }
}

/// Why a value is not custom data: each names the limit it passed.
public enum CustomDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Custom data is a JSON object, not an array, a string or a number.
    case notAnObject
    /// Its JSON takes more than ``APILimits/maxCustomDataBytes`` bytes.
    case tooLarge(bytes: Int)
    /// It nests deeper than ``APILimits/maxCustomDataDepth``.
    case tooDeep(depth: Int)
    /// A key longer than ``APILimits/maxCustomDataKeyLength`` code points.
    case keyTooLong(length: Int)
    /// A string or key is not valid UTF-8 text (a lone surrogate escape),
    /// or holds U+0000, which the database cannot store.
    case invalidText

    public var description: String {
        switch self {
        case .notAnObject:
            "Field `data` must be a JSON object (or null for none)."
        case .tooLarge(let bytes):
            "Field `data` must take at most \(APILimits.maxCustomDataBytes) bytes of JSON (it takes \(bytes))."
        case .tooDeep(let depth):
            "Field `data` must nest at most \(APILimits.maxCustomDataDepth) levels deep (it nests \(depth))."
        case .keyTooLong(let length):
            "The keys of field `data` must be at most \(APILimits.maxCustomDataKeyLength) characters (one has \(length))."
        case .invalidText:
            "The strings and keys of field `data` must be valid UTF-8 without U+0000."
        }
    }
}

/// An app's own data on a message, a conversation or a member: a JSON
/// object of at most ``APILimits/maxCustomDataBytes`` bytes, keys of at
/// most ``APILimits/maxCustomDataKeyLength`` code points, nesting at most
/// ``APILimits/maxCustomDataDepth`` deep. The server stores and returns it
/// and never reads it.
///
/// Every value of this type passed the rule (`init(_:)` is its one home):
/// decoding checks it, so a request that carries bad data is refused
/// before anything is stored, and a client checks its input before sending.
public struct CustomData: Sendable, Hashable, Codable {
    /// The object's members.
    public let fields: [String: JSONValue]

    /// The object, when it keeps to the limits.
    public init(_ fields: [String: JSONValue]) throws(CustomDataError) {
        for key in Self.keys(of: .object(fields)) {
            guard !key.unicodeScalars.contains("\u{0}") else { throw .invalidText }
            let length = key.unicodeScalars.count
            guard length <= APILimits.maxCustomDataKeyLength else { throw .keyTooLong(length: length) }
        }
        guard !Self.holdsNUL(.object(fields)) else { throw .invalidText }
        let depth = JSONValue.object(fields).depth
        guard depth <= APILimits.maxCustomDataDepth else { throw .tooDeep(depth: depth) }
        self.fields = fields.mapValues(Self.normalized)
        let bytes = jsonBytes.count
        guard bytes <= APILimits.maxCustomDataBytes else { throw .tooLarge(bytes: bytes) }
    }

    /// Any JSON value that is an object within the limits.
    public init(validating value: JSONValue) throws(CustomDataError) {
        guard case .object(let fields) = value else { throw .notAnObject }
        try self.init(fields)
    }

    /// JSON text (UTF-8) of an object within the limits.
    public init(json: some DataProtocol) throws {
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(json))
        } catch {
            throw CustomDataError.invalidText
        }
        try self.init(validating: value)
    }

    /// An app's own value, encoded as the wire encodes (it must encode as
    /// an object within the limits).
    public init(encoding value: some Encodable) throws {
        try self.init(json: ScrollbackJSON.encoder().encode(value))
    }

    /// The app's own type, decoded from the data.
    public func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try ScrollbackJSON.decoder().decode(type, from: Data(jsonBytes))
    }

    /// The JSON text, keys sorted: what the server stores and answers.
    public var json: String { String(decoding: jsonBytes, as: UTF8.self) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let value: JSONValue
        do {
            value = try container.decode(JSONValue.self)
        } catch is DecodingError {
            throw CustomDataError.invalidText
        }
        try self.init(validating: value)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(fields)
    }

    /// A whole number written as a double (`2.0`, `1e3`) is the integer
    /// it reads back as, so a value equals itself after a round trip.
    private static func normalized(_ value: JSONValue) -> JSONValue {
        switch value {
        case .number(let number) where number.rounded() == number && abs(number) < 9.2e18:
            .integer(Int64(number))
        case .array(let elements): .array(elements.map(normalized))
        case .object(let members): .object(members.mapValues(normalized))
        default: value
        }
    }

    private static func keys(of value: JSONValue) -> [String] {
        switch value {
        case .object(let members): Array(members.keys) + members.values.flatMap(keys(of:))
        case .array(let elements): elements.flatMap(keys(of:))
        default: []
        }
    }

    private static func holdsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): text.utf8.contains(0)
        case .object(let members): members.values.contains(where: holdsNUL)
        case .array(let elements): elements.contains(where: holdsNUL)
        default: false
        }
    }
}

extension CustomData: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        JSONValue.object(fields).write(to: &writer)
    }
}

/// An app-defined kind of message (`order_status`, `poll.v2`), for clients
/// to render their own way: 1 to ``APILimits/maxMessageTypeLength`` of
/// a-z 0-9 `_` `.` `-`, starting with a letter. The server stores and
/// returns it and never reads it.
public enum MessageType {
    /// Whether `name` is a message type.
    public static func isValid(_ name: String) -> Bool {
        let bytes = name.utf8
        guard (1...APILimits.maxMessageTypeLength).contains(bytes.count), let first = bytes.first,
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first)
        else { return false }
        return bytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
        }
    }
}
