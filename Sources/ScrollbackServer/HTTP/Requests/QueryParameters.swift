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
            throw APIError.badRequest(.invalidParameter, "Give `\(name)` at most once.")
        }
        return values[0]
    }

    /// `true` or `false` (absent: false).
    func flag(_ name: String) throws -> Bool {
        guard let text = try single(name) else { return false }
        switch text {
        case "true": return true
        case "false": return false
        default: throw APIError.badRequest(.invalidParameter, "`\(name)` must be true or false.")
        }
    }

    /// A whole number in `range`, written with digits only (no sign, no exponent).
    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = try single(name) else { return nil }
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (48...57).contains($0) }),
            let value = Int64(text), range.contains(value)
        else {
            throw APIError.badRequest(
                .invalidParameter,
                "`\(name)` must be a whole number from \(range.lowerBound) to \(range.upperBound) (got \"\(text.prefix(40))\").")
        }
        return value
    }

    /// ``integer(_:in:)`` for a limit of ``APILimits``.
    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        try integer(name, in: Int64(range.lowerBound)...Int64(range.upperBound)).map(Int.init)
    }

    /// The page size of messages and conversations.
    func limit() throws -> Int {
        try integer("limit", in: APILimits.pageLimit) ?? APILimits.defaultPageLimit
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
                .invalidParameter, "Give at most one of `before`, `after`, `around` and `around_time`.")
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
                .invalidParameter,
                "`around_time` must be an RFC 3339 timestamp such as 2026-11-22T05:36:39.123Z (got \"\(text.prefix(40))\").")
        }
        return time
    }

    /// `since_version`, and the page size of the change log.
    func changeWindow() throws -> (since: Int64, limit: Int) {
        let since = try integer("since_version", in: 0...Int64.max) ?? 0
        let limit = try integer("limit", in: APILimits.changesLimit) ?? APILimits.defaultChangesLimit
        return (since, limit)
    }
}

extension QueryParameters {
    /// A decimal written with digits, at most one decimal point and an
    /// optional exponent (`390`, `21.5`, `5e-324`: what a number's usual
    /// text form gives in JavaScript or Python; no sign, spaces, `nan`, `inf`
    /// or hexadecimal), for which `isValid` holds. Requirement is the
    /// sentence's "must be ..." part.
    func decimal(_ name: String, requirement: String, isValid: (Double) -> Bool) throws -> Double? {
        guard let text = try single(name) else { return nil }
        guard text.utf8.count <= 32, Self.isPlainDecimal(text), let value = Double(text), value.isFinite,
            isValid(value)
        else {
            throw APIError.badRequest(
                .invalidParameter,
                "`\(name)` must be \(requirement), written with digits, an optional decimal point and an optional"
                    + " exponent (got \"\(text.prefix(40))\").")
        }
        return value
    }

    /// `digits [. digits] [(e|E) [+|-] digits]`.
    static func isPlainDecimal(_ text: String) -> Bool {
        var rest = Substring(text).utf8[...]
        func digits() -> Bool {
            let count = rest.prefix(while: { (48...57).contains($0) }).count
            rest = rest.dropFirst(count)
            return count > 0
        }
        guard digits() else { return false }
        if rest.first == UInt8(ascii: ".") {
            rest = rest.dropFirst()
            guard digits() else { return false }
        }
        if rest.first == UInt8(ascii: "e") || rest.first == UInt8(ascii: "E") {
            rest = rest.dropFirst()
            if rest.first == UInt8(ascii: "+") || rest.first == UInt8(ascii: "-") { rest = rest.dropFirst() }
            guard digits() else { return false }
        }
        return rest.isEmpty
    }
}
