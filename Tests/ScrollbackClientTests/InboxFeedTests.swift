import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import PropertyBased
import ScrollbackClient
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackTestSupport
import Testing

/// `InboxFeed` against two real instances on one PostgreSQL: the feed must
/// come to equal a fresh conversation list after every change, whichever
/// instance made it, while its connections are cut.
@Suite struct InboxFeedTests {
    /// Seeded random sends, edits, deletions, reads, and additions and
    /// removals of alice across 20 conversations, each through either
    /// instance, while alice's two feeds (one on each instance, each behind
    /// a proxy that cuts its connections now and then) page the list five
    /// at a time. After every step both feeds become equal to the list
    /// fetched afresh.
    @Test(arguments: [UInt64(1), 2])
    func theFeedStaysEqualToAFreshListThroughRandomChangesAndCuts(seed: UInt64) async throws {
        try await LiveCluster.run(instances: 2) { cluster in try await Self.withHTTP { http in
            var random = Xoshiro(seed: (seed, 11, 13, 17))
            let proxies = try cluster.instances.map { try CuttingProxy(upstreamPort: $0.port) }
            defer { for proxy in proxies { proxy.stop() } }
            let others = ["bob", "carol", "dave"]
            // Each user's client on each instance.
            let clients = Dictionary(uniqueKeysWithValues: (others + ["alice"]).map { user in
                (user, cluster.instances.map { Self.client(cluster, user, http, baseURL: $0.baseURL) })
            })
            var conversations: [(id: UUID, creator: String)] = []
            var aliceIn: Set<UUID> = []
            var senders: [UUID: [Int64: String]] = [:]
            for n in 0..<20 {
                let creator = others[n % others.count]
                let withAlice = n % 4 != 3
                let created = try await clients[creator]![n % 2].createConversation(
                    title: "c\(n)", members: withAlice ? ["alice", others[(n + 1) % others.count]] : [])
                conversations.append((created.id, creator))
                if withAlice { aliceIn.insert(created.id) }
            }
            let feeds = proxies.map { proxy in
                Self.client(cluster, "alice", http, baseURL: "http://127.0.0.1:\(proxy.port)").inboxFeed(pageSize: 5)
            }
            defer { for feed in feeds { feed.stop() } }
            // A list view on each feed, applying every change to its rows.
            let misfits = NIOLockedValueBox<[String]>([])
            let views = feeds.map { Self.follow($0, misfits: misfits) }
            defer { for view in views { view.cancel() } }
            for feed in feeds { feed.start() }
            let fresh = clients["alice"]![0]
            try await Self.untilEqual(feeds, fresh, "seed \(seed), start")

            for step in 0..<80 {
                let instance = Int(random.next() % 2)
                let (id, creator) = conversations[Int(random.next() % UInt64(conversations.count))]
                let client = { (user: String) in clients[user]![instance] }
                switch random.next() % 10 {
                case 0, 1, 2:
                    let sent = try await client(creator).send("s\(step)", to: id)
                    senders[id, default: [:]][sent.message.seq] = creator
                case 3:
                    if aliceIn.contains(id) {
                        let sent = try await client("alice").send("a\(step)", to: id)
                        senders[id, default: [:]][sent.message.seq] = "alice"
                    }
                case 4:
                    if let seq = Self.pick(senders[id], &random), let sender = senders[id]?[seq],
                        sender != "alice" || aliceIn.contains(id)
                    {
                        // Refused for a deleted message: nothing changes.
                        _ = try? await client(sender).edit(seq, in: id, body: "e\(step)")
                    }
                case 5:
                    if let seq = Self.pick(senders[id], &random) {
                        _ = try await client(creator).delete(seq, in: id)
                    }
                case 6:
                    if aliceIn.contains(id), let seq = Self.pick(senders[id], &random) {
                        _ = try await client("alice").markRead(seq, in: id)
                    }
                case 7:
                    if aliceIn.contains(id) {
                        try await client(creator).removeMember("alice", from: id)
                        aliceIn.remove(id)
                    } else {
                        _ = try await client(creator).addMember("alice", to: id)
                        aliceIn.insert(id)
                    }
                case 8:
                    if !aliceIn.contains(id) {
                        _ = try await client(creator).addMember("alice", to: id)
                        aliceIn.insert(id)
                    }
                default:
                    // Cut one feed's connections, or both.
                    let which = Int(random.next() % 3)
                    for (index, proxy) in proxies.enumerated() where which == 2 || which == index { proxy.cutAll() }
                }
                try await Self.untilEqual(feeds, fresh, "seed \(seed), step \(step)")
            }
            for feed in feeds { #expect(feed.failure == nil) }
            #expect(misfits.withLockedValue { $0 }.isEmpty, "changes that do not turn the rows before into the rows after")
        } }
    }

    /// With only the first page loaded, a conversation further down that
    /// gets a message comes to the top with its title (fetched), and an
    /// edit in one further down shows once its page is loaded.
    @Test func aConversationBelowTheLoadedPageComesToTheTopWhenItBecomesActive() async throws {
        try await LiveCluster.run { cluster in try await Self.withHTTP { http in
            let bob = Self.client(cluster, "bob", http)
            var ids: [UUID] = []
            for n in 0..<12 {
                let conversation = try await bob.createConversation(title: "c\(n)", members: ["alice"])
                _ = try await bob.send("first in c\(n)", to: conversation.id)
                ids.append(conversation.id)
            }
            let feed = Self.client(cluster, "alice", http).inboxFeed(pageSize: 4)
            defer { feed.stop() }
            feed.start()
            // Newest first: c11 ... c8 on the first page.
            var inbox = try await Self.until(feed, "the first page") { $0.isLoaded && !$0.isLoadingPage }
            #expect(inbox.conversations.map(\.title) == ["c11", "c10", "c9", "c8"] && inbox.hasMore)

            _ = try await bob.send("hello again", to: ids[2])
            _ = try await bob.edit(1, in: ids[1], body: "edited")
            inbox = try await Self.until(feed, "c2 on top") { $0.conversations.first?.id == ids[2] }
            #expect(inbox.conversations.first?.title == "c2" && inbox.conversations.first?.lastMessage?.body == "hello again")
            #expect(inbox.conversations.first?.unreadCount == 2)
            #expect(inbox[ids[1]] == nil, "an edit does not move a conversation above the loaded pages")

            inbox = try await Self.until(feed, "the whole list") { inbox in
                if inbox.hasMore { feed.loadMore() }
                return !inbox.hasMore && !inbox.isLoadingPage
            }
            #expect(inbox.conversations.count == 12)
            #expect(inbox[ids[1]]?.lastMessage?.body == "edited")
            #expect(inbox.conversations.map(\.id) == (try await bob.conversations(limit: 50)).conversations.map(\.id))
        } }
    }

    /// A socket accepted but never upgraded (a server stopping, a proxy
    /// whose backend is gone) is given up after the client's timeout and
    /// the next one subscribes; a message sent meanwhile reaches the inbox.
    @Test func anUpgradeThatNeverAnswersIsGivenUpAndTheInboxComesBack() async throws {
        try await LiveCluster.run { cluster in try await Self.withHTTP { http in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let bob = Self.client(cluster, "bob", http)
            let id = try await bob.createConversation(title: "Plans", members: ["alice"]).id
            let patient = ScrollbackClient(
                baseURL: "http://127.0.0.1:\(proxy.port)", http: http,
                retry: RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200)), timeout: .seconds(5),
                token: { try await cluster.token("alice") })
            let feed = patient.inboxFeed()
            defer { feed.stop() }
            feed.start()
            _ = try await Self.until(feed, "live and loaded") { $0.isLive && $0.isLoaded }
            // The socket is cut and its next connection is held unanswered.
            proxy.swallowNewConnections(true)
            // The held attempt starts after the cut, and its 5 s timeout with it.
            let cut = ContinuousClock.now
            proxy.cutAll()
            _ = try await Self.until(feed, "the socket lost") { !$0.isLive }
            _ = try await Self.until(feed, "a reconnection held") { _ in proxy.heldConnections > 0 }
            proxy.stopSwallowingButKeepHeld()
            _ = try await bob.send("while you were away", to: id)
            let inbox = try await Self.until(feed, "the message, after the hung upgrade") {
                $0.isLive && $0[id]?.lastMessage?.body == "while you were away"
            }
            #expect(inbox[id]?.unreadCount == 1)
            #expect(ContinuousClock.now - cut >= .milliseconds(4_500), "live again only once the hung upgrade (5 s timeout) was given up")
        } }
    }

    /// Updates through completion handlers; `stop()` closes the socket and
    /// ends them with no error, and nothing arrives afterwards.
    @Test func completionHandlersGetEveryStateUntilStop() async throws {
        try await LiveCluster.run { cluster in try await Self.withHTTP { http in
            let bob = Self.client(cluster, "bob", http)
            let states = NIOLockedValueBox<[Inbox]>([])
            let ended = NIOLockedValueBox<ScrollbackError??>(nil)
            let feed = Self.client(cluster, "alice", http).inboxFeed(
                onUpdate: { inbox, _ in states.withLockedValue { $0.append(inbox) } },
                onEnd: { error in ended.withLockedValue { $0 = .some(error) } })
            try await Self.poll("subscribed and loaded") {
                states.withLockedValue { $0.last.map { $0.isLive && $0.isLoaded } ?? false }
            }
            let id = try await bob.createConversation(title: "Plans", members: ["alice"]).id
            _ = try await bob.send("hi", to: id)
            try await Self.poll("the message") {
                states.withLockedValue { $0.last?[id]?.lastMessage?.body == "hi" }
            }
            let hub = cluster.instances[0].live.hub
            #expect(await hub.openSockets == 1)
            feed.stop()
            try await Self.poll("the end") { ended.withLockedValue { $0 != nil } }
            #expect(ended.withLockedValue { $0 } == .some(nil))
            let deadline = ContinuousClock.now + .seconds(30)
            while await hub.openSockets > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(await hub.openSockets == 0, "the socket outlived the feed")
            let count = states.withLockedValue { $0.count }
            _ = try await bob.send("after the end", to: id)
            try await Task.sleep(for: .milliseconds(300))
            #expect(states.withLockedValue { $0.count } == count, "a stopped feed published something")
        } }
    }

    // MARK: Helpers

    /// A client of `user` with the test's own HTTP client.
    static func client(_ cluster: LiveCluster, _ user: String, _ http: HTTPClient, baseURL: String? = nil)
        -> ScrollbackClient
    {
        ScrollbackClient(
            baseURL: baseURL ?? cluster.instances[0].baseURL, http: http,
            retry: RetryPolicy(maxAttempts: 6, initialDelay: .milliseconds(50), maxDelay: .milliseconds(500)),
            token: { try await cluster.token(user) })
    }

    /// Runs `body` with an HTTP client that is shut down before the servers
    /// stop. A feed's requests overlap, and the shared client then opens
    /// connections that may end up never sending a request; a server's
    /// graceful shutdown waits for such a connection (see the report of
    /// this branch), which would hold the test up for minutes.
    static func withHTTP(_ body: (HTTPClient) async throws -> Void) async throws {
        let http = HTTPClient()
        do {
            try await body(http)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }

    /// A seq of the messages sent, the same for the same seed.
    static func pick(_ sent: [Int64: String]?, _ random: inout Xoshiro) -> Int64? {
        guard let seqs = sent?.keys.sorted(), !seqs.isEmpty else { return nil }
        return seqs[Int(random.next() % UInt64(seqs.count))]
    }

    /// What a list shows of a conversation: its title and its line (newest
    /// seq, version, unread count, read marker, activity, last message).
    struct Line: Equatable, CustomStringConvertible {
        var title: String?
        var line: InboxActivity

        init(_ conversation: Conversation) {
            title = conversation.title
            line = InboxActivity(conversation)
        }

        var description: String {
            "\(title ?? "-") seq \(line.lastSeq) v\(line.version) unread \(line.unreadCount) read \(line.readSeq) at \(line.activity) \"\(line.lastMessage?.body ?? "")\""
        }
    }

    /// Follows a feed's updates as a list view does, applying each change
    /// to the rows it shows; a change that does not give the feed's rows is
    /// reported.
    static func follow(_ feed: InboxFeed, misfits: NIOLockedValueBox<[String]>) -> Task<Void, Never> {
        let updates = feed.updates
        return Task {
            var rows: [UUID] = []
            for await (inbox, change) in updates {
                let after = inbox.conversations.map(\.id)
                if InboxTests.replaying(change, on: rows, toward: after) != after {
                    misfits.withLockedValue { $0.append("\(change) from \(rows) to \(after)") }
                }
                rows = after
            }
        }
    }

    /// Alice's whole list, fetched afresh.
    static func freshList(_ client: ScrollbackClient) async throws -> [Line] {
        var lines: [Line] = []
        var cursor: String?
        repeat {
            let page = try await client.conversations(limit: 100, cursor: cursor)
            lines += page.conversations.map(Line.init)
            cursor = page.nextCursor
        } while cursor != nil
        return lines
    }

    /// Waits until every feed shows the fresh list, loading more as a user
    /// scrolling to the end would.
    static func untilEqual(_ feeds: [InboxFeed], _ client: ScrollbackClient, _ what: String) async throws {
        let expected = try await freshList(client)
        for (index, feed) in feeds.enumerated() {
            do {
                _ = try await until(feed, "\(what): feed \(index)") { inbox in
                    if inbox.hasMore { feed.loadMore() }
                    return inbox.conversations.map(Line.init) == expected
                }
            } catch {
                let shown = feed.inbox.conversations.map(Line.init)
                Issue.record("\(what), feed \(index):\nexpected \(expected)\nshown    \(shown)")
                throw error
            }
        }
    }

    /// The feed's state once `condition` holds, polled until a deadline.
    @discardableResult
    static func until(_ feed: InboxFeed, _ what: String, _ condition: (Inbox) -> Bool) async throws -> Inbox {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let inbox = feed.inbox
            if condition(inbox) { return inbox }
            guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    static func poll(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out waiting for \(what)" }
    }
}
