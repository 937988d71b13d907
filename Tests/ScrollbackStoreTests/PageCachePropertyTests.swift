import Foundation
import Logging
import PostgresNIO
import PropertyBased
import ScrollbackModels
@testable import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The newest-page caches of two instances against the database, under
/// random sends, edits, deletions, reactions, replies, member changes and
/// listener drops: after every step, a newest page (or one `after` a recent
/// seq) from either instance is the database's, byte for byte as a client
/// gets it: the cache's JSON with each reader's `blocked_sender` spliced in
/// against the values read from the database, flagged and written.
@Suite struct PageCachePropertyTests {
    /// The senders each reader blocked, for the `blocked_sender` splices.
    static let blocked: [UserID: Set<String>] = ["alice": [], "bob": ["alice"], "carol": ["alice", "bob"]]

    /// `user`'s page as the JSON a client gets (`blocked_sender` on the
    /// messages of the senders they blocked), or nil when the user may not
    /// read the conversation: from the cache's bytes, or as the values read
    /// from the database would be written.
    static func page(
        _ store: ScrollbackStore, _ id: UUID, _ user: UserID, _ anchor: PageAnchor, _ limit: Int, minVersion: Int64,
        fromDatabase: Bool
    ) async throws -> String? {
        let blocked = Self.blocked[user] ?? []
        do {
            if fromDatabase {
                var page = try await store.readPage(of: id, for: user, anchor: anchor, limit: limit)
                for index in page.messages.indices { page.messages[index].blockedSender = blocked.contains(page.messages[index].sender) }
                return String(decoding: page.jsonBytes, as: UTF8.self)
            }
            let page = try await store.encodedPage(of: id, for: user, anchor: anchor, limit: limit, minVersion: minVersion)
            return String(decoding: page.jsonBytes(blocking: blocked), as: UTF8.self)
        } catch StoreError.conversationNotFound {
            return nil
        }
    }

    /// `read()`, read again for up to 30 s while `polling` and it differs
    /// from `truth`, and whether the first read differed.
    static func settled(
        toward truth: String?, polling: Bool, _ read: () async throws -> String?
    ) async throws -> (page: String?, wasBehind: Bool) {
        var page = try await read()
        let wasBehind = page != truth
        let deadline = ContinuousClock.now + .seconds(30)
        while polling, page != truth, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            page = try await read()
        }
        return (page, wasBehind)
    }

    @Test(arguments: [UInt64(1), 2])
    func newestPagesOfTwoInstancesAreTheDatabases(seed: UInt64) async throws {
        var logger = Logger(label: "scrollback.tests.page-cache")
        logger.logLevel = .critical  // the listener drops are meant
        try await LiveCluster.run(instances: 2, logger: logger) { cluster in
            var random = Xoshiro(seed: (seed, seed &* 31, seed &* 131, seed &* 1_031))
            let users: [UserID] = ["alice", "bob", "carol"]
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            var members: [UserID] = users
            var stale = 0
            let stores = cluster.instances.map(\.store)
            for step in 0..<120 {
                let store = stores[Int.random(in: 0..<2, using: &random)]
                let actor = members.sorted().randomElement(using: &random) ?? "alice"
                var membersChanged = false
                let lastSeq = try await cluster.store.values(
                    Int64.self, "SELECT last_seq FROM conversations WHERE id = \(id)")[0]
                let target = lastSeq > 0 ? Int64.random(in: 1...lastSeq, using: &random) : 1
                do {
                    switch Int.random(in: 0..<12, using: &random) {
                    case 0...2:
                        _ = try await store.send(to: id, from: actor, body: "step \(step)", clientID: nil)
                    case 3:
                        _ = try await store.send(
                            to: id, from: actor, body: "reply \(step)", clientID: nil, replyTo: target)
                    case 4:
                        _ = try await store.edit(target, in: id, by: actor, body: "edited at \(step)")
                    case 5:
                        _ = try await store.delete(target, in: id, by: actor)
                    case 6:
                        _ = try await store.react(
                            ["👍", "🎉"].randomElement(using: &random)!, to: target, in: id, by: actor,
                            adding: Bool.random(using: &random))
                    case 7:
                        let user = users.filter { $0 != "alice" }.randomElement(using: &random)!
                        if members.contains(user) {
                            try await store.removeMember(user, from: id, by: "alice")
                            members.removeAll { $0 == user }
                        } else {
                            _ = try await store.addMember(user, to: id, by: "alice")
                            members.append(user)
                        }
                        // Member changes take no version: another instance
                        // learns of them from the notification only.
                        membersChanged = true
                    case 8:
                        // Every listener of the schema is cut (both instances').
                        let name = cluster.store.listenerApplicationName
                        _ = try await cluster.store.values(
                            Bool.self,
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(name)")
                        try await cluster.untilListening(0)
                        try await cluster.untilListening(1)
                    default:
                        break  // reads only: pages keep coming from memory
                    }
                } catch let error as StoreError {
                    // Not the sender, a deleted message, a reply to a tombstone: refused, nothing changed.
                    switch error {
                    case .forbidden, .messageDeleted, .replyTargetDeleted, .replyTargetMissing, .messageNotFound,
                        .conversationNotFound:
                        break
                    default: throw error
                    }
                }

                let version = try await cluster.store.values(
                    Int64.self, "SELECT version FROM conversations WHERE id = \(id)")[0]
                for (index, instance) in stores.enumerated() {
                    for user in users {
                        let limit = [1, 10, 50, 80].randomElement(using: &random)!
                        let anchor: PageAnchor =
                            Bool.random(using: &random) ? .newest : .after(max(0, lastSeq - Int64.random(in: 0...40, using: &random)))
                        let truth = try await Self.page(
                            instance, id, user, anchor, limit, minVersion: 0, fromDatabase: true)
                        // With the version the client knows: at once (after a
                        // member change, once the instance has its notification).
                        let known = try await Self.settled(toward: truth, polling: membersChanged) {
                            try await Self.page(instance, id, user, anchor, limit, minVersion: version, fromDatabase: false)
                        }.page
                        #expect(known == truth, "step \(step), instance \(index), \(user), \(anchor), limit \(limit)")
                        // Without it: once this instance has the notifications.
                        let (plain, wasBehind) = try await Self.settled(toward: truth, polling: true) {
                            try await Self.page(instance, id, user, anchor, limit, minVersion: 0, fromDatabase: false)
                        }
                        if wasBehind { stale += 1 }
                        #expect(plain == truth, "step \(step), instance \(index), \(user), \(anchor), limit \(limit)")
                    }
                }
            }
            let hits = stores.map { $0.pageCache.statistics.hits }.reduce(0, +)
            let misses = stores.map { $0.pageCache.statistics.misses }.reduce(0, +)
            // Pages do come from memory (else this test would prove nothing),
            // and being behind another instance's write is short and rare.
            #expect(hits > 150, "\(hits) hits, \(misses) misses")
            #expect(stale < 60, "\(stale) pages behind without min_version")
            print("page cache property, seed \(seed): \(hits) hits, \(misses) misses, \(stale) stale")
        }
    }
}
