import Foundation
import NIOConcurrencyHelpers
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// A primary that dies, and a standby promoted in its place, behind a
/// `DATABASE_URL` that names both (`postgres://primary,standby/db`).
@Suite(.serialized, .slotsAhead) struct FailoverTests {
    /// A standby listed first: nothing runs on it, the migrations
    /// included (they would fail there, read-only); the store finds the
    /// server that takes writes before its first statement.
    @Test func aStandbyListedFirstIsPassedOverFromTheStart() async throws {
        try await ReplicatedDatabase.with { db in
            try await TestDatabase.withSchema(on: db.primaryURL) { _, schema in
                var url = db.primaryURL
                url.endpoints = [db.standbyURL.endpoints[0], db.primaryURL.endpoints[0]]
                var options = StoreOptions(maximumConnections: 4, searchPath: schema)
                options.replicaPollInterval = .milliseconds(50)
                let store = ScrollbackStore(url: url, options: options, logger: MetricsTests.logger)
                try await TestDatabase.running(store) {
                    try await store.migrate()
                    #expect(store.primaryEndpoint == db.primaryURL.endpoints[0])
                    let made = try await store.createConversation(creator: "alice", title: nil, members: ["bob"])
                    #expect(try await store.conversation(made.id, for: "bob").id == made.id)
                }
            }
        }
    }

    /// With synchronous replication, eight senders through two instances
    /// keep sending (each send retried with its `client_id` until it is
    /// answered) while the primary is killed and the standby promoted:
    /// every acknowledged send is stored exactly once, at the seq it was
    /// answered with, seqs stay dense, both instances move to the new
    /// primary and listen there, and live delivery works across them.
    @Test func aPromotedStandbyHoldsEveryAcknowledgedSend() async throws {
        try await ReplicatedDatabase.with(synchronous: true) { db in
            try await LiveCluster.run(
                instances: 2, database: db.bothURL, store: { options in
                    options.replicaPollInterval = .milliseconds(50)
                    // A write cut by the crash answers within seconds, as in production.
                    options.statementTimeout = .seconds(5)
                }
            ) { cluster in
                let members = ["u0", "u1", "u2", "u3"]
                var made: [UUID] = []
                for creator in members { made.append(try await cluster.conversation(creator, members: members)) }
                let conversations = made
                let acknowledged = NIOLockedValueBox<[String: (conversation: UUID, seq: Int64)]>([:])
                let stop = NIOLockedValueBox(false)
                let end = ContinuousClock.now + .seconds(90)
                let senders = (0..<8).map { sender in
                    Task {
                        var n = 0
                        while !stop.withLockedValue({ $0 }) && ContinuousClock.now < end {
                            let clientID = "s\(sender)-\(n)"
                            let conversation = conversations[(sender + n) % conversations.count]
                            let body = #"{"body": "m \#(clientID)", "client_id": "\#(clientID)"}"#
                            while ContinuousClock.now < end {
                                let reply = try? await cluster.request(
                                    .POST, "/v1/conversations/\(conversation)/messages", as: members[sender % 4],
                                    body: body, on: (sender + n) % 2)
                                if let reply, reply.status == 201 || reply.status == 200 {
                                    let seq = try reply.decode(MessageEnvelope.self).message.seq
                                    acknowledged.withLockedValue { $0[clientID] = (conversation, seq) }
                                    break
                                }
                                try await Task.sleep(for: .milliseconds(50))
                            }
                            n += 1
                        }
                    }
                }
                try await Task.sleep(for: .seconds(1))
                let beforeCrash = acknowledged.withLockedValue { $0.count }
                try await db.crashPrimary()
                try await Task.sleep(for: .milliseconds(300))
                try await db.promoteStandby()
                try await db.promotedStandbyCommitsAlone()
                // Sends go on against the promoted standby.
                let deadline = ContinuousClock.now + .seconds(30)
                while acknowledged.withLockedValue({ $0.count }) < beforeCrash + 40 {
                    guard ContinuousClock.now < deadline else { break }
                    try await Task.sleep(for: .milliseconds(50))
                }
                stop.withLockedValue { $0 = true }
                for sender in senders { try await sender.value }
                let answered = acknowledged.withLockedValue { $0 }
                #expect(beforeCrash > 10 && answered.count >= beforeCrash + 40, "\(beforeCrash) before, \(answered.count) in all")

                for index in 0..<2 {
                    #expect(cluster.instances[index].store.primaryEndpoint == db.standbyURL.endpoints[0])
                    try await cluster.untilListening(index)
                }
                for conversation in conversations {
                    let rows = try await cluster.store.values(
                        String.self,
                        "SELECT seq || ' ' || client_id FROM messages WHERE conversation_id = \(conversation) ORDER BY seq")
                    let stored = rows.map { $0.split(separator: " ").map(String.init) }
                    let seqs = stored.map { Int64($0[0])! }
                    #expect(seqs == (0..<seqs.count).map { Int64($0) + 1 }, "seqs of \(conversation) not dense")
                    let clientIDs = stored.map { $0[1] }
                    #expect(Set(clientIDs).count == clientIDs.count, "a send stored twice")
                    let expected = answered.filter { $0.value.conversation == conversation }
                    for (clientID, answer) in expected {
                        let index = Int(answer.seq) - 1
                        #expect(
                            index < stored.count && stored[index][1] == clientID,
                            "acknowledged \(clientID) at seq \(answer.seq) is not there")
                    }
                }

                // Live delivery across the instances, through the new primary's feed.
                let socket = try await cluster.connect("u1", to: 1)
                try await cluster.subscribe(socket, to: conversations[0])
                let sent = try await cluster.request(
                    .POST, "/v1/conversations/\(conversations[0])/messages", as: "u0", body: #"{"body": "after"}"#, on: 0)
                #expect(sent.status == 201)
                let frame = try await socket.next(where: { $0.newMessage != nil })
                #expect(frame.newMessage?.body == "after")
                socket.close()
            }
        }
    }
}
