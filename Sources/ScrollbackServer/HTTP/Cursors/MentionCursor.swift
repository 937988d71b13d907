import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// The mentions cursor: opaque to clients; inside, the position of the
/// last mention listed (sql/007_mentions.sql).
enum MentionCursor {
    static func encode(_ position: Int64) -> String {
        OpaqueCursor.encode("m:\(position)")
    }

    static func decode(_ cursor: String) throws -> Int64 {
        guard let text = OpaqueCursor.decode(cursor), text.hasPrefix("m:"), let position = Int64(text.dropFirst(2)),
            position > 0
        else {
            throw APIError.badRequest(.invalidParameter, "`before` must be a `next` value returned by this endpoint.")
        }
        return position
    }
}
