import Foundation
import PostgresNIO
import PropertyBased
import ScrollbackModels
@testable import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// `store_sends` runs sends without attachments, replies or slow mode
/// through a statement of their own (`sql/026_lean_sends.sql`). The same
/// random groups of such sends go to a schema at 026 and to one at 025,
/// where the full statement stores them: every answer row and every stored
/// row must be the same in both.
@Suite struct LeanSendTests {
    /// Conversations 1 to 3 (alice and bob in each, carol in the second), and
    /// 4, which does not exist.
    static let members: [[UserID]] = [["alice", "bob"], ["alice", "bob", "carol"], ["bob", "alice"]]
    static let missing = UUID(uuidString: "00000000-0000-4000-8000-00000000abcd")!
    static let senders = ["alice", "bob", "carol", "", "mallory"]
    static let bodies = ["hi", "hello there", "@bob look", "@carol @alice both"]
    static let clientIDs: [String?] = [nil, nil, "c1", "c2", "c3", "c4"]

    struct SendArguments {
        var conversations: [Int]
        var senders: [String]
        var bodies: [String]
        var clientIDs: [String?]
    }

    @Test(arguments: [UInt64(1), 2, 3]) func leanSendsAnswerAndStoreWhatTheFullStatementDoes(seed: UInt64) async throws {
        try await TestDatabase.withStore { lean in
            try await TestDatabase.withStore(migrated: false) { full in
                try await full.migrate(Migration.embedded.filter { $0.version < 26 })
                #expect(Migration.embedded.contains { $0.name == "026_lean_sends" })
                let leanIDs = try await Self.conversations(of: lean)
                let fullIDs = try await Self.conversations(of: full)
                var random = Xoshiro(seed: (seed, seed &* 7, seed &* 71, seed &* 711))
                // Answers seen: stored, a retry of a stored send, not a member (a group that failed counts in none).
                var created = 0
                var retried = 0
                var refused = 0
                for round in 0..<120 {
                    let count = Int.random(in: 1...4, using: &random)
                    let group = SendArguments(
                        conversations: (0..<count).map { _ in Int.random(in: 0...3, using: &random) },
                        senders: (0..<count).map { _ in Self.senders.randomElement(using: &random)! },
                        bodies: (0..<count).map { _ in Self.bodies.randomElement(using: &random)! },
                        clientIDs: (0..<count).map { _ in Self.clientIDs.randomElement(using: &random)! })
                    let answers = try await Self.send(group, on: lean, ids: leanIDs)
                    let expected = try await Self.send(group, on: full, ids: fullIDs)
                    #expect(answers == expected, "round \(round): \(group)")
                    for answer in answers.map({ $0.split(separator: "|", omittingEmptySubsequences: false) }) {
                        if answer.count < 5 { continue }
                        if answer[1] == "f" { refused += 1 } else if answer[4] == "t" { created += 1 } else { retried += 1 }
                    }
                }
                #expect(try await Self.stored(on: lean, ids: leanIDs) == (try await Self.stored(on: full, ids: fullIDs)))
                #expect(try await Self.counters(on: lean, ids: leanIDs) == (try await Self.counters(on: full, ids: fullIDs)))
                // The groups reached every case: new sends, retries, refusals.
                #expect(created > 50 && retried > 5 && refused > 5, "\(created) stored, \(retried) retries, \(refused) refused")
            }
        }
    }

    /// Which statement runs: a send with nothing more takes the lean one,
    /// which reads neither slow mode's last sends nor uploads; a reply, or a
    /// send to a conversation in slow mode, takes the full one, which reads
    /// both. With the two tables locked by another transaction, the first
    /// goes through and the others time out waiting for their locks. (The
    /// test above would pass with a dispatch that never chose the lean
    /// statement; this one would not.)
    @Test func onlySendsWithNothingMoreTakeTheLeanStatement() async throws {
        try await TestDatabase.withStore(lockTimeout: .seconds(1)) { store in
            let ids = try await Self.conversations(of: store)
            _ = try await store.values(
                Int32.self, "UPDATE conversations SET slow_mode_seconds = 30 WHERE id = \(ids[2]) RETURNING 1")
            let plain = SendArguments(conversations: [0, 1], senders: ["alice", "bob"], bodies: ["hi", "there"], clientIDs: [nil, "c1"])
            let slow = SendArguments(conversations: [2], senders: ["bob"], bodies: ["slow"], clientIDs: [nil])
            let replies = SendArguments(conversations: [0, 1], senders: ["alice", "bob"], bodies: ["re", "re"], clientIDs: [nil, "c2"])
            let logger = Logger(label: "test")
            try await TestDatabase.otherConnection(to: store) { locker in
                try await locker.query("BEGIN", logger: logger)
                try await locker.query("LOCK TABLE slow_mode_sends, uploads IN ACCESS EXCLUSIVE MODE", logger: logger)
                let answers = try await Self.send(plain, on: store, ids: ids)
                #expect(answers.map { $0.split(separator: "|", omittingEmptySubsequences: false).dropFirst(4).first } == ["t", "t"], "\(answers)")
                // 55P03: lock_not_available.
                #expect(try await Self.send(slow, on: store, ids: ids) == ["error 55P03"])
                #expect(try await Self.send(replies, on: store, ids: ids, replyingTo: 1) == ["error 55P03"])
                try await locker.query("ROLLBACK", logger: logger)
            }
            // Without the locks, the same calls store.
            #expect(try await Self.send(slow, on: store, ids: ids).count == 1)
            #expect(try await Self.send(replies, on: store, ids: ids, replyingTo: 1).count == 2)
            #expect(try await store.values(Int64.self, "SELECT count(*) FROM messages") == [5])
        }
    }

    /// The conversations of `members` made in `store`, then the missing one.
    static func conversations(of store: ScrollbackStore) async throws -> [UUID] {
        var made: [UUID] = []
        for members in Self.members {
            made.append(try await store.createPlainly(members[0], members: Array(members.dropFirst())))
        }
        return made + [Self.missing]
    }

    /// One call of `store_sends`, as the server makes it for a group (no
    /// attachment; a reply to `parent` when given): each answer row as text, its conversation
    /// named by its place in `ids` (or the error's SQLSTATE).
    static func send(_ group: SendArguments, on store: ScrollbackStore, ids: [UUID], replyingTo parent: Int64? = nil)
        async throws -> [String]
    {
        let conversations = group.conversations.map { ids[$0] }
        do {
            return try await store.values(
                String.self,
                """
                SELECT concat_ws('|', send_position, is_member, parent_state, attachments_usable, created, same_body,
                                 array_position(\(ids)::uuid[], conversation_id), seq, conversation_version,
                                 coalesce(slow_wait::text, '-'))
                FROM store_sends(\(conversations)::uuid[], \(group.senders)::text[], \(group.bodies)::text[],
                                 array_replace(\(group.clientIDs.map { $0 ?? "" })::text[], '', NULL),
                                 array_fill(\(parent)::int8, ARRAY[\(Int32(group.senders.count))]), '{}', '{}', 10,
                                 ARRAY['owner', 'admin'])
                ORDER BY send_position
                """)
        } catch let error as PSQLError {
            return ["error \(error.serverInfo?[.sqlState] ?? "?")"]
        }
    }

    /// Every message of the conversations, whole but for its time.
    static func stored(on store: ScrollbackStore, ids: [UUID]) async throws -> [String] {
        try await store.values(
            String.self,
            """
            SELECT array_position(\(ids)::uuid[], conversation_id) || ' '
                   || (to_jsonb(m) - 'conversation_id' - 'created_at' - 'data' - 'type')::text
            FROM messages m ORDER BY array_position(\(ids)::uuid[], conversation_id), seq
            """)
    }

    /// Each conversation's counters.
    static func counters(on store: ScrollbackStore, ids: [UUID]) async throws -> [String] {
        try await store.values(
            String.self,
            """
            SELECT concat_ws('|', array_position(\(ids)::uuid[], id), last_seq, version, first_seq, slow_mode_seconds)
            FROM conversations ORDER BY array_position(\(ids)::uuid[], id)
            """)
    }
}
