import Foundation
import ScrollbackModels
import ScrollbackStore

/// The conversation list's cursor: opaque to clients; inside, where the pass
/// stands (`ConversationListPosition`).
enum ConversationCursor {
    static func encode(_ position: ConversationListPosition) -> String {
        OpaqueCursor.encode("b:\(position.mark):\(position.count):\(position.digest)")
    }

    static func decode(_ cursor: String) throws -> ConversationListPosition {
        guard let text = OpaqueCursor.decode(cursor) else { throw invalid }
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
        APIError.badRequest(.invalidParameter, "`cursor` must be a next_cursor value returned by this endpoint.")
    }
}
