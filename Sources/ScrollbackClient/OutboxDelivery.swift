import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels

/// The rules of an outbox, in one place for every sender of one (a
/// `ConversationFeed`'s pump, `ScrollbackClient.sendWaiting(from:)`): which
/// entry goes next, how it is sent, what an answer does to it, and that a
/// conversation's entries go one at a time, across every sender in the
/// process (so two senders of one outbox never send at once, and the order
/// they were written in holds).
enum OutboxDelivery {
    /// The entry to send next: the oldest that waits (a refused one waits
    /// for `retry` or `discard`, and does not hold back those after it).
    static func next(in outbox: [OutboxEntry], skipping skipped: Set<String> = []) -> OutboxEntry? {
        outbox.first { $0.failure == nil && !skipped.contains($0.clientId) }
    }

    /// The entry as refused: it stays in the outbox with why, for `retry`
    /// or `discard`.
    static func refused(_ entry: OutboxEntry, _ error: ScrollbackError) -> OutboxEntry {
        var entry = entry
        entry.failure = error.localizedDescription
        return entry
    }

    /// Sends `entry` until the server answers: an error that can pass (no
    /// connection, a cut one, 503 `outcome_unknown`, 429) is tried again for
    /// as long as the task runs, never a failure; a refusal is the answer.
    /// Nil when the task was cancelled first. Run it holding the entry's lane.
    static func send(_ entry: OutboxEntry, _ client: ScrollbackClient) async
        -> Result<ScrollbackClient.SendResult, ScrollbackError>?
    {
        guard !Task.isCancelled else { return nil }
        return await FeedEffects.untilAnswered(client) { () async throws(ScrollbackError) in
            try await perform(entry, client)
        }
    }

    /// Holds the lane of `sender`'s outbox of `conversation` while `body`
    /// runs: from before a send until its answer is recorded, so no other
    /// sender of the process sends from that outbox meanwhile.
    static func holding<Value: Sendable>(
        _ conversation: UUID, sender: String, _ body: () async -> Value
    ) async -> Value {
        await lanes.holding(Lane(conversationId: conversation, sender: sender), body)
    }

    /// Sends an entry of the outbox once.
    static func perform(_ entry: OutboxEntry, _ client: ScrollbackClient)
        async throws(ScrollbackError) -> ScrollbackClient.SendResult
    {
        let id = entry.conversationId
        let message: Message
        switch entry.change {
        case nil:
            return try await client.send(
                entry.body, to: id, clientId: entry.clientId, attachments: entry.attachments.map(\.id))
        case .edit(let seq, let body):
            message = try await client.edit(seq, in: id, body: body)
        case .delete(let seq):
            // A message deleted already is answered as it is: a deletion
            // sent again after a lost answer is done.
            message = try await client.delete(seq, in: id)
        case .react(let seq, let emoji):
            message = try await client.react(emoji, to: seq, in: id)
        case .unreact(let seq, let emoji):
            message = try await client.unreact(emoji, from: seq, in: id)
        }
        return ScrollbackClient.SendResult(message: message, replayed: false)
    }

    /// One sender's outbox of one conversation.
    struct Lane: Hashable, Sendable {
        var conversationId: UUID
        var sender: String
    }

    /// The lanes of the process: a send waits for the one before it in its
    /// conversation, whoever sends it.
    static let lanes = Lanes()

    /// Locks by lane, handed over in the order they were asked for.
    final class Lanes: Sendable {
        /// The lanes held, each with the senders waiting for it, first come first.
        private let held = NIOLockedValueBox<[Lane: [CheckedContinuation<Void, Never>]]>([:])

        func holding<Value: Sendable>(_ lane: Lane, _ body: () async -> Value) async -> Value {
            await acquire(lane)
            let value = await body()
            release(lane)
            return value
        }

        private func acquire(_ lane: Lane) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let free = held.withLockedValue { held -> Bool in
                    guard held[lane] != nil else {
                        held[lane] = []
                        return true
                    }
                    held[lane]?.append(continuation)
                    return false
                }
                if free { continuation.resume() }
            }
        }

        private func release(_ lane: Lane) {
            let next = held.withLockedValue { held -> CheckedContinuation<Void, Never>? in
                guard var waiting = held[lane], !waiting.isEmpty else {
                    held[lane] = nil
                    return nil
                }
                let next = waiting.removeFirst()
                held[lane] = waiting
                return next
            }
            next?.resume()
        }
    }
}
