import Foundation
import ScrollbackModels

/// Roles, bans and a conversation's settings. Who may do what is
/// `MemberRole.may(_:on:)`: a screen can read it from the caller's
/// `Conversation.role` to show only what will work.
extension ScrollbackClient {
    /// Every member of conversation `id` with their role, by user id.
    public func members(of id: UUID) async throws(ScrollbackError) -> [ConversationMember] {
        let list: MemberList = try await call(.GET, "/v1/conversations/\(id.wire)/members")
        return list.members
    }

    /// Gives `user` the role `role` (the owner may); `.owner` hands
    /// ownership over, the caller becoming an admin. Answers every member
    /// with their role.
    @discardableResult
    public func setRole(_ role: MemberRole, of user: String, in id: UUID) async throws(ScrollbackError)
        -> [ConversationMember]
    {
        let list: MemberList = try await call(
            .PATCH, "/v1/conversations/\(id.wire)/members/\(user.pathEscaped)", body: UpdateMemberRequest(role: role))
        return list.members
    }

    /// Sets the title, the description and the app's data (`.some(nil)`:
    /// none) and slow mode (seconds, 0: off), those given; the owner or an
    /// admin may.
    @discardableResult
    public func updateConversation(
        _ id: UUID, title: String?? = nil, slowModeSeconds: Int? = nil, description: String?? = nil,
        data: CustomData?? = nil
    ) async throws(ScrollbackError) -> Conversation {
        try await call(
            .PATCH, "/v1/conversations/\(id.wire)",
            body: UpdateConversationRequest(
                title: title, slowModeSeconds: slowModeSeconds, description: description, data: data))
    }

    /// Removes `user` from conversation `id` and keeps them out until
    /// `until` (nil: until `unban`); a user who is no longer a member can
    /// be banned too.
    public func ban(_ user: String, from id: UUID, until: Date? = nil) async throws(ScrollbackError) {
        _ = try await exchange(
            .DELETE, "/v1/conversations/\(id.wire)/members/\(user.pathEscaped)",
            query: [("ban", "true"), ("until", until.map(ScrollbackJSON.formatTimestamp))])
    }

    /// The bans of conversation `id` in force (the owner or an admin may read them).
    public func bans(of id: UUID) async throws(ScrollbackError) -> [Ban] {
        let list: BanList = try await call(.GET, "/v1/conversations/\(id.wire)/bans")
        return list.bans
    }

    /// Lifts `user`'s ban from conversation `id`; they are not added back.
    public func unban(_ user: String, from id: UUID) async throws(ScrollbackError) {
        _ = try await exchange(.DELETE, "/v1/conversations/\(id.wire)/bans/\(user.pathEscaped)")
    }
}

/// One-to-one conversations, blocks and reports.
extension ScrollbackClient {
    /// "The" conversation of the user and exactly `members` (one-to-one
    /// with one member): the existing one, or a new one, never two however
    /// many devices ask at once. Retried safely: asking again finds it.
    public func distinctConversation(with members: [String], title: String? = nil) async throws(ScrollbackError)
        -> Conversation
    {
        try await retrying { () async throws(ScrollbackError) in
            try await self.call(
                .POST, "/v1/conversations",
                body: CreateConversationRequest(title: title, members: members, distinct: true))
        }
    }

    /// Blocks `user`: they cannot start a conversation with the caller or
    /// add them to one, and their messages arrive with `blockedSender` set.
    @discardableResult
    public func block(_ user: String) async throws(ScrollbackError) -> BlockedUser {
        try await call(.PUT, "/v1/blocks/\(user.pathEscaped)")
    }

    public func unblock(_ user: String) async throws(ScrollbackError) {
        _ = try await exchange(.DELETE, "/v1/blocks/\(user.pathEscaped)")
    }

    /// The users the caller blocked.
    public func blocks() async throws(ScrollbackError) -> [BlockedUser] {
        let list: BlockList = try await call(.GET, "/v1/blocks")
        return list.blocks
    }

    /// Reports message `seq` of conversation `id` (reporting it again
    /// answers the first report).
    @discardableResult
    public func report(message seq: Int64, in id: UUID, reason: ReportReason, note: String? = nil)
        async throws(ScrollbackError) -> Report
    {
        try await call(
            .POST, "/v1/reports", body: CreateReportRequest(conversationId: id, seq: seq, reason: reason, note: note))
    }

    /// Reports `user`, whom the caller shares a conversation with.
    @discardableResult
    public func report(user: String, reason: ReportReason, note: String? = nil) async throws(ScrollbackError)
        -> Report
    {
        try await call(.POST, "/v1/reports", body: CreateReportRequest(userId: user, reason: reason, note: note))
    }
}
