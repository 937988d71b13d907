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
    @Sendable func list(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MentionPage> {
        let user = try context.requireUser()
        let query = QueryParameters(request)
        let limit = try query.integer("limit", in: APILimits.mentionsLimit) ?? APILimits.defaultMentionsLimit
        let position = try query.single("before").map(MentionCursor.decode)
        let page = try await store.mentions(of: user, before: position, limit: limit)
        return JSONBody(MentionPage(mentions: page.mentions, next: page.next.map(MentionCursor.encode)))
    }
}
