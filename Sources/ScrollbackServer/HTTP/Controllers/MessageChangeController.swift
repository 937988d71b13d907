import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Editing and deleting messages, and the change log clients revalidate
/// their windows with.
struct MessageChangeController {
    let store: ScrollbackStore
    /// Flags the messages of senders the reader blocked.
    let blockLists: BlockLists

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.patch("conversations/:id/messages/:seq", use: edit)
        group.delete("conversations/:id/messages/:seq", use: delete)
        group.get("conversations/:id/changes", use: changes)
    }

    /// Only the sender may edit; same validation as sending. An edit
    /// changes the body, the data, or both (one at least).
    @Sendable func edit(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MessageEnvelope> {
        let user = try context.requireUser()
        let (id, seq) = try Self.messageAddress(context)
        let input = try await RequestBody.decode(EditMessageRequest.self, from: request, context: context)
        guard input.body != nil || input.data != nil else {
            throw APIError.badRequest(.invalidField, "An edit needs `body`, `data` or both.")
        }
        let body = try input.body.map(Validation.messageBody)
        return JSONBody(MessageEnvelope(message: try await store.edit(seq, in: id, by: user, body: body, data: input.data)))
    }

    /// The sender or the conversation's creator may delete; deleting a
    /// tombstone again returns it.
    @Sendable func delete(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MessageEnvelope> {
        let user = try context.requireUser()
        let (id, seq) = try Self.messageAddress(context)
        return JSONBody(MessageEnvelope(message: try await store.delete(seq, in: id, by: user).message))
    }

    @Sendable func changes(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<ChangeSet> {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        let window = try QueryParameters(request).changeWindow()
        var changes = try await store.changes(in: id, for: user, since: window.since, limit: window.limit)
        changes.messages = try await blockLists.flag(changes.messages, for: user)
        changes.users = try await store.profiles(named: changes.namedUsers)
        return JSONBody(changes)
    }

    /// A seq that is not a positive whole number names no message: 404, as
    /// for any seq that does not exist.
    static func messageAddress(_ context: ScrollbackRequestContext) throws -> (UUID, Int64) {
        let id = try ConversationController.conversationID(context)
        guard let text = context.pathParameter("seq"), text.utf8.allSatisfy({ (48...57).contains($0) }),
            let seq = Int64(text), seq >= 1
        else {
            throw APIError(StoreError.messageNotFound)
        }
        return (id, seq)
    }
}
