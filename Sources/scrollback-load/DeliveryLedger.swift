import Foundation
import ScrollbackModels

/// What the load sent and what each subscriber received, and the check of it
/// against the history stored at the end. A pure value: the run records into
/// it, and `check(histories:)` says what was lost, duplicated, reordered or
/// stored without an acknowledgement.
struct DeliveryLedger: Sendable {
    struct Sends: Sendable {
        /// Answered sends: client id to the seq the service gave it.
        var acknowledged: [String: Int64] = [:]
        /// Sends whose answer never came (the retries ran out): each may or
        /// may not be stored, but at most once.
        var unanswered: Set<String> = []
    }

    struct Subscriber: Sendable {
        var conversation: UUID
        var name: String
        /// The conversation's last seq when the subscription first came up:
        /// every message after it must arrive.
        var startedAfter: Int64?
        var delivered: [Delivery] = []
        /// Which opening of the subscription counts (`reopen`).
        var opening = 0
    }

    struct Delivery: Sendable, Equatable {
        var seq: Int64
        var clientId: String?
    }

    struct Violation: Sendable, Equatable, CustomStringConvertible, Encodable {
        /// Lost: acknowledged or stored but missing (from the history or a
        /// subscriber); duplicated: stored or received more than once;
        /// misplaced: anything else out of order or unaccounted for.
        enum Kind: String, Sendable, Encodable { case lost, duplicated, misplaced }

        var conversation: UUID
        var subscriber: String?
        var kind: Kind
        var problem: String

        var description: String {
            "conversation \(conversation.uuidString.lowercased())" + (subscriber.map { ", subscriber \($0)" } ?? "")
                + ": " + problem
        }
    }

    /// The prefix of this run's client ids: a message carrying one that was
    /// never sent by the run is not the run's business.
    let clientIdPrefix: String
    private(set) var sends: [UUID: Sends] = [:]
    private(set) var subscribers: [Int: Subscriber] = [:]

    init(clientIdPrefix: String) {
        self.clientIdPrefix = clientIdPrefix
    }

    mutating func acknowledged(_ clientId: String, seq: Int64, in conversation: UUID) {
        sends[conversation, default: Sends()].acknowledged[clientId] = seq
    }

    mutating func unanswered(_ clientId: String, in conversation: UUID) {
        sends[conversation, default: Sends()].unanswered.insert(clientId)
    }

    mutating func subscribe(_ id: Int, name: String, to conversation: UUID) {
        subscribers[id] = Subscriber(conversation: conversation, name: name)
    }

    /// A subscription came up (again): the first one fixes where delivery starts.
    mutating func connected(_ id: Int, opening: Int = 0, lastSeq: Int64) {
        guard subscribers[id]?.opening == opening else { return }
        if subscribers[id]?.startedAfter == nil { subscribers[id]?.startedAfter = lastSeq }
    }

    /// A message reached subscriber `id` through its opening `opening`; an
    /// earlier opening's is not counted.
    mutating func delivered(_ id: Int, opening: Int = 0, seq: Int64, clientId: String?) {
        guard subscribers[id]?.opening == opening else { return }
        subscribers[id]?.delivered.append(Delivery(seq: seq, clientId: clientId))
    }

    /// Subscriber `id` is opened again, resuming after the position this
    /// returns. The opening it replaces may still hand over a message it had
    /// in hand (cancelling a task does not stop the step it is in), which
    /// the new one, resuming after what was counted, brings again: from
    /// here on only the new opening's count.
    mutating func reopen(_ id: Int) -> (opening: Int, after: Int64?) {
        subscribers[id]?.opening += 1
        return (subscribers[id]?.opening ?? 0, position(of: id))
    }

    /// The highest seq subscriber `id` received, or where it started.
    func position(of id: Int) -> Int64? {
        guard let subscriber = subscribers[id] else { return nil }
        return subscriber.delivered.last?.seq ?? subscriber.startedAfter
    }

    /// Everything that went wrong, given each conversation's whole history
    /// (every message, tombstones included, in any order): nothing when
    /// every acknowledged send is stored once at its seq, seqs are dense,
    /// nothing unacknowledged is stored beyond sends whose answer was lost,
    /// and every subscriber received every message after its start exactly
    /// once, in seq order.
    func check(histories: [UUID: [Message]]) -> [Violation] {
        var violations: [Violation] = []
        let conversations = Set(sends.keys).union(subscribers.values.map(\.conversation))
        for conversation in conversations.sorted(by: { $0.uuidString < $1.uuidString }) {
            func fail(_ kind: Violation.Kind, _ problem: String, _ subscriber: String? = nil) {
                violations.append(Violation(conversation: conversation, subscriber: subscriber, kind: kind, problem: problem))
            }
            guard let history = histories[conversation] else {
                fail(.lost, "its history could not be read")
                continue
            }
            let stored = Dictionary(grouping: history, by: \.seq)
            let lastSeq = history.map(\.seq).max() ?? 0
            if let twice = stored.filter({ $0.value.count > 1 }).keys.min() {
                fail(.duplicated, "seq \(twice) appears more than once in the history")
            }
            let missing = lastSeq > 0 ? (1...lastSeq).filter { stored[$0] == nil } : []
            if !missing.isEmpty { fail(.lost, "the history has gaps at seqs \(Self.list(missing))") }

            let sent = sends[conversation] ?? Sends()
            var storedClientIds: [String: [Int64]] = [:]
            for message in history {
                if let clientId = message.clientId { storedClientIds[clientId, default: []].append(message.seq) }
            }
            for (clientId, seqs) in storedClientIds.sorted(by: { $0.key < $1.key }) where seqs.count > 1 {
                fail(.duplicated, "send \(clientId) is stored \(seqs.count) times (seqs \(Self.list(seqs.sorted())))")
            }
            for (clientId, seq) in sent.acknowledged.sorted(by: { $0.value < $1.value }) {
                guard let seqs = storedClientIds[clientId] else {
                    fail(.lost, "acknowledged send \(clientId) (seq \(seq)) is not in the history")
                    continue
                }
                if !seqs.contains(seq) { fail(.misplaced, "acknowledged send \(clientId) was answered seq \(seq) but is stored at \(Self.list(seqs))") }
            }
            for message in history.sorted(by: { $0.seq < $1.seq }) {
                guard let clientId = message.clientId, clientId.hasPrefix(clientIdPrefix),
                    sent.acknowledged[clientId] == nil, !sent.unanswered.contains(clientId)
                else { continue }
                fail(.misplaced, "seq \(message.seq) (\(clientId)) is stored but was never sent or was refused")
            }

            for subscriber in subscribers.values where subscriber.conversation == conversation {
                guard let start = subscriber.startedAfter else {
                    fail(.lost, "never subscribed", subscriber.name)
                    continue
                }
                let seqs = subscriber.delivered.map(\.seq)
                let expected = start < lastSeq ? Array((start + 1)...lastSeq) : []
                if seqs == expected {
                    for delivery in subscriber.delivered where delivery.clientId != stored[delivery.seq]?.first?.clientId {
                        fail(.misplaced, "seq \(delivery.seq) arrived as \(delivery.clientId ?? "nil") but is stored as another message", subscriber.name)
                    }
                    continue
                }
                let received = Set(seqs)
                let lost = expected.filter { !received.contains($0) }
                let counts = Dictionary(seqs.map { ($0, 1) }, uniquingKeysWith: +)
                let twice = counts.filter { $0.value > 1 }.keys.sorted()
                let unexpected = received.subtracting(expected).sorted()
                if !lost.isEmpty { fail(.lost, "lost seqs \(Self.list(lost))", subscriber.name) }
                if !twice.isEmpty { fail(.duplicated, "received seqs \(Self.list(twice)) more than once", subscriber.name) }
                if !unexpected.isEmpty {
                    fail(.misplaced, "received seqs \(Self.list(unexpected)) outside \(start + 1)...\(lastSeq)", subscriber.name)
                }
                if lost.isEmpty, twice.isEmpty, unexpected.isEmpty,
                    let index = seqs.indices.dropLast().first(where: { seqs[$0] >= seqs[$0 + 1] })
                {
                    fail(.misplaced, "received seq \(seqs[index + 1]) after seq \(seqs[index])", subscriber.name)
                }
            }
        }
        return violations
    }

    /// Seqs as ranges: `1...3, 7`; long lists are cut.
    static func list(_ seqs: [Int64]) -> String {
        var parts: [String] = []
        var index = seqs.startIndex
        while index < seqs.endIndex {
            var end = index
            while end + 1 < seqs.endIndex, seqs[end + 1] == seqs[end] + 1 { end += 1 }
            parts.append(end > index ? "\(seqs[index])...\(seqs[end])" : "\(seqs[index])")
            index = end + 1
        }
        return parts.count > 12 ? parts.prefix(12).joined(separator: ", ") + ", ... (\(parts.count) runs)" : parts.joined(separator: ", ")
    }
}
