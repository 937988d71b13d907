import Foundation

/// The JSON conventions of the wire format, shared by server and clients:
/// snake_case keys, timestamps in RFC 3339 UTC with milliseconds.
public enum ScrollbackJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatTimestamp(date))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
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
    public static func formatTimestamp(_ date: Date) -> String {
        // Truncate to whole milliseconds so formatting never rounds up into the next second.
        let millis = (date.timeIntervalSince1970 * 1000).rounded(.down)
        let truncated = Date(timeIntervalSince1970: millis / 1000)
        return truncated.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }

    /// Accepts RFC 3339 with or without fractional seconds, any offset.
    public static func parseTimestamp(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) {
            return date
        }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
