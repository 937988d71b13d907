import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Muting a conversation for the caller: no push for it, for good or until a time.
struct MuteController {
    let store: ScrollbackStore

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.put("conversations/:id/mute", use: mute)
        group.delete("conversations/:id/mute", use: unmute)
    }

    /// A body is optional: none, `{}` or `{"until": null}` mute until unmuted.
    @Sendable func mute(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MuteState> {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        let until = try await RequestBody.decode(MuteRequest.self, from: request, context: context, orEmpty: MuteRequest())
            .until
        if let until, until <= Date() {
            throw APIError.unprocessable(
                .invalidMute,
                "until must be a time in the future (RFC 3339, such as 2026-12-24T18:00:00Z); leave it out to mute until unmuted.")
        }
        return JSONBody(try await store.setMute(id, for: user, muted: true, until: until))
    }

    @Sendable func unmute(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MuteState> {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        return JSONBody(try await store.setMute(id, for: user, muted: false, until: nil))
    }
}
