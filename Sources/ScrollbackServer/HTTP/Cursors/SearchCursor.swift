import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// The search's cursor: opaque to clients; inside, the last hit returned.
enum SearchCursor {
    static func encode(_ position: SearchPosition) -> String {
        OpaqueCursor.encode("s:\(position.conversationID.uuidString.lowercased()):\(position.seq)")
    }

    static func decode(_ cursor: String) throws -> SearchPosition {
        guard let text = OpaqueCursor.decode(cursor) else { throw invalid }
        let fields = text.split(separator: ":", omittingEmptySubsequences: false)
        guard fields.count == 3, fields[0] == "s", let id = UUID(uuidString: String(fields[1])),
            let seq = Int64(fields[2]), seq > 0
        else { throw invalid }
        return SearchPosition(conversationID: id, seq: seq)
    }

    private static var invalid: APIError {
        APIError.badRequest(.invalidParameter, "`before` must be a `next` value returned by this endpoint.")
    }
}
