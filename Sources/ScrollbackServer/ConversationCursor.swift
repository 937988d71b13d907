import Foundation
import ScrollbackModels

/// The conversation list's cursor: opaque to clients, an activity mark inside.
enum ConversationCursor {
    static func encode(_ mark: Int64) -> String {
        Data("a:\(mark)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ cursor: String) throws -> Int64 {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard cursor.count <= 64, let data = Data(base64Encoded: base64),
            let text = String(data: data, encoding: .utf8), text.hasPrefix("a:"),
            let mark = Int64(text.dropFirst(2)), mark >= 0
        else {
            throw APIError.badRequest(
                .invalidParameter, "`cursor` must be a next_cursor value returned by this endpoint.")
        }
        return mark
    }
}
