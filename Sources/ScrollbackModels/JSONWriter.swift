import Foundation

/// A wire type that writes its own JSON: byte for byte what
/// `ScrollbackJSON.encoder()` produces for it (sorted snake_case keys, RFC
/// 3339 timestamps with milliseconds, slashes unescaped), without the
/// encoder's per-key work (key conversion, sorting, boxing). The server
/// writes its hot responses this way; tests hold both to the golden fixtures
/// and to each other on random values.
public protocol JSONWritable: Encodable {
    /// Appends this value's JSON to `writer`.
    func write(to writer: inout JSONWriter)

    /// About how many bytes the JSON takes: what a writer reserves for it.
    var jsonByteCountHint: Int { get }
}

extension JSONWritable {
    public var jsonByteCountHint: Int { 512 }

    /// The value's JSON.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }
}

/// Appends JSON to a byte array. Keys are written in the order given: each
/// type gives them sorted, as the encoder's `.sortedKeys` does.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8]
    /// False once a value JSON cannot carry was given (an infinite or NaN
    /// number, written as `null`): the bytes are not the value then.
    public private(set) var isFaithful = true

    public init(capacity: Int = 512) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    // MARK: Structure

    public mutating func beginObject() { bytes.append(UInt8(ascii: "{")) }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")) }

    /// `"name":`, after a comma unless it is the object's first key.
    public mutating func key(_ name: StaticString) {
        separate(after: UInt8(ascii: "{"))
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func array<Element: JSONWritable>(_ elements: [Element]) {
        array(elements) { writer, element in element.write(to: &writer) }
    }

    public mutating func array(_ elements: [String]) {
        array(elements) { writer, element in writer.string(element) }
    }

    public mutating func array(_ elements: [Double]) {
        array(elements) { writer, element in writer.number(element) }
    }

    @inline(__always)
    private mutating func array<Element>(_ elements: [Element], _ write: (inout JSONWriter, Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for element in elements {
            separate(after: UInt8(ascii: "["))
            write(&self, element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Appends bytes that already are JSON (see `EncodedPage`).
    mutating func raw(_ json: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: json)
    }

    mutating func raw(_ byte: UInt8) {
        bytes.append(byte)
    }

    /// What was written is not the value (see `isFaithful`).
    mutating func markUnfaithful() {
        isFaithful = false
    }

    private mutating func separate(after opening: UInt8) {
        if bytes.last != opening { bytes.append(UInt8(ascii: ",")) }
    }

    // MARK: Values

    public mutating func null() { bytes.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C]) }

    public mutating func bool(_ value: Bool) {
        if value {
            bytes.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
        } else {
            bytes.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
        }
    }

    public mutating func number(_ value: Int64) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            digits(value.magnitude, minimumCount: 1)
        } else {
            digits(UInt64(value), minimumCount: 1)
        }
    }

    public mutating func number(_ value: Int) { number(Int64(value)) }

    /// As `JSONEncoder` writes a finite Double: its shortest round-trip form,
    /// without a trailing `.0` (`38`, `0.1`, `1e+20`).
    public mutating func number(_ value: Double) {
        guard value.isFinite else {
            isFaithful = false
            null()
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\b \t \n
    /// \f \r` or `\u00xx`, everything else (slashes and non-ASCII included)
    /// as it is.
    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var start = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                escape(byte)
                start = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<utf8.count]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func string(_ value: String?) {
        if let value { string(value) } else { null() }
    }

    public mutating func uuid(_ value: UUID) {
        // Lowercase, as PostgreSQL and most clients spell UUIDs.
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        bytes.append(UInt8(ascii: "\""))
        withUnsafeBytes(of: value.uuid) { raw in
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `"2026-11-22T05:36:39.123Z"`, as `ScrollbackJSON.formatTimestamp`.
    public mutating func timestamp(_ date: Date) {
        bytes.append(UInt8(ascii: "\""))
        timestampText(date)
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func timestamp(_ date: Date?) {
        if let date { timestamp(date) } else { null() }
    }

    private mutating func escape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        default:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            bytes.append(hex[Int(byte >> 4)])
            bytes.append(hex[Int(byte & 0x0F)])
        }
    }

    /// The decimal digits of `value`, zero-padded to `minimumCount`.
    mutating func digits(_ value: UInt64, minimumCount: Int) {
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: enough for 20 digits
        withUnsafeMutableBytes(of: &buffer) { raw in
            var remaining = value
            var position = raw.count
            repeat {
                position -= 1
                raw[position] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            } while remaining > 0 || raw.count - position < minimumCount
            bytes.append(contentsOf: raw[position...])
        }
    }

    /// `2026-11-22T05:36:39.123Z` (UTC, milliseconds truncated): civil-date
    /// arithmetic on the milliseconds since 1970, with no calendar or
    /// formatter behind it. Defined for the API's timestamp range (years 1
    /// to 9999).
    mutating func timestampText(_ date: Date) {
        // Truncated to the millisecond; but a time within half a microsecond
        // of one is that millisecond: a parsed `.123` lands a hair off it in
        // floating point, and is written back as `.123`, not `.122`.
        let scaled = date.timeIntervalSince1970 * 1000
        let nearest = scaled.rounded()
        let millis = Int64(abs(scaled - nearest) < 0.0005 ? nearest : scaled.rounded(.down))
        let (days, dayMillis) = Self.floorDivision(millis, 86_400_000)
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        digits(UInt64(max(year, 0)), minimumCount: 4)
        bytes.append(UInt8(ascii: "-"))
        digits(UInt64(month), minimumCount: 2)
        bytes.append(UInt8(ascii: "-"))
        digits(UInt64(day), minimumCount: 2)
        bytes.append(UInt8(ascii: "T"))
        digits(UInt64(dayMillis / 3_600_000), minimumCount: 2)
        bytes.append(UInt8(ascii: ":"))
        digits(UInt64(dayMillis / 60_000 % 60), minimumCount: 2)
        bytes.append(UInt8(ascii: ":"))
        digits(UInt64(dayMillis / 1000 % 60), minimumCount: 2)
        bytes.append(UInt8(ascii: "."))
        digits(UInt64(dayMillis % 1000), minimumCount: 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let quotient = a / b
        let remainder = a % b
        return remainder < 0 ? (quotient - 1, remainder + b) : (quotient, remainder)
    }
}
