import Foundation
import HTTPTypes
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// `/v1/conversations` and their members.
struct ConversationController {
    let store: ScrollbackStore
    let limiter: RateLimiter
    let commands: MemberCommands

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.post("conversations", use: create)
        group.get("conversations", use: list)
        group.get("unread", use: unread)
        group.get("conversations/:id", use: show)
        group.patch("conversations/:id", use: update)
        group.get("conversations/:id/members", use: members)
        group.post("conversations/:id/members", use: addMember)
        group.patch("conversations/:id/members/:user_id", use: setRole)
        group.delete("conversations/:id/members/:user_id", use: removeMember)
        group.get("conversations/:id/bans", use: bans)
        group.delete("conversations/:id/bans/:user_id", use: unban)
        group.put("conversations/:id/read", use: markRead)
        group.post("conversations/:id/typing", use: typing)
    }

    @Sendable func create(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<Conversation> {
        let user = try context.requireUser()
        let input = try await RequestBody.decode(CreateConversationRequest.self, from: request, context: context)
        let title = try Validation.title(input.title)
        let description = try Validation.description(input.description)
        let members = try Validation.members(input.members, creator: user)
        try limiter.check(.conversation, for: user)
        guard input.distinct == true else {
            return JSONBody(
                try await store.createConversation(
                    creator: user, title: title, members: members, description: description, data: input.data),
                status: .created)
        }
        // The conversation of exactly these members: 200 when it exists.
        let (conversation, created) = try await store.distinctConversation(
            creator: user, title: title, members: members, description: description, data: input.data)
        return JSONBody(conversation, status: created ? .created : .ok)
    }

    @Sendable func list(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<ConversationList> {
        let user = try context.requireUser()
        let query = QueryParameters(request)
        let limit = try query.limit()
        let position = try query.single("cursor").map(ConversationCursor.decode)
        let page = try await store.conversations(for: user, limit: limit, after: position)
        let users = try await store.profiles(named: ConversationList.namedUsers(page.conversations, viewer: user))
        return JSONBody(
            ConversationList(
                conversations: page.conversations, nextCursor: page.next.map(ConversationCursor.encode),
                activityChanged: page.activityChanged, users: users))
    }

    /// The caller's unread messages over all their conversations (a badge
    /// that does not need every page of the list).
    @Sendable func unread(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UnreadCounts> {
        JSONBody(try await store.unreadCounts(for: try context.requireUser()))
    }

    @Sendable func show(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<Conversation> {
        let user = try context.requireUser()
        return JSONBody(try await store.conversation(try Self.conversationID(context), for: user))
    }

    @Sendable func addMember(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<Conversation> {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let input = try await RequestBody.decode(AddMemberRequest.self, from: request, context: context)
        let member = try Validation.userID(input.userId, field: "user_id")
        try limiter.check(.member, for: user)
        return JSONBody(try await store.addMember(member, to: id, by: user))
    }

    /// Removes a member; with `?ban=true` (and optionally `&until=` a time)
    /// also keeps them out.
    @Sendable func removeMember(_ request: Request, context: ScrollbackRequestContext) async throws
        -> HTTPResponse.Status
    {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let member = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        let query = QueryParameters(request)
        let ban = try query.flag("ban")
        let until = try query.single("until").map(Validation.banEnd)
        if until != nil, !ban {
            throw APIError.unprocessable(.invalidBan, "`until` is the end of a ban: give it with `ban=true`.")
        }
        try await store.removeMember(member, from: id, by: user, ban: ban, until: until)
        return .noContent
    }

    /// Sets the title, description and data (null: none) and slow mode,
    /// those given.
    @Sendable func update(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<Conversation> {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let input = try await RequestBody.decode(UpdateConversationRequest.self, from: request, context: context)
        let title = try input.title.map { try Validation.title($0) }
        let description = try input.description.map { try Validation.description($0) }
        let slowMode = try input.slowModeSeconds.map(Validation.slowMode)
        guard title != nil || slowMode != nil || description != nil || input.data != nil else {
            throw APIError.unprocessable(
                .invalidField, "Give one or more of `title`, `description`, `data` and `slow_mode_seconds`.")
        }
        return JSONBody(
            try await store.updateConversation(
                id, title: title, slowModeSeconds: slowMode, description: description, data: input.data, by: user))
    }

    /// Members with their profiles.
    static func memberList(_ members: [ConversationMember], _ store: ScrollbackStore) async throws
        -> JSONBody<MemberList>
    {
        let users = try await store.profiles(named: Set(members.map { UserID(rawValue: $0.userId) }))
        return JSONBody(MemberList(members: members, users: users))
    }

    @Sendable func members(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MemberList> {
        let user = try context.requireUser()
        return try await Self.memberList(try await store.members(of: try Self.conversationID(context), for: user), store)
    }

    /// Changes a member's role (the owner only; `owner` hands ownership
    /// over) and their data (themself, or the owner or an admin), those
    /// given. Answers every member with their role.
    @Sendable func setRole(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MemberList> {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let member = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        let input = try await RequestBody.decode(UpdateMemberRequest.self, from: request, context: context)
        guard input.role != nil || input.data != nil else {
            throw APIError.unprocessable(.invalidField, "Give `role`, `data` or both.")
        }
        let role = try input.role.map(Validation.role)
        try limiter.check(.member, for: user)
        if let data = input.data { try await store.setMemberData(data, of: member, in: id, by: user) }
        if let role { _ = try await store.setRole(role, of: member, in: id, by: user) }
        return try await Self.memberList(try await store.members(of: id, for: user), store)
    }

    @Sendable func bans(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<BanList> {
        let user = try context.requireUser()
        return JSONBody(BanList(bans: try await store.bans(of: try Self.conversationID(context), for: user)))
    }

    @Sendable func unban(_ request: Request, context: ScrollbackRequestContext) async throws -> HTTPResponse.Status {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let member = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        try await store.unban(member, in: id, by: user)
        return .noContent
    }

    /// Moves the caller's read marker forward (never backwards).
    @Sendable func markRead(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<ReadMarker> {
        let user = try context.requireUser()
        let id = try Self.conversationID(context)
        let input = try await RequestBody.decode(ReadMarkerRequest.self, from: request, context: context)
        return JSONBody(try await commands.markRead(input.seq, in: id, by: user))
    }

    /// Tells the conversation's live subscribers that the caller is typing,
    /// as the socket's `typing` frame does, for clients that are not on a
    /// socket (`MemberCommands.typing`).
    @Sendable func typing(_ request: Request, context: ScrollbackRequestContext) async throws -> HTTPResponse.Status {
        let user = try context.requireUser()
        try await commands.typing(in: try Self.conversationID(context), by: user)
        return .noContent
    }

    /// A path id that is not a UUID names no conversation: the same 404.
    static func conversationID(_ context: ScrollbackRequestContext) throws -> UUID {
        guard let text = context.pathParameter("id"), let id = UUID(uuidString: text) else {
            throw APIError.conversationNotFound
        }
        return id
    }
}
