import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Query parameters, parsed strictly: digits only, in range, each at most once.
struct QueryParameters {
    let parameters: [String: [String]]

    init(_ request: Request) {
        var parameters: [String: [String]] = [:]
        for (key, value) in request.uri.queryParameters {
            parameters[String(key), default: []].append(String(value))
        }
        self.parameters = parameters
    }

    func single(_ name: String) throws -> String? {
        guard let values = parameters[name] else { return nil }
        guard values.count == 1 else {
            throw APIError.badRequest("invalid_parameter", "Give `\(name)` at most once.")
        }
        return values[0]
    }

    /// A whole number in `range`, written with digits only (no sign, no exponent).
    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = try single(name) else { return nil }
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (48...57).contains($0) }),
            let value = Int64(text), range.contains(value)
        else {
            throw APIError.badRequest(
                "invalid_parameter",
                "`\(name)` must be a whole number from \(range.lowerBound) to \(range.upperBound) (got \"\(text.prefix(40))\").")
        }
        return value
    }

    static let maxLimit: Int64 = 200
    static let defaultLimit = 50

    func limit() throws -> Int {
        try integer("limit", in: 1...Self.maxLimit).map(Int.init) ?? Self.defaultLimit
    }

    /// At most one of `before`, `after`, `around`, `around_time`; the last is
    /// read by `aroundTime()` since it needs the store to become a seq.
    func pageAnchor() throws -> PageAnchor {
        let before = try integer("before", in: 1...Int64.max)
        let after = try integer("after", in: 0...Int64.max)
        let around = try integer("around", in: 1...Int64.max)
        let given = [before, after, around].compactMap { $0 }.count + (parameters["around_time"] == nil ? 0 : 1)
        guard given <= 1 else {
            throw APIError.badRequest(
                "invalid_parameter", "Give at most one of `before`, `after`, `around` and `around_time`.")
        }
        if let before { return .before(before) }
        if let after { return .after(after) }
        if let around { return .around(around) }
        return .newest
    }
}

extension QueryParameters {
    /// `around_time`: an RFC 3339 timestamp.
    func aroundTime() throws -> Date? {
        guard let text = try single("around_time") else { return nil }
        guard let time = ScrollbackJSON.parseTimestamp(text), ScrollbackJSON.timestampRange.contains(time) else {
            throw APIError.badRequest(
                "invalid_parameter",
                "`around_time` must be an RFC 3339 timestamp such as 2026-11-22T05:36:39.123Z (got \"\(text.prefix(40))\").")
        }
        return time
    }

    /// `since_version`, and the page size of the change log (1 to 1,000, default 100).
    func changeWindow() throws -> (since: Int64, limit: Int) {
        let since = try integer("since_version", in: 0...Int64.max) ?? 0
        let limit = try integer("limit", in: 1...1_000).map(Int.init) ?? 100
        return (since, limit)
    }
}

/// The conversation list's cursor: opaque to clients; inside, where the pass
/// stands (`ConversationListPosition`).
enum ConversationCursor {
    static func encode(_ position: ConversationListPosition) -> String {
        Data("b:\(position.mark):\(position.count):\(position.digest)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ cursor: String) throws -> ConversationListPosition {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard cursor.count <= 96, let data = Data(base64Encoded: base64),
            let text = String(data: data, encoding: .utf8)
        else { throw invalid }
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        switch fields.first {
        case "b" where fields.count == 4:
            guard let mark = Int64(fields[1]), mark >= 0, let count = Int64(fields[2]), count >= 0,
                let digest = Int64(fields[3])
            else { throw invalid }
            return ConversationListPosition(mark: mark, count: count, digest: digest)
        case "a" where fields.count == 2:
            // A cursor from before passes were checked cannot be checked: the
            // page says `activity_changed`, so the client restarts the pass.
            guard let mark = Int64(fields[1]), mark >= 0 else { throw invalid }
            return ConversationListPosition(mark: mark, count: -1, digest: 0)
        default:
            throw invalid
        }
    }

    private static var invalid: APIError {
        APIError.badRequest("invalid_parameter", "`cursor` must be a next_cursor value returned by this endpoint.")
    }
}
