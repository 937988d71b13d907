import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// `/v1/conversations` and their members.
struct ConversationController {
    let store: ScrollbackStore
    let limiter: RateLimiter

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.post("conversations", use: create)
        group.get("conversations", use: list)
        group.get("conversations/:id", use: show)
        group.post("conversations/:id/members", use: addMember)
        group.delete("conversations/:id/members/:user_id", use: removeMember)
        group.put("conversations/:id/read", use: markRead)
        group.post("conversations/:id/typing", use: typing)
    }

    @Sendable func create(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let input = try await RequestBody.decode(CreateConversationRequest.self, from: request, context: context)
        let title = try Validation.title(input.title)
        let members = try Validation.members(input.members, creator: user)
        try limiter.check(.conversation, for: user)
        let conversation = try await store.createConversation(creator: user, title: title, members: members)
        return try JSONResponse.make(conversation, status: .created)
    }

    @Sendable func list(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let query = QueryParameters(request)
        let limit = try query.limit()
        let position = try query.single("cursor").map(ConversationCursor.decode)
        let page = try await store.conversations(for: user, limit: limit, after: position)
        return try JSONResponse.make(
            ConversationList(
                conversations: page.conversations, nextCursor: page.next.map(ConversationCursor.encode),
                activityChanged: page.activityChanged))
    }

    @Sendable func show(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let conversation = try await store.conversation(try Self.conversationID(context), for: user)
        return try JSONResponse.make(conversation)
    }

    @Sendable func addMember(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let input = try await RequestBody.decode(AddMemberRequest.self, from: request, context: context)
        let member = try Validation.userID(input.userId, field: "user_id")
        try limiter.check(.member, for: user)
        return try JSONResponse.make(try await store.addMember(member, to: id, by: user))
    }

    @Sendable func removeMember(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let member = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        try await store.removeMember(member, from: id, by: user)
        return Response(status: .noContent)
    }

    /// Moves the caller's read marker forward (never backwards).
    @Sendable func markRead(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let input = try await RequestBody.decode(ReadMarkerRequest.self, from: request, context: context)
        return try JSONResponse.make(try await store.markRead(Validation.readSeq(input.seq), in: id, by: user))
    }

    /// Tells the conversation's live subscribers that the caller is typing,
    /// as the socket's `typing` frame does, for clients that are not on a
    /// socket. Nothing is stored; the fan-out shows it at most once per
    /// `APILimits.typingIntervalSeconds` per user.
    @Sendable func typing(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        try limiter.check(.typing, for: user)
        guard try await store.notifyTyping(in: id, by: user) else { throw APIError.conversationNotFound }
        return Response(status: .noContent)
    }

    /// A path id that is not a UUID names no conversation: the same 404.
    static func conversationID(_ context: ScrollbackRequestContext) throws -> UUID {
        guard let text = context.pathParameter("id"), let id = UUID(uuidString: text) else {
            throw APIError.conversationNotFound
        }
        return id
    }
}
