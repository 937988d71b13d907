import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackMeasure
import ScrollbackModels

/// One run of the load against one or more instances of the service, all
/// through `ScrollbackClient`: the users' clients, live subscriptions, sends
/// timed from their scheduled start, what every subscriber received (the
/// `DeliveryLedger`), and the final check against the stored history.
/// A conversation of the run and its members.
typealias Roster = (conversation: UUID, members: [String])

final class LoadRun: Sendable {
    let targets: [String]
    let stats = LoadStats()
    /// Every client id of the run starts with it.
    let runID: String
    private let http: HTTPClient
    private let issuer: TokenIssuer
    private let ledger: NIOLockedValueBox<DeliveryLedger>
    /// Every HTTP attempt and acknowledgement, by fault (`faults` only).
    let faultTable = NIOLockedValueBox(FaultTable(hangAfterSeconds: 15))
    private let scheduled = NIOLockedValueBox([String: ContinuousClock.Instant]())
    private let subscriptions = NIOLockedValueBox([Int: Subscription]())
    /// A delivery for which this answers true is not recorded, as if the
    /// service had dropped it: how a test shows that the check catches a loss.
    private let dropDelivery: @Sendable (_ subscriber: Int, _ message: Message) -> Bool

    private struct Subscription: Sendable {
        var user: String
        var conversation: UUID
        var target: Int
        var task: Task<Void, Never>?
        /// How many times it reported `connected`, and lost its connection.
        var connects = 0
        var drops = 0
        var isUp: Bool { connects > drops }
    }

    init(
        targets: [String], http: HTTPClient, issuer: TokenIssuer,
        dropDelivery: @escaping @Sendable (Int, Message) -> Bool = { _, _ in false }
    ) {
        self.targets = targets
        self.http = http
        self.issuer = issuer
        self.dropDelivery = dropDelivery
        runID = "load-" + String(UUID().uuidString.lowercased().prefix(8))
        ledger = NIOLockedValueBox(DeliveryLedger(clientIdPrefix: runID))
    }

    /// `user`'s client of target `index` (taken modulo the targets, so
    /// callers spread users and conversations over the instances by index).
    /// Sends are retried with their client id until they have a definite
    /// answer or about half a minute has passed.
    func client(_ user: String, target index: Int) -> ScrollbackClient {
        var client = ScrollbackClient(
            baseURL: targets[index % targets.count], http: http,
            retry: RetryPolicy(maxAttempts: 16, initialDelay: .milliseconds(100), maxDelay: .seconds(2)),
            timeout: .seconds(30)
        ) { [issuer] in try await issuer.token(for: user) }
        client.onExchange = { [faultTable] exchange in faultTable.withLockedValue { $0.record(exchange) } }
        return client
    }

    // MARK: Setting up

    func createConversation(creator: String, members: [String], target: Int) async throws -> UUID {
        let started = ContinuousClock.now
        do {
            let conversation = try await client(creator, target: target).createConversation(
                title: "\(runID) load", members: members)
            stats.record(.setup, .now - started)
            return conversation.id
        } catch {
            stats.fail(.setup, error)
            throw LoadFailure("Could not create a conversation through \(targets[target % targets.count]): \(error.errorDescription ?? "\(error)")")
        }
    }

    // MARK: Live subscriptions

    /// Subscribes `user` to `conversation` through target `target` as
    /// subscriber `id`, recording every message it receives.
    func subscribe(_ id: Int, user: String, to conversation: UUID, target: Int) {
        ledger.withLockedValue { $0.subscribe(id, name: "\(user)@\(targets[target % targets.count])", to: conversation) }
        subscriptions.withLockedValue {
            $0[id] = Subscription(user: user, conversation: conversation, target: target)
        }
        open(id, after: nil)
    }

    private func open(_ id: Int, after seq: Int64?, opening: Int = 0) {
        guard let subscription = subscriptions.withLockedValue({ $0[id] }) else { return }
        let stream = client(subscription.user, target: subscription.target).live(
            conversation: subscription.conversation, after: seq)
        let task = Task { [self] in
            var since = ContinuousClock.now
            do {
                for try await event in stream {
                    switch event {
                    case .connected(let lastSeq, _):
                        stats.record(.subscribe, .now - since)
                        ledger.withLockedValue { $0.connected(id, opening: opening, lastSeq: lastSeq) }
                        subscriptions.withLockedValue { $0[id]?.connects += 1 }
                    case .message(let message):
                        delivered(message, to: id, opening: opening)
                    case .disconnected:
                        since = .now
                        subscriptions.withLockedValue { $0[id]?.drops += 1 }
                    case .memberRemoved:
                        stats.fail(.subscribe, "member_removed")
                    case .updated, .read, .typing, .presence, .memberUpdated, .conversationUpdated:
                        break
                    }
                }
            } catch is CancellationError {
            } catch {
                stats.fail(.subscribe, error)
            }
        }
        subscriptions.withLockedValue { $0[id]?.task = task }
    }

    private func delivered(_ message: Message, to id: Int, opening: Int) {
        if dropDelivery(id, message) { return }
        ledger.withLockedValue { $0.delivered(id, opening: opening, seq: message.seq, clientId: message.clientId) }
        if let clientId = message.clientId, let start = scheduled.withLockedValue({ $0[clientId] }) {
            stats.record(.deliver, .now - start)
        }
    }

    /// Drops every subscription's connection at once on the client side and
    /// opens a new one that resumes after the last message it received.
    func reopenAllSubscriptions() {
        let current = subscriptions.withLockedValue { $0 }
        for (id, subscription) in current {
            subscription.task?.cancel()
            subscriptions.withLockedValue { $0[id]?.drops += 1 }
            let (opening, after) = ledger.withLockedValue { $0.reopen(id) }
            open(id, after: after, opening: opening)
        }
    }

    /// How many subscriptions are connected now.
    var connectedCount: Int { subscriptions.withLockedValue { $0.values.filter(\.isUp).count } }

    var subscriptionCount: Int { subscriptions.withLockedValue { $0.count } }

    /// How many times connections were lost, in all.
    var dropCount: Int { subscriptions.withLockedValue { $0.values.reduce(0) { $0 + $1.drops } } }

    /// Waits until every subscription is connected (after at least `drops`
    /// losses in all); false after `limit`.
    func untilConnected(afterDrops drops: Int = 0, within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while connectedCount < subscriptionCount || dropCount < drops {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    func closeSubscriptions() {
        for subscription in subscriptions.withLockedValue({ $0.values }) { subscription.task?.cancel() }
    }

    // MARK: Traffic

    /// One send, scheduled for `start`, with a client id of this run; its
    /// answer goes to the ledger. True when it was acknowledged.
    @discardableResult
    func send(
        _ body: String, to conversation: UUID, as user: String, target: Int, clientId: String,
        scheduledAt start: ContinuousClock.Instant
    ) async -> Bool {
        scheduled.withLockedValue { $0[clientId] = start }
        do {
            let result = try await client(user, target: target).send(body, to: conversation, clientId: clientId)
            stats.record(.send, .now - start)
            ledger.withLockedValue { $0.acknowledged(clientId, seq: result.message.seq, in: conversation) }
            faultTable.withLockedValue { $0.acknowledged() }
            return true
        } catch {
            stats.fail(.send, error)
            // Retries ran out without an answer: it may be stored (once).
            if error.isRetryable { ledger.withLockedValue { $0.unanswered(clientId, in: conversation) } }
            return false
        }
    }

    /// Opens a conversation as a reader does: the newest page, then up to
    /// `pages - 1` older ones.
    func read(_ conversation: UUID, as user: String, target: Int, pages: Int, limit: Int = 50) async {
        let client = client(user, target: target)
        var anchor = ScrollbackClient.PageAnchor.newest
        for _ in 0..<pages {
            let started = ContinuousClock.now
            do {
                let page = try await client.page(of: conversation, anchor, limit: limit)
                stats.record(.page, .now - started)
                guard page.hasOlder, let oldest = page.messages.last?.seq else { return }
                anchor = .before(oldest)
            } catch {
                stats.fail(.page, error)
                return
            }
        }
    }

    /// Marks read what subscriber `id` has received.
    func markRead(subscriber id: Int) async {
        guard let subscription = subscriptions.withLockedValue({ $0[id] }),
            let seq = ledger.withLockedValue({ $0.position(of: id) }), seq > 0
        else { return }
        let started = ContinuousClock.now
        do {
            _ = try await client(subscription.user, target: subscription.target).markRead(seq, in: subscription.conversation)
            stats.record(.read, .now - started)
        } catch {
            stats.fail(.read, error)
        }
    }

    func typing(in conversation: UUID, as user: String, target: Int) async {
        let started = ContinuousClock.now
        do {
            try await client(user, target: target).typing(in: conversation)
            stats.record(.typing, .now - started)
        } catch {
            stats.fail(.typing, error)
        }
    }

    /// Whether target `index` answers `/readyz` with 200 within 2 s.
    func isReady(target index: Int) async -> Bool {
        var request = HTTPClientRequest(url: targets[index % targets.count] + "/readyz")
        request.method = .GET
        guard let response = try? await http.execute(request, timeout: .seconds(2)) else { return false }
        _ = try? await response.body.collect(upTo: 1 << 16)
        return response.status == .ok
    }

    // MARK: The end

    /// Every message of `conversation`, paged back from the newest.
    func history(of conversation: UUID, as user: String, target: Int) async -> [Message]? {
        let client = client(user, target: target)
        var messages: [Message] = []
        var anchor = ScrollbackClient.PageAnchor.newest
        while true {
            let started = ContinuousClock.now
            do {
                let page = try await client.page(of: conversation, anchor, limit: APILimits.pageLimit.upperBound)
                stats.record(.verify, .now - started)
                messages += page.messages
                guard page.hasOlder, let oldest = page.messages.last?.seq else { return messages }
                anchor = .before(oldest)
            } catch {
                stats.fail(.verify, error)
                return nil
            }
        }
    }

    /// After the last send: checks everything (`verify`) and closes the subscriptions.
    func finish(_ conversations: [Roster], drain: Duration = .seconds(30)) async -> [DeliveryLedger.Violation] {
        let violations = await verify(conversations, drain: drain)
        closeSubscriptions()
        return violations
    }

    /// With no send under way: reads each conversation's history (through
    /// its first member), waits up to `drain` for every subscriber to
    /// receive its last message, and checks everything so far.
    func verify(_ conversations: [Roster], drain: Duration = .seconds(30)) async -> [DeliveryLedger.Violation] {
        var histories: [UUID: [Message]] = [:]
        for (index, (conversation, members)) in conversations.enumerated() {
            histories[conversation] = await history(of: conversation, as: members[0], target: index)
        }
        let deadline = ContinuousClock.now + drain
        while ContinuousClock.now < deadline {
            let behind = ledger.withLockedValue { ledger in
                ledger.subscribers.contains { id, subscriber in
                    let last = histories[subscriber.conversation]?.map(\.seq).max() ?? 0
                    return (ledger.position(of: id) ?? -1) < last
                }
            }
            if !behind { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return ledger.withLockedValue { $0.check(histories: histories) }
    }

    /// What was acknowledged and delivered, for the report.
    var ledgerTotals: (acknowledged: Int, unanswered: Int, subscribers: Int) {
        ledger.withLockedValue { ledger in
            (
                ledger.sends.values.reduce(0) { $0 + $1.acknowledged.count },
                ledger.sends.values.reduce(0) { $0 + $1.unanswered.count }, ledger.subscribers.count
            )
        }
    }
}
