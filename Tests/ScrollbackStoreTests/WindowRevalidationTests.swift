import Foundation
import PropertyBased
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// A client holds a window of history, the conversation changes (sends,
/// edits, deletes, sometimes concurrently), and the client applies
/// `changes(since:)` to its window: it must end with exactly what a fresh
/// fetch of the same window returns.
@Suite struct WindowRevalidationTests {
    /// A seeded generator, so a failing seed can be replayed.
    typealias SeededGenerator = Xoshiro

    static let users: [UserID] = ["alice", "bob", "carol"]

    enum Operation: Sendable {
        case send(from: UserID)
        case edit(seq: Int64, by: UserID)
        case delete(seq: Int64, by: UserID)
        case reply(to: Int64, from: UserID)
        case react(seq: Int64, emoji: String, by: UserID, adding: Bool)
    }

    static let emojis = ["👍", "❤️", "😂", "🎉"]

    static func operations(count: Int, knownSeqs: Int64, using rng: inout SeededGenerator) -> [Operation] {
        var seqs = knownSeqs
        return (0..<count).map { _ in
            let user = users.randomElement(using: &rng)!
            let seq = Int64.random(in: 1...max(seqs, 1), using: &rng)
            switch Int.random(in: 0..<14, using: &rng) {
            case 0..<4:
                seqs += 1
                return .send(from: user)
            case 4..<6:
                seqs += 1
                return .reply(to: seq, from: user)
            case 6..<8:
                return .edit(seq: seq, by: user)
            case 8..<10:
                return .delete(seq: seq, by: user)
            default:
                return .react(
                    seq: seq, emoji: emojis.randomElement(using: &rng)!, by: user, adding: Bool.random(using: &rng))
            }
        }
    }

    /// Runs an operation; refusals (not the sender, already deleted, ...) are
    /// normal outcomes here. Returns how many versions it took: a reply
    /// takes two (the reply, then its thread's root), a refusal none.
    static func run(_ operation: Operation, in id: UUID, store: ScrollbackStore, tag: Int) async throws -> Int {
        do {
            switch operation {
            case .send(let user):
                _ = try await store.send(to: id, from: user, body: "sent \(tag) by \(user)", clientID: nil)
            case .reply(let seq, let user):
                // A reply to a message that does not exist yet is refused; to an
                // existing one it joins (or starts) the thread.
                _ = try await store.send(
                    to: id, from: user, body: "reply \(tag) by \(user)", clientID: nil, replyTo: seq)
                return 2
            case .edit(let seq, let user):
                _ = try await store.edit(seq, in: id, by: user, body: "edit \(tag) by \(user)")
            case .delete(let seq, let user):
                if case .alreadyDeleted = try await store.delete(seq, in: id, by: user) { return 0 }
            case .react(let seq, let emoji, let user, let adding):
                return try await store.react(emoji, to: seq, in: id, by: user, adding: adding).changed ? 1 : 0
            }
            return 1
        } catch let error as StoreError {
            switch error {
            case .forbidden, .messageDeleted, .messageNotFound, .replyTargetMissing, .replyTargetDeleted: return 0
            default: throw error
            }
        }
    }

    /// What a client does with a change it applies: the message replaces the
    /// one it holds, and the replies it holds to that message show it anew
    /// (a preview is the parent as it is now).
    static func apply(_ message: Message, to window: inout [Message], range: ClosedRange<Int64>) {
        if range.contains(message.seq) { window[Int(range.upperBound - message.seq)] = message }
        for index in window.indices where window[index].replyTo?.seq == message.seq {
            window[index].replyTo = ReplyPreview(of: message)
        }
    }

    static func randomAnchor(lastSeq: Int64, using rng: inout SeededGenerator) -> PageAnchor {
        let seq = Int64.random(in: 1...max(lastSeq, 1), using: &rng)
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return .newest
        case 1: return .before(seq + 1)
        case 2: return .after(seq - 1)
        default: return .around(seq)
        }
    }

    static let seeds: [UInt64] = Array(1...40)

    @Test(arguments: seeds)
    func applyingChangesToAWindowEqualsAFreshFetch(seed: UInt64) async throws {
        var rng = SeededGenerator(seed: (seed, 0x5C0_11BA_C4, 7, 11))
        let concurrent = seed % 3 == 0
        try await TestDatabase.withStore(maximumConnections: concurrent ? 8 : 2) { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob", "carol"]).id
            let initial = Int.random(in: 1...60, using: &rng)
            for index in 0..<initial {
                _ = try await store.send(to: id, from: Self.users[index % 3], body: "initial \(index)", clientID: nil)
            }
            // Some history already edited and deleted before the snapshot.
            for operation in Self.operations(count: 10, knownSeqs: Int64(initial), using: &rng) {
                _ = try await Self.run(operation, in: id, store: store, tag: -1)
            }
            let lastSeq = try await store.conversation(id, for: "alice").lastSeq
            let anchor = Self.randomAnchor(lastSeq: lastSeq, using: &rng)
            let snapshot = try await store.page(
                of: id, for: "bob", anchor: anchor, limit: Int.random(in: 1...30, using: &rng))
            try #require(!snapshot.messages.isEmpty)
            var window = snapshot.messages
            let range = window.last!.seq...window.first!.seq

            let operations = Self.operations(
                count: Int.random(in: 10...80, using: &rng), knownSeqs: lastSeq, using: &rng)
            var changed = 0
            if concurrent {
                changed = try await withThrowingTaskGroup(of: Int.self) { group in
                    for (lane, slice) in stride(from: 0, to: operations.count, by: 10).enumerated() {
                        let mine = Array(operations[slice..<min(slice + 10, operations.count)])
                        group.addTask {
                            var count = 0
                            for (index, operation) in mine.enumerated() {
                                count += try await Self.run(operation, in: id, store: store, tag: lane * 100 + index)
                            }
                            return count
                        }
                    }
                    return try await group.reduce(0, +)
                }
            } else {
                for (index, operation) in operations.enumerated() {
                    changed += try await Self.run(operation, in: id, store: store, tag: index)
                }
            }

            // Revalidate with pages of changes of a random size.
            var since = snapshot.version
            var more = true
            while more {
                let changes = try await store.changes(
                    in: id, for: "bob", since: since, limit: Int.random(in: 1...25, using: &rng))
                for message in changes.messages { Self.apply(message, to: &window, range: range) }
                #expect(changes.version >= since)
                since = changes.version
                more = changes.hasMore
            }

            let fresh = try await store.page(
                of: id, for: "bob", anchor: .after(range.lowerBound - 1), limit: range.count)
            #expect(window == fresh.messages, "seed \(seed): \(anchor), window \(range)")
            // Versions are dense: every change took exactly one.
            #expect(fresh.version == snapshot.version + Int64(changed), "seed \(seed)")
            #expect(since == fresh.version)
        }
    }
}
