import ScrollbackModels

/// Checks on what a client sends, made before anything reaches SQL. Each
/// failure is a 422 whose message says what to fix. The numbers are
/// ``APILimits``; lengths count Unicode code points.
enum Validation {
    static let maxBodyCharacters = APILimits.maxMessageBodyLength
    static let maxTitleCharacters = APILimits.maxTitleLength
    static let maxClientIDCharacters = APILimits.maxClientIDLength
    static let maxMembers = APILimits.maxMembers

    static func messageBody(_ body: String) throws -> String {
        if body.unicodeScalars.contains("\u{0}") {
            throw APIError.unprocessable(.invalidMessageBody, "Field `body` must not contain the NUL character (U+0000).")
        }
        // Invisible format characters (zero-width space, joiners, marks of
        // direction) alone show nothing either.
        if body.unicodeScalars.allSatisfy({ $0.properties.isWhitespace || $0.properties.generalCategory == .format }) {
            throw APIError.unprocessable(
                .invalidMessageBody, "Field `body` must contain some visible text, not only whitespace.")
        }
        let length = body.unicodeScalars.count
        if length > maxBodyCharacters {
            throw APIError.unprocessable(
                .invalidMessageBody,
                "Field `body` must be at most \(maxBodyCharacters) characters, counted as Unicode code points (it has \(length)).")
        }
        return body
    }

    static func clientID(_ clientID: String?) throws -> String? {
        guard let clientID else { return nil }
        let length = clientID.unicodeScalars.count
        guard (1...maxClientIDCharacters).contains(length),
            !clientID.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw APIError.unprocessable(
                .invalidClientID,
                "Field `client_id` must be 1 to \(maxClientIDCharacters) characters with no control characters.")
        }
        return clientID
    }

    static func readSeq(_ seq: Int64) throws -> Int64 {
        guard seq >= 0 else { throw APIError.unprocessable(.invalidReadSeq, "Field `seq` must be 0 or more.") }
        return seq
    }

    static func title(_ title: String?) throws -> String? {
        guard let title else { return nil }
        if title.unicodeScalars.contains("\u{0}") {
            throw APIError.unprocessable(.invalidTitle, "Field `title` must not contain the NUL character (U+0000).")
        }
        let length = title.unicodeScalars.count
        if length > maxTitleCharacters {
            throw APIError.unprocessable(
                .invalidTitle,
                "Field `title` must be at most \(maxTitleCharacters) characters, counted as Unicode code points (it has \(length)).")
        }
        return title
    }

    static func userID(_ id: String, field: String) throws -> UserID {
        guard let user = UserID(validating: id) else {
            throw APIError.unprocessable(.invalidUserID, "`\(field)` must be a user id of \(UserID.rule).")
        }
        return user
    }

    static func members(_ given: [String]?, creator: UserID) throws -> [UserID] {
        let given = given ?? []
        if given.count > maxMembers {
            throw APIError.unprocessable(
                .tooManyMembers, "Field `members` can list at most \(maxMembers) user ids (it lists \(given.count)).")
        }
        let members = try given.enumerated().map { index, member in try userID(member, field: "members[\(index)]") }
        let distinct = Set(members + [creator])
        if distinct.count > maxMembers {
            throw APIError.unprocessable(
                .tooManyMembers,
                "A conversation can have at most \(maxMembers) members, creator included (this one would have \(distinct.count)).")
        }
        return Array(distinct).sorted()
    }
}
