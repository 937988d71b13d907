import Foundation
import HTTPTypes
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Blocking users and reporting messages or users.
struct SafetyController {
    let store: ScrollbackStore
    let limiter: RateLimiter
    let blockLists: BlockLists

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("blocks", use: blocks)
        group.put("blocks/:user_id", use: block)
        group.delete("blocks/:user_id", use: unblock)
        group.post("reports", use: report)
    }

    @Sendable func blocks(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<BlockList> {
        let user = try context.requireUser()
        return JSONBody(BlockList(blocks: try await store.blocks(of: user)))
    }

    /// Blocks a user (again: unchanged) → 200 with the block.
    @Sendable func block(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<BlockedUser> {
        let user = try context.requireUser()
        let blocked = try Self.other(context, than: user)
        try limiter.check(.member, for: user)
        let block = try await store.block(blocked, by: user)
        // This instance forgets the list at once; the others when the feed tells them.
        blockLists.changed(user)
        return JSONBody(block)
    }

    @Sendable func unblock(_ request: Request, context: ScrollbackRequestContext) async throws -> HTTPResponse.Status {
        let user = try context.requireUser()
        let blocked = try Self.other(context, than: user)
        try await store.unblock(blocked, by: user)
        blockLists.changed(user)
        return .noContent
    }

    /// The path's user id, who must not be the caller.
    static func other(_ context: ScrollbackRequestContext, than user: UserID) throws -> UserID {
        let other = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        guard other != user else { throw APIError.unprocessable(.invalidUserID, "You cannot block yourself.") }
        return other
    }

    /// Files a report → 201, or 200 with the first report when the caller
    /// reported the same message or user before.
    @Sendable func report(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<Report> {
        let user = try context.requireUser()
        let input = try await RequestBody.decode(CreateReportRequest.self, from: request, context: context)
        let reason = try Validation.reportReason(input.reason)
        let note = try Validation.reportNote(input.note)
        try limiter.check(.member, for: user)
        let filed: (report: Report, created: Bool)
        switch (input.conversationId, input.seq, input.userId) {
        case (let id?, let seq?, nil):
            guard seq >= 1 else { throw APIError.unprocessable(.invalidReport, "Field `seq` must be 1 or more.") }
            filed = try await store.report(message: seq, in: id, by: user, reason: reason, note: note)
        case (nil, nil, let reported?):
            let reported = try Validation.userID(reported, field: "user_id")
            guard reported != user else { throw APIError.unprocessable(.invalidReport, "You cannot report yourself.") }
            filed = try await store.report(user: reported, by: user, reason: reason, note: note)
        default:
            throw APIError.unprocessable(
                .invalidReport, "Report a message (`conversation_id` and `seq`) or a user (`user_id`), one of the two.")
        }
        return JSONBody(filed.report, status: filed.created ? .created : .ok)
    }
}
