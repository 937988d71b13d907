import AsyncHTTPClient
import Foundation
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// The push gateway (`SCROLLBACK_PUSH_GATEWAY_URL`): for each new message,
/// one signed POST per recipient (`PushNotification`: their devices, the
/// conversation, the sender, an excerpt unless the content is withheld, and
/// the counts their inbox shows); for a read marker that moved, a silent
/// counts update to the reader's devices. Recipients a retry already
/// reached are skipped; tokens the gateway answers as rejected are removed.
struct PushDestination: OutboxDestination {
    let sink = OutboxSink.push
    let poster: SignedPost
    /// `SCROLLBACK_PUSH_CONTENT=none`: no excerpt.
    let withholdContent: Bool
    /// `SCROLLBACK_PUSH_WHEN=always`: also to users with a live socket.
    let evenOnline: Bool
    let store: ScrollbackStore

    func deliver(
        _ events: [OutboxEvent], delivered: @Sendable (OutboxEvent) async throws -> Void,
        reached: @Sendable (OutboxEvent, [String]) async throws -> Void
    ) async throws -> DeliveryFailure? {
        for event in events {
            var done: [String] = []
            do {
                for notification in try await notifications(for: event) {
                    if let reason = await post(notification, attempt: event.attempts + 1) {
                        return DeliveryFailure(event: event, reason: reason, done: done)
                    }
                    done.append(notification.userId)
                    // Recorded at once, with the lease renewed: a push to
                    // many takes longer than one lease.
                    try await reached(event, [notification.userId])
                }
            } catch let lost as ClaimLost {
                throw lost
            } catch {
                return DeliveryFailure(event: event, reason: "the push could not be prepared: \(error)", done: done)
            }
            try await delivered(event)
        }
        return nil
    }

    /// What `event` sends (nothing for the kinds push ignores).
    func notifications(for event: OutboxEvent) async throws -> [PushNotification] {
        switch event.type {
        case "message.created":
            guard let seq = event.seq, let sender = event.user else { return [] }
            let message = try await store.messages(in: event.conversationID, at: [seq])[seq]
            guard let message, !message.deleted else { return [] }
            let recipients = try await store.pushRecipients(
                of: seq, in: event.conversationID, sender: sender, excluding: event.doneUsers, evenOnline: evenOnline)
            let excerpt = withholdContent ? nil : String(message.body.prefix(APILimits.replyExcerptLength))
            return recipients.map { recipient in
                PushNotification(
                    id: "\(event.event):\(recipient.user.rawValue)", eventId: "\(event.event)", type: .message,
                    userId: recipient.user.rawValue, devices: recipient.devices, conversationId: event.conversationID,
                    seq: seq, sender: sender.rawValue, excerpt: excerpt, mention: recipient.mentioned,
                    attachments: message.attachments.count, counts: recipient.counts)
            }
        case "read.moved":
            guard let reader = event.user, !event.doneUsers.contains(reader.rawValue),
                let recipient = try await store.pushCounts(for: reader)
            else { return [] }
            return [
                PushNotification(
                    id: "\(event.event):\(reader.rawValue)", eventId: "\(event.event)", type: .counts,
                    userId: reader.rawValue, devices: recipient.devices, conversationId: event.conversationID,
                    seq: event.seq, sender: nil, excerpt: nil, mention: false, attachments: 0,
                    counts: recipient.counts)
            ]
        default:
            return []
        }
    }

    /// Nil on success, else why not.
    func post(_ notification: PushNotification, attempt: Int) async -> String? {
        let body: [UInt8]
        do {
            body = Array(try Self.encoder.encode(notification))
        } catch {
            return "\(error)"
        }
        let headers = [
            ("Scrollback-Event-Id", notification.id), ("Scrollback-Event-Type", "push.\(notification.type.rawValue)"),
            ("Scrollback-Attempt", "\(attempt)"),
        ]
        switch await poster.send(body, headers: headers) {
        case .failure(let failure):
            return failure.reason
        case .success(let answer):
            if let answer, answer.readableBytes > 0,
                let rejected = try? Self.decoder.decode(PushGatewayAnswer.self, from: Data(answer.readableBytesView)),
                !rejected.rejected.isEmpty
            {
                try? await store.removeDevices(of: UserID(rawValue: notification.userId), withTokens: rejected.rejected)
            }
            return nil
        }
    }

    private static let encoder = ScrollbackJSON.encoder()
    private static let decoder = ScrollbackJSON.decoder()
}
