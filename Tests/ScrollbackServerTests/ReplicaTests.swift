import Foundation
import NIOConcurrencyHelpers
import NIOHTTP1
import PropertyBased
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Reads from a streaming standby (`SCROLLBACK_REPLICA_URLS`), on a real
/// primary and standby made by `pg_basebackup -R` for each test: a reader
/// never gets a page older than what they wrote or what they say they
/// have seen, whatever the standby has replayed, and a standby that dies
/// costs no read.
@Suite(.serialized, .slotsAhead) struct ReplicaTests {
    /// The instances' stores read from the standby, polled every 20 ms; the
    /// lag allowed is long, so a standby with replay paused stays in the
    /// rotation (what it does not hold is found by routing alone); no page
    /// cache, so newest pages go to the standby too.
    static func reading(from db: ReplicatedDatabase) -> @Sendable (inout StoreOptions) -> Void {
        { options in
            options.replicas = [db.standbyURL]
            options.replicaPollInterval = .milliseconds(20)
            options.replicaMaxLag = .seconds(60)
            options.pageCacheBytes = 0
        }
    }

    struct Readiness: Decodable {
        var status: String
        var replicas: [ReplicaStatus]?
    }

    static func replica(_ cluster: LiveCluster, on index: Int) async throws -> ReplicaStatus {
        let reply = try await cluster.request(.GET, "/readyz", token: "", on: index)
        return try #require(try reply.decode(Readiness.self).replicas?.first)
    }

    /// Waits until the standby holds everything written, and every
    /// instance has seen so and has it in the rotation.
    static func untilServing(_ cluster: LiveCluster, _ db: ReplicatedDatabase) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !(try await db.standbyCaughtUp()) {
            guard ContinuousClock.now < deadline else { throw NotServing() }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Two polls after it caught up, each instance knows.
        try await Task.sleep(for: .milliseconds(100))
        for index in cluster.instances.indices {
            while true {
                let status = try await replica(cluster, on: index)
                if status.up && status.inRotation && (status.lagSeconds ?? 99) < 1 { break }
                guard ContinuousClock.now < deadline else { throw NotServing() }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    struct NotServing: Error {}

    /// Runs `read` on instance `index` until the standby's `counter`
    /// (`served` or `fellBack`) moved: a poll that timed out on a loaded
    /// machine takes the standby out of the rotation until the next one,
    /// and a read made meanwhile goes to the primary without touching it.
    /// Fails after five tries.
    static func counted<T>(
        _ counter: KeyPath<ReplicaStatus, Int>, _ cluster: LiveCluster, on index: Int, _ read: () async throws -> T
    ) async throws -> T {
        for _ in 0..<5 {
            let deadline = ContinuousClock.now + .seconds(10)
            while !(try await replica(cluster, on: index).inRotation), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let before = try await replica(cluster, on: index)[keyPath: counter]
            let result = try await read()
            if try await replica(cluster, on: index)[keyPath: counter] > before { return result }
        }
        throw NotServing()
    }

    static func page(
        _ cluster: LiveCluster, _ id: UUID, as user: String, on index: Int, minVersion: Int64? = nil
    ) async throws -> MessagePage {
        let query = minVersion.map { "?min_version=\($0)" } ?? ""
        let reply = try await cluster.request(.GET, "/v1/conversations/\(id)/messages\(query)", as: user, on: index)
        try #require(reply.status == 200, "\(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
        return try reply.decode(MessagePage.self)
    }

    static func send(_ cluster: LiveCluster, _ body: String, to id: UUID, as user: String, on index: Int) async throws
        -> Message
    {
        let reply = try await cluster.request(
            .POST, "/v1/conversations/\(id)/messages", as: user, body: #"{"body": "\#(body)"}"#, on: index)
        try #require(reply.status == 201, "\(reply.status)")
        return try reply.decode(MessageEnvelope.self).message
    }

    /// Replay paused: the writer reads their message at once, a reader
    /// with `min_version` never gets an older page, a reader with neither
    /// is served by the standby (and gets its older page, as promised), a
    /// conversation the standby has not replayed is read from the primary,
    /// and once replay resumes the standby serves everyone again.
    @Test func theStandbyServesOnlyReadsItHoldsEverythingFor() async throws {
        try await ReplicatedDatabase.with { db in
            try await LiveCluster.run(instances: 2, database: db.primaryURL, store: Self.reading(from: db)) { cluster in
                let id = try await cluster.conversation("alice", members: ["bob", "carol"])
                for n in 1...3 { _ = try await Self.send(cluster, "before \(n)", to: id, as: "alice", on: 0) }
                try await Self.untilServing(cluster, db)
                let first = try await Self.counted(\.served, cluster, on: 1) {
                    try await Self.page(cluster, id, as: "bob", on: 1)
                }
                #expect(first.lastSeq == 3, "bob's page came from the standby")

                try await db.pauseReplay()
                let fourth = try await Self.send(cluster, "while paused", to: id, as: "alice", on: 0)
                #expect(fourth.seq == 4)
                // Alice wrote through instance 0: it reads her write from the primary.
                let own = try await Self.page(cluster, id, as: "alice", on: 0)
                #expect(own.messages.first?.seq == 4 && own.version >= fourth.version)
                // Bob says nothing of what he has seen: the standby answers, as of its replay.
                let stale = try await Self.counted(\.served, cluster, on: 1) {
                    try await Self.page(cluster, id, as: "bob", on: 1)
                }
                #expect(stale.lastSeq == 3, "the standby replayed past its pause")
                // Carol has seen the live frame of seq 4: her min_version takes her to the primary.
                let fresh = try await Self.counted(\.fellBack, cluster, on: 1) {
                    try await Self.page(cluster, id, as: "carol", on: 1, minVersion: fourth.version)
                }
                #expect(fresh.messages.first?.seq == 4 && fresh.version >= fourth.version)
                // Changes since a version the standby does not have come from the primary.
                let changes = try await cluster.request(
                    .GET, "/v1/conversations/\(id)/changes?since_version=\(fourth.version)", as: "carol", on: 1)
                #expect(try changes.decode(ChangeSet.self).version >= fourth.version)
                // A conversation the standby has not replayed at all: 200 from the primary, never 404.
                let made = try await cluster.request(
                    .POST, "/v1/conversations", as: "alice", body: #"{"members": ["bob"]}"#, on: 0)
                let newer = try made.decode(Conversation.self).id
                _ = try await Self.send(cluster, "hello", to: newer, as: "alice", on: 0)
                #expect(try await Self.page(cluster, newer, as: "bob", on: 1).lastSeq == 1)
                // Alice's own conversation list, search and mentions, on the instance she wrote through.
                let list = try await cluster.request(.GET, "/v1/conversations", as: "alice", on: 0)
                #expect(try list.decode(ConversationList.self).conversations.contains { $0.id == newer })
                let search = try await cluster.request(.GET, "/v1/search?q=paused", as: "alice", on: 0)
                #expect(try search.decode(SearchResults.self).hits.map(\.message.seq) == [4])

                try await db.resumeReplay()
                try await Self.untilServing(cluster, db)
                let caughtUp = try await Self.counted(\.served, cluster, on: 1) {
                    try await Self.page(cluster, id, as: "bob", on: 1)
                }
                #expect(caughtUp.lastSeq == 4)
            }
        }
    }

    /// `/metrics` reports the standby: up, its lag, and the reads it
    /// served and those the primary answered instead.
    @Test func theMetricsReportTheStandby() async throws {
        try await ReplicatedDatabase.with { db in
            try await TestDatabase.withSchema(on: db.primaryURL) { url, schema in
                let metrics = ScrollbackMetrics()
                var options = StoreOptions(maximumConnections: 4, searchPath: schema)
                Self.reading(from: db)(&options)
                let store = ScrollbackStore(url: url, options: options, metrics: metrics.factory, logger: MetricsTests.logger)
                try await TestDatabase.running(store) {
                    try await store.migrate()
                    let id = try await store.createConversation(creator: "alice", title: nil, members: ["bob"]).id
                    let deadline = ContinuousClock.now + .seconds(30)
                    while !(try await db.standbyCaughtUp()) || store.replicaStatuses.first?.lagSeconds ?? 99 > 0.5 {
                        guard ContinuousClock.now < deadline else { throw NotServing() }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    _ = try await store.page(of: id, for: "bob", anchor: .newest, limit: 10)
                    // A version the standby cannot have: the primary answers.
                    _ = try await store.page(of: id, for: "bob", anchor: .newest, limit: 10, minVersion: 1_000)
                    let exposition = try Exposition(parsing: String(decoding: metrics.registry.emitToBuffer(), as: UTF8.self))
                    #expect(exposition.value("scrollback_replica_up", ["replica": "1"]) == 1)
                    #expect(exposition.value("scrollback_replica_lag_seconds", ["replica": "1"]).map { $0 < 0.5 } == true)
                    // Counted as the store saw them (a poll that timed out would send a read straight to the primary).
                    let status = try #require(store.replicaStatuses.first)
                    #expect(exposition.value("scrollback_replica_reads_total", ["replica": "1", "result": "served"]) == Double(status.served))
                    #expect(exposition.value("scrollback_replica_reads_total", ["replica": "1", "result": "primary"]) == Double(status.fellBack))
                    #expect(status.served + status.fellBack >= 1)
                }
            }
        }
    }

    /// The standby crashes while two instances read through it: no read
    /// fails, `/readyz` stays ready and reports it down, and once it is
    /// back and caught up it serves again.
    @Test func aStandbyThatDiesCostsNoRead() async throws {
        try await ReplicatedDatabase.with { db in
            try await LiveCluster.run(instances: 2, database: db.primaryURL, store: Self.reading(from: db)) { cluster in
                let id = try await cluster.conversation("alice", members: ["bob"])
                for n in 1...5 { _ = try await Self.send(cluster, "word\(n)", to: id, as: "alice", on: n % 2) }
                try await Self.untilServing(cluster, db)
                let failures = NIOLockedValueBox<[String]>([])
                let reads = NIOLockedValueBox(0)
                let reading = Task {
                    let paths = [
                        "/v1/conversations/\(id)/messages", "/v1/conversations/\(id)/messages?before=3",
                        "/v1/conversations", "/v1/search?q=word2", "/v1/conversations/\(id)/changes?since_version=0",
                    ]
                    let until = ContinuousClock.now + .seconds(4)
                    var n = 0
                    while ContinuousClock.now < until {
                        n += 1
                        let path = paths[n % paths.count]
                        let reply = try await cluster.request(.GET, path, as: "bob", on: n % 2)
                        reads.withLockedValue { $0 += 1 }
                        if reply.status != 200 { failures.withLockedValue { $0.append("\(path): \(reply.status)") } }
                    }
                }
                try await Task.sleep(for: .milliseconds(500))
                try await db.crashStandby()
                try await reading.value
                #expect(failures.withLockedValue { $0 } == [])
                #expect(reads.withLockedValue { $0 } > 20)
                for index in 0..<2 {
                    let reply = try await cluster.request(.GET, "/readyz", token: "", on: index)
                    #expect(reply.status == 200)
                    let status = try #require(try reply.decode(Readiness.self).replicas?.first)
                    #expect(!status.up && !status.inRotation)
                }

                try await db.restartStandby()
                try await db.untilStreaming()
                try await Self.untilServing(cluster, db)
                let again = try await Self.counted(\.served, cluster, on: 0) {
                    try await Self.page(cluster, id, as: "bob", on: 0)
                }
                #expect(again.lastSeq == 5)
            }
        }
    }

    /// Random sends, edits and reads by three users through two instances,
    /// with the standby's replay paused and resumed at random: every page
    /// a user reads is at least at the version they last saw (their own
    /// writes' and earlier pages'), and shows every write acknowledged at
    /// or below its version, in that write's state or a later one.
    @Test(arguments: [UInt64(7), 42]) func noPageIsOlderThanWhatItsReaderHasSeen(seed: UInt64) async throws {
        try await ReplicatedDatabase.with { db in
            try await LiveCluster.run(instances: 2, database: db.primaryURL, store: Self.reading(from: db)) { cluster in
                let users = ["alice", "bob", "carol"]
                let id = try await cluster.conversation("alice", members: ["bob", "carol"])
                try await Self.untilServing(cluster, db)
                var random = Xoshiro(seed: (seed, 5, 9, 13))
                var seen = Dictionary(uniqueKeysWithValues: users.map { ($0, Int64(0)) })
                // Every acknowledged write: seq -> (version, body), in order.
                var ledger: [Int64: [(version: Int64, body: String)]] = [:]
                var mine: [String: [Int64]] = [:]
                var paused = false
                var pages = 0
                for step in 0..<160 {
                    let user = users.randomElement(using: &random)!
                    let instance = Int.random(in: 0...1, using: &random)
                    let roll = Int.random(in: 0..<100, using: &random)
                    if roll < 8 {
                        if paused { try await db.resumeReplay() } else { try await db.pauseReplay() }
                        paused.toggle()
                    } else if roll < 40 {
                        let message = try await Self.send(cluster, "s\(step)", to: id, as: user, on: instance)
                        ledger[message.seq, default: []].append((message.version, message.body))
                        mine[user, default: []].append(message.seq)
                        seen[user] = max(seen[user]!, message.version)
                    } else if roll < 55, let seq = mine[user]?.randomElement(using: &random) {
                        let reply = try await cluster.request(
                            .PATCH, "/v1/conversations/\(id)/messages/\(seq)", as: user, body: #"{"body": "e\#(step)"}"#,
                            on: instance)
                        try #require(reply.status == 200, "\(reply.status)")
                        let message = try reply.decode(MessageEnvelope.self).message
                        ledger[seq, default: []].append((message.version, message.body))
                        seen[user] = max(seen[user]!, message.version)
                    } else {
                        let page = try await Self.page(cluster, id, as: user, on: instance, minVersion: seen[user]!)
                        pages += 1
                        #expect(page.version >= seen[user]!, "step \(step): \(user) read version \(page.version) after seeing \(seen[user]!)")
                        let oldest = page.messages.last?.seq ?? page.lastSeq + 1
                        for (seq, writes) in ledger where seq >= oldest {
                            guard let written = writes.last(where: { $0.version <= page.version }) else { continue }
                            let shown = page.messages.first { $0.seq == seq }
                            #expect(
                                shown.map { $0.version >= written.version } == true,
                                "step \(step): seq \(seq) at version \(written.version) missing from a page at \(page.version)")
                            if let shown, shown.version == written.version { #expect(shown.body == written.body) }
                        }
                        seen[user] = max(seen[user]!, page.version)
                    }
                }
                if paused { try await db.resumeReplay() }
                #expect(pages > 40)
                var served = 0
                for index in 0..<2 { served += try await Self.replica(cluster, on: index).served }
                #expect(served > 0, "the standby served no read: the test proved nothing")
            }
        }
    }
}
