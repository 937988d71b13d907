import Foundation
import ScrollbackModels

/// How an `InboxFeed` performs the effects its reducer asks for: the
/// client's HTTP and shared socket, the storage and the update streams.
/// Every answer goes back to the reducer as an event.
struct InboxFeedEffects: Sendable {
    typealias Runner = EffectRunner<InboxState, InboxBroadcast, InboxEvent, InboxFeedEffect>

    let client: ScrollbackClient
    let storage: (any InboxStorage)?
    /// Conversations a page asks for (nil: the server's default).
    let pageSize: Int?

    func perform(_ effect: InboxFeedEffect, _ broadcast: inout InboxBroadcast) -> Runner.Work {
        let (client, pageSize) = (self.client, self.pageSize)
        switch effect {
        case .restore:
            guard let storage else { return .done(.restored([], failure: nil)) }
            do {
                let rows = try storage.inboxRows()
                // Offline, the rows' users are named from what was kept with them.
                client.profiles.learn(try storage.inboxUsers())
                return .done(.restored(rows, failure: nil))
            } catch {
                return .done(.restored([], failure: "\(error)"))
            }
        case .store(let rows):
            guard let storage else { return .none }
            do {
                let named = Inbox.namedUsers(rows)
                try storage.saveInbox(rows, users: ProfileSet(Array(client.profiles.profiles(of: named).values)))
                return .done(.stored(rows, failure: nil))
            } catch {
                return .done(.stored(rows, failure: "\(error)"))
            }
        case .subscribe:
            return .task { send in
                let ended = await client.runSubscription(.inbox) { input in
                    send(.live(input)).map { effects in
                        effects.lazy.compactMap { if case .steps(let steps) = $0 { steps } else { nil } }.first ?? []
                    }
                }
                _ = send(.subscriptionEnded(ended))
            }
        case .loadPage(let request):
            return .task { send in
                let answer = await Self.fetched(client) { () async throws(ScrollbackError) in
                    try await client.conversations(limit: pageSize, cursor: request.cursor)
                }
                if let answer { _ = send(.pageAnswered(request, answer)) }
            }
        case .loadUnreadCounts:
            return .task { send in
                let answer = await Self.fetched(client) { () async throws(ScrollbackError) in
                    try await client.unreadCounts()
                }
                if let answer { _ = send(.unreadCountsAnswered(answer)) }
            }
        case .fetchConversation(let id):
            return .task { send in
                // Not a member any more: said at once (its `member_removed` comes too).
                let notMember = { (error: ScrollbackError) in if case .notFound = error { true } else { false } }
                let answer = await Self.fetched(client, answeredAtOnce: notMember) { () async throws(ScrollbackError) in
                    try await client.conversation(id)
                }
                if let answer { _ = send(.conversationAnswered(id, answer)) }
            }
        case .publish(let inbox, let change):
            broadcast.publish(inbox, change)
            return .none
        case .end:
            let observers = broadcast.end()
            return .end {
                for observer in observers { observer.finish() }
            }
        case .steps:
            return .none
        }
    }

    /// A read retried by the client's policy. A failure is handed back
    /// only after as long a wait as the policy's last (the inbox may ask
    /// again at once), unless `answeredAtOnce` says it is final; nil when
    /// the feed stops meanwhile.
    static func fetched<Value: Sendable>(
        _ client: ScrollbackClient, answeredAtOnce: (ScrollbackError) -> Bool = { _ in false },
        _ read: () async throws(ScrollbackError) -> Value
    ) async -> Result<Value, ScrollbackError>? {
        do throws(ScrollbackError) {
            return .success(try await client.retrying(read))
        } catch {
            if answeredAtOnce(error) { return .failure(error) }
            do {
                try await client.waitToRetry(client.retry.delay(afterFailure: client.retry.maxAttempts))
            } catch {
                return nil
            }
            return .failure(error)
        }
    }
}

/// The streams of those who follow an inbox feed: each is handed the
/// inbox as it is when it starts, then every change, in order, and is
/// finished when the feed ends. Kept under the runner's lock, with the
/// state it publishes.
struct InboxBroadcast: Sendable {
    private var observers: [AsyncStream<InboxFeed.Update>.Continuation] = []

    /// A stream that starts with `inbox` (its change: every row inserted);
    /// it is finished at once when the feed has `ended`.
    mutating func observe(_ inbox: Inbox, ended: Bool) -> AsyncStream<InboxFeed.Update> {
        let (stream, observer) = AsyncStream.makeStream(of: InboxFeed.Update.self)
        observer.yield((inbox, InboxChange(from: [], to: inbox.conversations)))
        if ended { observer.finish() } else { observers.append(observer) }
        return stream
    }

    mutating func publish(_ inbox: Inbox, _ change: InboxChange) {
        // A stream whose consumer stopped is dropped.
        observers.removeAll { observer in
            if case .terminated = observer.yield((inbox, change)) { true } else { false }
        }
    }

    /// Every stream, taken out to be finished (outside the lock).
    mutating func end() -> [AsyncStream<InboxFeed.Update>.Continuation] {
        defer { observers = [] }
        return observers
    }
}
