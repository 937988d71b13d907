import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// `GET /v1/mentions`: the caller's mentions across their conversations.
struct MentionController {
    let store: ScrollbackStore

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("mentions", use: list)
    }

    /// Newest first; `before` is the `next` of the page before.
    @Sendable func list(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let query = QueryParameters(request)
        let limit = try query.integer("limit", in: APILimits.mentionsLimit) ?? APILimits.defaultMentionsLimit
        let position = try query.single("before").map(MentionCursor.decode)
        let page = try await store.mentions(of: user, before: position, limit: limit)
        return try JSONResponse.make(MentionPage(mentions: page.mentions, next: page.next.map(MentionCursor.encode)))
    }
}

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
