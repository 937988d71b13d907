import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Sending messages and paging history.
struct MessageController {
    let store: ScrollbackStore
    let commands: MemberCommands
    /// Flags the messages of senders the reader blocked.
    let blockLists: BlockLists

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.post("conversations/:id/messages", use: send)
        group.get("conversations/:id/messages", use: page)
    }

    /// 201 with a new message; 200 with the original when the same client_id
    /// is sent again with the same body.
    @Sendable func send(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MessageEnvelope> {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        let input = try await RequestBody.decode(SendMessageRequest.self, from: request, context: context)
        let outcome = try await commands.send(
            input.body, clientID: input.clientId, replyTo: input.replyTo, attachments: input.attachments ?? [], to: id,
            by: user)
        switch outcome {
        case .created(let message): return JSONBody(MessageEnvelope(message: message), status: .created)
        case .replayed(let message): return JSONBody(MessageEnvelope(message: message))
        }
    }

    @Sendable func page(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<MessagePage> {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        let query = QueryParameters(request)
        let hints = try PageHintRequest(query)  // viewport_height, limit=fill, ...: PageHints.swift
        let limit = try hints.fetchLimit ?? query.limit()
        var anchor = try query.pageAnchor()
        // A page at this version or later (the client's last write, or the
        // newest page it has seen): never an older one from the page cache.
        let minVersion = try query.integer("min_version", in: 0...Int64.max) ?? 0
        if let time = try query.aroundTime() {
            // The first message at or after that time, or the newest when none is.
            anchor = try await store.seq(at: time, in: id, for: user).map(PageAnchor.around) ?? .newest
        }
        var page = try await store.page(of: id, for: user, anchor: anchor, limit: limit, minVersion: minVersion)
        page.messages = try await blockLists.flag(page.messages, for: user)
        return JSONBody(try hints.apply(to: page, anchor: anchor))
    }
}
