import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Presence, seen only by the members of a conversation: who has a live
/// socket, when the others were last seen; and hiding one's own.
struct PresenceController {
    let store: ScrollbackStore

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("conversations/:id/presence", use: members)
        group.put("presence", use: settings)
    }

    @Sendable func members(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<ConversationPresence>
    {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        guard let members = try await store.presence(of: id, for: user) else { throw APIError.conversationNotFound }
        return JSONBody(ConversationPresence(members: members))
    }

    @Sendable func settings(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<PresenceSettings>
    {
        let user = try context.requireUser()
        let input = try await RequestBody.decode(PresenceSettings.self, from: request, context: context)
        try await store.setPresenceHidden(input.hidden, for: user)
        return JSONBody(input)
    }
}
