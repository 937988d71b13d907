import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackTimeline

/// How a `ConversationFeed` performs the effects its reducer asks for: the
/// client's HTTP and shared socket, the storage, the update streams and the
/// callers waiting for sends. Every read is retried until it is answered
/// (`untilAnswered`); its answer goes back to the reducer as an event.
struct FeedEffects: Sendable {
    typealias Runner = EffectRunner<FeedState, Context, FeedEvent, FeedEffect>

    /// What the effects keep that is not the feed's state.
    struct Context: Sendable {
        var subscribers: [Int: AsyncStream<ConversationFeed.Update>.Continuation] = [:]
        var nextSubscriber = 0
        /// Callers waiting for a send's outcome, by client id.
        var promises: [String: SendPromise] = [:]

        mutating func promise(for clientId: String) -> SendPromise {
            if let promise = promises[clientId] { return promise }
            let promise = SendPromise()
            promises[clientId] = promise
            return promise
        }
    }

    let client: ScrollbackClient
    let storage: (any FeedStorage)?
    let conversationId: UUID
    let pageSize: Int

    func perform(_ effect: FeedEffect, _ context: inout Context) -> Runner.Work {
        let (client, id, limit) = (self.client, conversationId, pageSize)
        switch effect {
        case .restore(let opening):
            guard let storage else { return .done(.restored(opening, window: nil, outbox: [], failure: nil)) }
            do {
                let window = try storage.openWindow(of: id)
                // Offline, the window's senders are named from what was kept with it.
                if let window { client.profiles.learn(window.users) }
                return .done(.restored(opening, window: window, outbox: try storage.outbox(of: id), failure: nil))
            } catch {
                return .done(.restored(opening, window: nil, outbox: [], failure: "\(error)"))
            }
        case .store(let write):
            guard let storage else { return .none }
            do {
                switch write {
                case .put(let entry): try storage.put(entry)
                case .remove(let entries): try storage.removeOutboxEntries(clientIds: entries, in: id)
                case .save(var changes, _):
                    // The profiles of the senders, as the client knows them now.
                    let named = Message.namedUsers(changes.messages.lazy.map { ($0.sender, $0.replyTo?.sender) })
                    changes.users = Array(client.profiles.profiles(of: named.map(\.rawValue)).values)
                    try storage.save(changes)
                case .forget: try storage.forget(id)
                }
                return .done(.stored(write, failure: nil))
            } catch {
                return .done(.stored(write, failure: "\(error)"))
            }
        case .open(let opening, let jump, let initial):
            return .task { send in
                let first = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                    try await Self.firstPage(client, id, opening, limit: limit)
                }
                _ = send(.opened(opening, jump: jump, initial: initial, first))
            }
        case .readMarker(let opening):
            return .task { send in
                let answer = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                    try await client.conversation(id)
                }
                // A refusal ends the live stream, which says why.
                guard case .success(let conversation)? = answer else { return }
                _ = send(.markerRead(conversation, opening))
            }
        case .fetch(let request, let window):
            return .task { send in
                let answer = await Self.untilAnswered(client) { () async throws(ScrollbackError) -> TimelineAction in
                    switch request {
                    case .loadOlder(let before): .pageLoaded(try await client.page(of: id, .before(before), limit: limit))
                    case .loadNewer(let after): .pageLoaded(try await client.page(of: id, .after(after), limit: limit))
                    // A change set with `has_more` makes the timeline ask for the next.
                    case .catchUp(let version): .changesApplied(try await client.changes(in: id, since: version))
                    // The reducer asks for fills as `fillPage`, page by page; a fill asked for here reads its first.
                    case .fillGap(let after, _): .pageLoaded(try await client.page(of: id, .after(after), limit: limit))
                    }
                }
                _ = send(.fetched(request, window: window, answer))
            }
        case .fillPage(let fill, let after, let window):
            return .task { send in
                let answer = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                    try await client.page(of: id, .after(after), limit: limit)
                }
                _ = send(.filled(fill: fill, after: after, window: window, answer))
            }
        case .readPresence(let read):
            return .task { send in
                let members = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                    try await client.presence(of: id)
                }
                _ = send(.presenceRead(read: read, members))
            }
        case .deliver(let entry):
            return .task { send in
                // The answer is recorded before the lane is let go.
                await OutboxDelivery.holding(entry.conversationId, sender: entry.sender) {
                    _ = send(.sent(entry, await OutboxDelivery.send(entry, client)))
                }
            }
        case .subscribe:
            return .task { send in
                let ended = await client.runSubscription(.conversation(id)) { input in
                    guard let effects = send(.live(input)) else { return nil }
                    for case .answer(.steps(let steps)) in effects { return steps }
                    return []
                }
                _ = send(.subscriptionEnded(ended))
            }
        case .publish(let state, let update):
            for subscriber in context.subscribers.values { subscriber.yield((state, update)) }
            return .none
        case .settle(let clientId, let result):
            guard let promise = context.promises.removeValue(forKey: clientId) else { return .none }
            return .afterwards { promise.settle(result) }
        case .end:
            let (subscribers, promises) = (Array(context.subscribers.values), Array(context.promises.values))
            context.subscribers = [:]
            context.promises = [:]
            return .end {
                // Sends not answered stay in the storage's outbox, for the next feed.
                for promise in promises { promise.settle(.failure(.cancelled)) }
                // Outside the lock: finishing runs each stream's termination
                // handler, which takes the lock.
                for subscriber in subscribers { subscriber.finish() }
            }
        case .answer:
            return .none
        }
    }

    static func firstPage(_ client: ScrollbackClient, _ id: UUID, _ opening: ConversationFeed.Opening, limit: Int)
        async throws(ScrollbackError) -> FirstPage
    {
        switch opening {
        case .newest:
            return FirstPage(page: try await client.page(of: id, .newest, limit: limit))
        case .message(let seq):
            return FirstPage(page: try await client.page(of: id, .around(seq), limit: limit), focus: seq)
        case .firstUnread:
            let conversation = try await client.conversation(id)
            guard let first = FeedStep.firstUnread(readSeq: conversation.readSeq, lastSeq: conversation.lastSeq) else {
                return FirstPage(page: try await client.page(of: id, .newest, limit: limit), readSeq: conversation.readSeq)
            }
            return FirstPage(
                page: try await client.page(of: id, .around(first), limit: limit), focus: first, firstUnread: first,
                readSeq: conversation.readSeq)
        }
    }

    /// A read retried until it is answered: by the client's retry policy,
    /// then again after its longest wait, for as long as the task runs (a
    /// server restarting, a connection cut). Nil once cancelled; a refusal
    /// is returned as the failure.
    static func untilAnswered<Value: Sendable>(
        _ client: ScrollbackClient, _ read: @Sendable () async throws(ScrollbackError) -> Value
    ) async -> Result<Value, ScrollbackError>? {
        while !Task.isCancelled {
            do throws(ScrollbackError) {
                return .success(try await client.retrying(read))
            } catch {
                guard error.isRetryable else { return .failure(error) }
                try? await client.waitToRetry(client.retry.delay(afterFailure: client.retry.maxAttempts))
            }
        }
        return nil
    }
}

/// The outcome of one send of the outbox, for the callers waiting for it.
final class SendPromise: Sendable {
    private typealias Outcome = Result<ScrollbackClient.SendResult, ScrollbackError>
    private let state = NIOLockedValueBox<(Outcome?, [CheckedContinuation<Outcome, Never>])>((nil, []))

    func settle(_ result: Result<ScrollbackClient.SendResult, ScrollbackError>) {
        let waiting = state.withLockedValue { state -> [CheckedContinuation<Outcome, Never>] in
            guard state.0 == nil else { return [] }
            state.0 = result
            defer { state.1 = [] }
            return state.1
        }
        for continuation in waiting { continuation.resume(returning: result) }
    }

    func outcome() async throws(ScrollbackError) -> ScrollbackClient.SendResult {
        let result = await withCheckedContinuation { continuation in
            let settled = state.withLockedValue { state in
                if state.0 == nil { state.1.append(continuation) }
                return state.0
            }
            if let settled { continuation.resume(returning: settled) }
        }
        return try result.get()
    }
}
