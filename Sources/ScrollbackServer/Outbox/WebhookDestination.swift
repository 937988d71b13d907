import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ScrollbackModels
import ScrollbackStore

/// The webhook receiver (`SCROLLBACK_WEBHOOK_URL`): one signed POST per
/// event, `WebhookEvent` as JSON, with `Scrollback-Event-Id` (the same on
/// every attempt), `Scrollback-Attempt` and `Scrollback-Signature`. A 2xx
/// within the deadline is success; anything else (another status, a
/// redirect, no answer in time, no connection) is a failed attempt.
struct WebhookDestination: OutboxDestination {
    let sink = OutboxSink.webhook
    let poster: SignedPost
    let store: ScrollbackStore

    func deliver(
        _ events: [OutboxEvent], delivered: @Sendable (OutboxEvent) async throws -> Void,
        reached: @Sendable (OutboxEvent, [String]) async throws -> Void
    ) async throws -> DeliveryFailure? {
        let data: OutboxEventData
        do {
            data = try await OutboxEventData.load(for: events, from: store)
        } catch {
            return DeliveryFailure(event: events[0], reason: "the event's data could not be read: \(error)")
        }
        for event in events {
            let body: [UInt8]
            do {
                body = try data.webhookBody(of: event)
            } catch {
                return DeliveryFailure(event: event, reason: "\(error)")
            }
            if let reason = await post(body, of: event) { return DeliveryFailure(event: event, reason: reason) }
            try await delivered(event)
        }
        return nil
    }

    /// Nil on success, else why not.
    func post(_ body: [UInt8], of event: OutboxEvent) async -> String? {
        let headers = [
            ("Scrollback-Event-Id", "\(event.event)"), ("Scrollback-Event-Type", event.type),
            ("Scrollback-Attempt", "\(event.attempts + 1)"),
        ]
        if case .failure(let failure) = await poster.send(body, headers: headers) { return failure.reason }
        return nil
    }
}

/// What the events of one conversation carry, read once for all of them:
/// the messages they name and, for a new conversation, the conversation.
struct OutboxEventData: Sendable {
    var messages: [Int64: Message] = [:]
    var conversation: ConversationEventData?
    var reports: [UUID: ReportEventData] = [:]
    var users = ProfileSet()
    /// The data of the members that `member.updated` events name.
    var memberData: [String: CustomData] = [:]

    static func load(for events: [OutboxEvent], from store: ScrollbackStore) async throws -> OutboxEventData {
        guard let first = events.first else { return OutboxEventData() }
        var data = OutboxEventData()
        let seqs = events.filter { $0.type.hasPrefix("message.") || $0.type == "reaction.changed" }.compactMap(\.seq)
        data.messages = try await store.messages(in: first.conversationID, at: Array(Set(seqs)))
        if events.contains(where: { $0.type == "conversation.created" }) {
            data.conversation = try await store.conversationForEvent(first.conversationID)
        }
        let reports = events.filter { $0.type == "report.created" }.compactMap { $0.subject.flatMap(UUID.init(uuidString:)) }
        if !reports.isEmpty { data.reports = try await store.reportsForEvents(reports) }
        let users = events.filter { $0.type == "user.updated" }.compactMap(\.user)
        if !users.isEmpty { data.users = try await store.profiles(named: Set(users)) }
        let updated = events.filter { $0.type == "member.updated" }.compactMap(\.user)
        if !updated.isEmpty {
            data.memberData = try await store.memberData(in: first.conversationID, of: Array(Set(updated)))
        }
        return data
    }

    struct Missing: Error, CustomStringConvertible {
        var description: String
    }

    /// The event as a webhook's body.
    func webhookEvent(of event: OutboxEvent) throws -> WebhookEvent {
        guard let type = WebhookEvent.EventType(rawValue: event.type) else {
            throw Missing(description: "an event of an unknown type \(event.type)")
        }
        let payload: WebhookEvent.EventData
        switch type {
        case .messageCreated, .messageEdited, .messageDeleted, .reactionChanged:
            guard let seq = event.seq, let message = messages[seq] else {
                throw Missing(description: "the message of event \(event.event) is not stored")
            }
            payload = .message(message)
        case .memberAdded, .memberRemoved:
            payload = .member(MemberEventData(userId: event.user?.rawValue ?? ""))
        case .memberUpdated:
            payload = .member(
                MemberEventData(
                    userId: event.user?.rawValue ?? "", role: event.subject.flatMap(MemberRole.init(rawValue:)),
                    data: event.user.flatMap { memberData[$0.rawValue] }))
        case .reportCreated:
            guard let id = event.subject.flatMap(UUID.init(uuidString:)), let report = reports[id] else {
                throw Missing(description: "the report of event \(event.event) is not stored")
            }
            payload = .report(report)
        case .readMoved:
            payload = .member(MemberEventData(userId: event.user?.rawValue ?? "", readSeq: event.seq))
        case .conversationCreated:
            guard let conversation else {
                throw Missing(description: "the conversation of event \(event.event) is not stored")
            }
            payload = .conversation(conversation)
        case .userUpdated:
            guard let user = event.user else { throw Missing(description: "event \(event.event) names no user") }
            payload = .user(users[user.rawValue] ?? .bare(user.rawValue))
        }
        return WebhookEvent(
            id: "\(event.event)", type: type, createdAt: event.createdAt, conversationId: event.conversationID,
            version: event.version, seq: event.seq, data: payload)
    }

    func webhookBody(of event: OutboxEvent) throws -> [UInt8] {
        Array(try Self.encoder.encode(webhookEvent(of: event)))
    }

    private static let encoder = ScrollbackJSON.encoder()
}
