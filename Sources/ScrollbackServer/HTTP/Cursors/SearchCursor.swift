import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// The search's cursor: opaque to clients; inside, the keys of the last hit
/// returned (its `created_at` to the microsecond, its conversation, its
/// seq). The next page is read below those keys and nothing is read of the
/// message they name: a cursor made up by hand, naming a conversation the
/// caller is not in, finds nothing of it (not whether the message exists,
/// nor when it was sent).
enum SearchCursor {
    static func encode(_ position: SearchPosition) -> String {
        OpaqueCursor.encode(
            "t:\(position.createdAtMicroseconds):\(position.conversationID.uuidString.lowercased()):\(position.seq)")
    }

    /// The position in `cursor`; a search of one conversation (`within`)
    /// takes only a cursor of that conversation's hits.
    static func decode(_ cursor: String, within conversation: UUID? = nil) throws -> SearchPosition {
        guard let text = OpaqueCursor.decode(cursor, maxLength: 128) else { throw invalid }
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        if fields.first == "s" {
            throw APIError.badRequest(
                .invalidParameter, "`before` is a cursor of an earlier version of the server: search again without it.")
        }
        guard fields.count == 4, fields[0] == "t", let time = Int64(fields[1]),
            let id = UUID(uuidString: String(fields[2])), let seq = Int64(fields[3]), seq > 0
        else { throw invalid }
        if let conversation, conversation != id {
            throw APIError.badRequest(
                .invalidParameter,
                "`before` is a cursor of another search: a search of one conversation takes the `next` of its own pages.")
        }
        return SearchPosition(createdAtMicroseconds: time, conversationID: id, seq: seq)
    }

    private static var invalid: APIError {
        APIError.badRequest(.invalidParameter, "`before` must be a `next` value returned by this endpoint.")
    }
}
