import Foundation
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Retention on real instances: a conversation's own, and the server's
/// default applied by the running sweeper.
@Suite struct RetentionAPITests {
    /// `count` messages of which the first `old` are `days` days old.
    static func history(_ cluster: LiveCluster, _ id: UUID, count: Int, old: Int, days: Int) async throws {
        try await cluster.insertMessages(count, into: id, from: "alice")
        _ = try await TestDatabase.otherConnection(to: cluster.store) { connection in
            try await connection.query(
                """
                UPDATE messages SET created_at = now() - make_interval(days => \(Int32(days))) + seq * interval '1 second'
                WHERE conversation_id = \(id) AND seq <= \(Int64(old))
                """,
                logger: connection.logger
            ).collect()
        }
    }

    @Test func aConversationsRetentionRemovesItsOldMessagesAndMovesFirstSeq() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "policy", ttl: 600)
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await Self.history(cluster, id, count: 2500, old: 2100, days: 40)
            #expect(try await cluster.request(.PUT, "/v1/conversations/\(id)/messages/5/reactions/👍", as: "bob").status == 200)
            let before = try await cluster.store.page(of: id, for: "bob", anchor: .newest, limit: 10, minVersion: 0)

            let set = try await cluster.request(.PUT, "/v1/admin/conversations/\(id)/retention", token: server, body: #"{"days": 30}"#)
            #expect(set.status == 200)
            #expect(try set.decode(ConversationRetention.self) == ConversationRetention(conversationId: id, retentionDays: 30, firstSeq: 1))
            let bad = try await cluster.request(.PUT, "/v1/admin/conversations/\(id)/retention", token: server, body: #"{"days": -1}"#)
            #expect(bad.status == 422)
            #expect(try await cluster.request(.PUT, "/v1/admin/conversations/\(UUID())/retention", token: server, body: #"{"days": 1}"#).status == 404)
            #expect(try await cluster.request(.PUT, "/v1/admin/conversations/\(id)/retention", as: "alice", body: #"{"days": 1}"#).status == 403)

            // An untouched conversation keeps everything: no default is set.
            let other = try await cluster.conversation("carol", members: ["dave"])
            try await Self.history(cluster, other, count: 50, old: 50, days: 400)

            #expect(try await cluster.store.sweepRetention(defaultDays: nil, batch: 500) == 2100)
            #expect(try await cluster.store.sweepRetention(defaultDays: nil, batch: 500) == 0)

            let oldest = try await cluster.request(.GET, "/v1/conversations/\(id)/messages?after=0&limit=5", as: "bob").decode(MessagePage.self)
            #expect(oldest.firstSeq == 2101 && !oldest.hasOlder && oldest.messages.map(\.seq).min() == 2101)
            let below = try await cluster.request(.GET, "/v1/conversations/\(id)/messages?before=2101", as: "bob").decode(MessagePage.self)
            #expect(below.messages.isEmpty && !below.hasOlder && below.hasNewer)
            let newest = try await cluster.request(.GET, "/v1/conversations/\(id)/messages?limit=10", as: "bob").decode(MessagePage.self)
            #expect(newest.messages.first?.seq == 2500 && newest.version > before.version && newest.firstSeq == 2101)
            // Jumping to a date before the horizon lands on the horizon.
            let jumped = try await cluster.store.seq(at: Date(timeIntervalSinceNow: -50 * 86_400), in: id, for: "bob")
            #expect(jumped == 2101)
            let changes = try await cluster.store.changes(in: id, for: "bob", since: before.version, limit: 100)
            #expect(changes.firstSeq == 2101)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM reactions").first == 0)
            let listed = try await cluster.request(.GET, "/v1/conversations/\(id)", as: "bob").decode(Conversation.self)
            #expect(listed.firstSeq == 2101 && listed.lastSeq == 2500)
            let untouched = try await cluster.store.page(of: other, for: "carol", anchor: .newest, limit: 100, minVersion: 0)
            #expect(untouched.messages.count == 50 && untouched.firstSeq == 1)
            // Kept forever (0), whatever the default says.
            _ = try await cluster.request(.PUT, "/v1/admin/conversations/\(other)/retention", token: server, body: #"{"days": 0}"#)
            #expect(try await cluster.store.sweepRetention(defaultDays: 30) == 0)
        }
    }

    /// The server's default, applied by the sweeper every instance runs.
    @Test func theDefaultRetentionIsAppliedByTheRunningSweeper() async throws {
        try await LiveCluster.run(configure: {
            $0.retentionDays = 7
            $0.retentionSweep = .milliseconds(200)
        }) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await Self.history(cluster, id, count: 30, old: 20, days: 10)
            let deadline = ContinuousClock.now + .seconds(30)
            var page = try await cluster.store.page(of: id, for: "bob", anchor: .newest, limit: 50, minVersion: 0)
            while page.firstSeq == 1, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages?limit=50", as: "bob").decode(MessagePage.self)
            }
            #expect(page.firstSeq == 21 && page.messages.map(\.seq) == Array((21...30).reversed()) && !page.hasOlder)
        }
    }
}
