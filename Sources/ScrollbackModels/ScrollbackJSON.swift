import Foundation

/// The JSON conventions of the wire format, shared by server and clients:
/// snake_case keys (spelled out in every wire type's `CodingKeys`, so no key
/// is converted at run time), timestamps in RFC 3339 UTC with milliseconds.
public enum ScrollbackJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatTimestamp(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "expected an RFC 3339 timestamp, got \(text)")
            }
            return date
        }
        return decoder
    }

    /// The times the API accepts and stores: years 1 to 9999, what RFC 3339
    /// can write and well inside what PostgreSQL and its driver can hold.
    public static let timestampRange =
        Date(timeIntervalSince1970: -62_135_596_800)..<Date(timeIntervalSince1970: 253_402_300_800)

    /// `2026-11-22T05:36:39.123Z`
    ///
    /// Milliseconds are truncated, so formatting never rounds up into the
    /// next second. Written by arithmetic (`JSONWriter`), not by a date
    /// formatter: the tests hold it to `Date.ISO8601FormatStyle`.
    public static func formatTimestamp(_ date: Date) -> String {
        var writer = JSONWriter(capacity: 24)
        writer.timestampText(date)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    /// Accepts RFC 3339 with or without fractional seconds, any offset.
    public static func parseTimestamp(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) {
            return date
        }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
