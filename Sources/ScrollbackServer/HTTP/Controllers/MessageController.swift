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
            input.body, clientID: input.clientId, replyTo: input.replyTo, attachments: input.attachments ?? [],
            data: input.data, type: input.type, to: id, by: user)
        switch outcome {
        case .created(let message): return JSONBody(MessageEnvelope(message: message), status: .created)
        case .replayed(let message): return JSONBody(MessageEnvelope(message: message))
        }
    }

    @Sendable func page(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<PageAnswer> {
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
        let page = try await store.encodedPage(of: id, for: user, anchor: anchor, limit: limit, minVersion: minVersion)
        let blocked = try await blockLists.blocked(by: user)
        let users = try await store.profiles(named: page.namedUsers)
        guard hints.estimation != nil else { return JSONBody(.encoded(page, blocking: blocked, users: users)) }
        // Hints measure the messages: read back from the page's JSON (the same values a client reads).
        return JSONBody(
            .decoded(try hints.apply(to: try page.decoded(blocking: blocked, users: users), anchor: anchor)))
    }
}

/// The answer of `GET /v1/conversations/{id}/messages`: a `MessagePage`,
/// written from the page's JSON bytes with the reader's block flags
/// spliced in (`EncodedPage`), or from values when layout hints were asked.
enum PageAnswer: JSONWritable, Sendable {
    case encoded(EncodedPage, blocking: Set<String>, users: ProfileSet)
    case decoded(MessagePage)

    func write(to writer: inout JSONWriter) {
        switch self {
        case .encoded(let page, let blocked, let users): page.write(to: &writer, blocking: blocked, users: users)
        case .decoded(let page): page.write(to: &writer)
        }
    }

    var jsonByteCountHint: Int {
        switch self {
        case .encoded(let page, _, let users): page.jsonByteCount + users.count * 160
        case .decoded: 512
        }
    }

    /// As the same `MessagePage` (the server writes it with `write(to:)`).
    func encode(to encoder: any Encoder) throws {
        switch self {
        case .encoded(let page, let blocked, let users):
            try page.decoded(blocking: blocked, users: users).encode(to: encoder)
        case .decoded(let page): try page.encode(to: encoder)
        }
    }
}
