import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Threads and reactions: a thread's replies paged like history, and a
/// user's reactions to a message, set and removed idempotently.
struct ThreadController {
    let store: ScrollbackStore
    let limiter: RateLimiter
    /// Flags the messages of senders the reader blocked.
    let blockLists: BlockLists

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("conversations/:id/messages/:seq/thread", use: thread)
        group.put("conversations/:id/messages/:seq/reactions/:emoji", use: react)
        group.delete("conversations/:id/messages/:seq/reactions/:emoji", use: unreact)
    }

    /// The replies of the thread message `seq` started, newest first, with
    /// history's anchors (`before`, `after`, `around`) and `limit`.
    @Sendable func thread(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<ThreadPage> {
        let user = try context.requireUser()
        let (id, seq) = try MessageChangeController.messageAddress(context)
        let query = QueryParameters(request)
        if try query.aroundTime() != nil {
            throw APIError.badRequest(.invalidParameter, "`around_time` is for history; a thread takes `before`, `after` or `around`.")
        }
        let limit = try query.limit()
        let anchor = try query.pageAnchor()
        var page = try await store.thread(of: seq, in: id, for: user, anchor: anchor, limit: limit)
        let flagged = try await blockLists.flag([page.root] + page.messages, for: user)
        page.root = flagged[0]
        page.messages = Array(flagged.dropFirst())
        page.users = try await store.profiles(named: page.namedUsers)
        return JSONBody(page)
    }

    /// 200 with the message; reacting again with the same emoji changes nothing.
    @Sendable func react(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MessageEnvelope> {
        try await change(context, adding: true)
    }

    /// 200 with the message; removing a reaction the caller does not have changes nothing.
    @Sendable func unreact(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MessageEnvelope> {
        try await change(context, adding: false)
    }

    private func change(_ context: ScrollbackRequestContext, adding: Bool) async throws -> JSONBody<MessageEnvelope> {
        let user = try context.requireUser()
        let (id, seq) = try MessageChangeController.messageAddress(context)
        let emoji = try Validation.emoji(context.pathParameter("emoji") ?? "")
        // A reaction is a write to the conversation: it counts as a send.
        try limiter.check(.send, for: user)
        let outcome = try await store.react(emoji, to: seq, in: id, by: user, adding: adding)
        return JSONBody(MessageEnvelope(message: outcome.message))
    }
}
