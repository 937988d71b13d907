import Foundation
import ScrollbackModels

extension ScrollbackClient {
    /// What `sendWaiting(from:)` did.
    public struct WaitingSends: Sendable, Equatable {
        /// The messages as the server has them now, one for each entry sent
        /// (a send, an edit, a deletion, a reaction), in each conversation's
        /// order.
        public var sent: [Message] = []
        /// The entries the server refused (not a member any more, a body
        /// refused): they stay in the outbox, marked failed, for a feed's
        /// `retry` or `discard`.
        public var refused: [OutboxEntry] = []
        /// The last error of the storage, if a read or a write failed; an
        /// entry whose answer could not be written is sent again by the next
        /// sender, and its client id makes that harmless.
        public var storageFailure: String?

        public init(sent: [Message] = [], refused: [OutboxEntry] = [], storageFailure: String? = nil) {
            self.sent = sent
            self.refused = refused
            self.storageFailure = storageFailure
        }
    }

    /// Sends everything waiting in the outboxes of `storage` (an
    /// `OfflineStore`), without opening a feed of each conversation: at
    /// launch, for sends written before the app was stopped. Each
    /// conversation's entries go one at a time, oldest first, each with its
    /// client id, by the same rules as a feed's outbox: an error that can
    /// pass (no connection, 503 `outcome_unknown`, 429) keeps an entry
    /// waiting and it is sent again until the server answers; only a
    /// refusal marks it failed. Conversations are sent in parallel.
    ///
    /// A feed of the same conversation running meanwhile is not raced: the
    /// two take turns, one entry at a time, and each reads the outbox again
    /// before its turn, so no entry goes out while another is under way and
    /// the order holds.
    ///
    /// Returns once every outbox is empty or holds only refused entries
    /// (with the server away, that is when it comes back); throws
    /// `cancelled` when the task is cancelled first, the entries not sent
    /// staying in the outbox.
    @discardableResult
    public func sendWaiting(from storage: any FeedStorage) async throws(ScrollbackError) -> WaitingSends {
        let conversations: [UUID]
        do {
            conversations = try storage.conversationsWithOutbox()
        } catch {
            return WaitingSends(storageFailure: "\(error)")
        }
        let passes = await withTaskGroup(of: (Int, WaitingSends).self) { group in
            for (index, id) in conversations.enumerated() {
                group.addTask { (index, await self.sendWaiting(in: id, from: storage)) }
            }
            var passes: [(Int, WaitingSends)] = []
            for await pass in group { passes.append(pass) }
            return passes.sorted { $0.0 < $1.0 }.map(\.1)
        }
        if Task.isCancelled { throw .cancelled }
        var all = WaitingSends()
        for pass in passes {
            all.sent += pass.sent
            all.refused += pass.refused
            all.storageFailure = pass.storageFailure ?? all.storageFailure
        }
        return all
    }

    /// Sends everything waiting in the outboxes of `storage`, the result on
    /// the client's `completionQueue`; see the async `sendWaiting(from:)`.
    /// Cancelling the returned task leaves what was not sent waiting.
    @discardableResult
    public func sendWaiting(from storage: any FeedStorage, completion: @escaping Completion<WaitingSends>)
        -> Task<Void, Never>
    {
        complete(completion) { () async throws(ScrollbackError) in try await self.sendWaiting(from: storage) }
    }

    /// One conversation's outbox, entry after entry, until nothing in it waits.
    private func sendWaiting(in id: UUID, from storage: any FeedStorage) async -> WaitingSends {
        var pass = WaitingSends()
        // Entries whose answer could not be written: not sent again in this pass.
        var unrecorded: Set<String> = []
        while !Task.isCancelled {
            let sender: String
            do {
                guard let next = OutboxDelivery.next(in: try storage.outbox(of: id), skipping: unrecorded) else { break }
                sender = next.sender
            } catch {
                pass.storageFailure = "\(error)"
                break
            }
            // Under the lane, the outbox is read again: a feed may have sent
            // entries, or added some, since.
            let step = await OutboxDelivery.holding(id, sender: sender) { () async -> Step in
                let entry: OutboxEntry
                do {
                    let waiting = try storage.outbox(of: id).filter { $0.sender == sender }
                    guard let next = OutboxDelivery.next(in: waiting, skipping: unrecorded) else { return .nothingWaits }
                    entry = next
                } catch {
                    return .storageFailed(nil, "\(error)")
                }
                guard let answer = await OutboxDelivery.send(entry, self) else { return .cancelled }
                do {
                    switch answer {
                    case .success(let sent):
                        try storage.removeOutboxEntry(clientId: entry.clientId, in: id)
                        return .sent(sent.message)
                    case .failure(let error):
                        let refused = OutboxDelivery.refused(entry, error)
                        try storage.put(refused)
                        return .refused(refused)
                    }
                } catch {
                    return .storageFailed(entry.clientId, "\(error)")
                }
            }
            switch step {
            case .sent(let message): pass.sent.append(message)
            case .refused(let entry): pass.refused.append(entry)
            case .nothingWaits: continue  // what waited was sent by another sender; read again
            case .cancelled: return pass
            case .storageFailed(let clientId, let failure):
                pass.storageFailure = failure
                guard let clientId else { return pass }
                unrecorded.insert(clientId)
            }
        }
        return pass
    }

    /// One turn of a pass over an outbox.
    private enum Step: Sendable {
        case sent(Message)
        case refused(OutboxEntry)
        case nothingWaits
        case cancelled
        /// The storage threw: after sending the entry (its client id), or before.
        case storageFailed(String?, String)
    }
}
