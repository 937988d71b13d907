import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// The client kit against real servers on loopback and a real PostgreSQL.
@Suite struct ClientTests {
    static func client(_ cluster: LiveCluster, _ user: String, baseURL: String? = nil) -> ScrollbackClient {
        ScrollbackClient(
            baseURL: baseURL ?? cluster.instances[0].baseURL,
            retry: RetryPolicy(maxAttempts: 6, initialDelay: .milliseconds(50), maxDelay: .milliseconds(500)),
            token: { try await cluster.token(user) })
    }

    @Test func everyCallOfTheAPIWorksThroughTheKit() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice")
            let bob = Self.client(cluster, "bob")
            let conversation = try await alice.createConversation(title: "Trip", members: ["bob"])
            #expect(conversation.members == ["alice", "bob"])
            _ = try await alice.addMember("carol", to: conversation.id)
            try await alice.removeMember("carol", from: conversation.id)
            #expect(try await alice.conversation(conversation.id).members == ["alice", "bob"])

            let first = try await alice.send("one", to: conversation.id, clientId: "c1")
            #expect(!first.replayed && first.message.seq == 1)
            let again = try await alice.send("one", to: conversation.id, clientId: "c1")
            #expect(again.replayed && again.message == first.message)
            for n in 2...5 { _ = try await bob.send("m\(n)", to: conversation.id) }

            #expect(try await bob.page(of: conversation.id).messages.map(\.seq) == [5, 4, 3, 2, 1])
            #expect(try await bob.page(of: conversation.id, .before(3), limit: 1).messages.map(\.seq) == [2])
            #expect(try await bob.page(of: conversation.id, .after(3)).messages.map(\.seq) == [5, 4])
            #expect(try await bob.page(of: conversation.id, .around(3), limit: 3).messages.map(\.seq) == [4, 3, 2])
            #expect(try await bob.page(of: conversation.id, .aroundTime(first.message.createdAt)).messages.contains { $0.seq == 1 })

            let edited = try await alice.edit(1, in: conversation.id, body: "one!")
            #expect(edited.body == "one!" && edited.editedAt != nil)
            #expect(try await bob.delete(2, in: conversation.id).deleted)
            #expect(try await bob.markRead(5, in: conversation.id).readSeq == 5)
            let changes = try await bob.changes(in: conversation.id, since: 5)
            #expect(changes.messages.map(\.seq) == [1, 2])
            #expect(try await bob.conversations().conversations.map(\.id) == [conversation.id])
            let layout = try await bob.layout(LayoutRequest(viewportHeight: 640, itemHeights: [100, 50]))
            #expect(layout.bottomPadding == 490)

            // Replies, threads and reactions.
            let reply = try await bob.send("reply to 3", to: conversation.id, replyTo: 3).message
            #expect(reply.replyTo?.seq == 3 && reply.threadRoot == 3)
            let thread = try await alice.thread(of: 3, in: conversation.id)
            #expect(thread.messages.map(\.seq) == [reply.seq] && thread.root.thread?.replyCount == 1)
            #expect(try await alice.thread(of: 3, in: conversation.id, .before(reply.seq)).messages.isEmpty)
            let reacted = try await alice.react("❤️", to: 3, in: conversation.id)
            #expect(reacted.reactions == [ReactionSummary(emoji: "❤️", count: 1, me: true)])
            #expect(try await bob.page(of: conversation.id, .around(3), limit: 1).messages.first?.reactions.first?.me == false)
            #expect(try await alice.unreact("❤️", from: 3, in: conversation.id).reactions.isEmpty)
        }
    }

    @Test func errorsCarryTheServersCodeAndMessage() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice")
            let id = try await alice.createConversation().id
            await #expect(throws: ScrollbackError.notFound(code: .conversationNotFound, message: "No conversation with this id is visible to you: it does not exist or you are not a member.")) {
                _ = try await Self.client(cluster, "mallory").page(of: id)
            }
            do throws(ScrollbackError) {
                _ = try await alice.send("   ", to: id)
                Issue.record("a blank body was accepted")
            } catch {
                #expect(error.code == .invalidMessageBody)
                #expect(error.errorDescription == "Field `body` must contain some visible text, not only whitespace or invisible characters. A message without text needs `attachments`.")
            }
            _ = try await alice.send("first", to: id, clientId: "same")
            do throws(ScrollbackError) {
                _ = try await alice.send("other", to: id, clientId: "same")
                Issue.record("another body under a used client_id was accepted")
            } catch {
                guard case .conflict(.idempotencyConflict, _) = error else { throw error }
            }
            let forged = ScrollbackClient(baseURL: cluster.instances[0].baseURL, token: { "not-a-token" })
            do throws(ScrollbackError) {
                _ = try await forged.conversations()
                Issue.record("a forged token was accepted")
            } catch {
                guard case .unauthorized = error else { throw error }
            }
            let nowhere = ScrollbackClient(
                baseURL: "http://127.0.0.1:1", retry: RetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(10)),
                timeout: .seconds(1), token: { "t" })
            do throws(ScrollbackError) {
                _ = try await nowhere.send("x", to: id)
                Issue.record("a send to no server succeeded")
            } catch {
                guard case .transport = error else { throw error }
                #expect(error.isRetryable)
            }
        }
    }

    /// The request reaches the server and is stored, but its answer is lost
    /// with the connection: the kit retries with the same client_id, and the
    /// message is stored once.
    @Test func aSendWhoseAnswerIsLostIsRetriedAndStoredOnce() async throws {
        try await LiveCluster.run { cluster in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let alice = Self.client(cluster, "alice", baseURL: "http://127.0.0.1:\(proxy.port)")
            let id = try await alice.createConversation().id
            proxy.loseNextAnswer(to: "POST /v1/conversations/\(id.uuidString.lowercased())/messages ")
            let result = try await alice.send("only once", to: id)
            #expect(result.replayed, "the first attempt was stored; the retry found it")
            let page = try await alice.page(of: id)
            #expect(page.messages.map(\.body) == ["only once"])
        }
    }

    /// Live events across a cut connection and a server restart, with
    /// messages and an edit made while away: every message once, in order,
    /// and the edit as an update.
    @Test func liveResumesAcrossACutConnectionAndARestart() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            // Bob listens through a proxy to instance 0; alice and the writes
            // made while instance 0 is down go through instance 1.
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[1].baseURL)
            let bob = Self.client(cluster, "bob", baseURL: "http://127.0.0.1:\(proxy.port)")
            let id = try await alice.createConversation(members: ["bob"]).id
            for n in 1...3 { _ = try await alice.send("before \(n)", to: id) }

            let events = EventLog()
            let listening = Task {
                for try await event in bob.live(conversation: id, after: 0) { events.append(event) }
            }
            defer { listening.cancel() }
            try await events.waitForMessages(3)

            proxy.cutAll()
            for n in 4...6 { _ = try await alice.send("while cut \(n)", to: id) }
            try await events.waitForMessages(6)

            try await cluster.restart(0) {
                for n in 7...9 { _ = try await alice.send("while down \(n)", to: id) }
                _ = try await alice.edit(1, in: id, body: "edited while down")
            }
            // The proxy still points at the old port, which the new instance took again.
            try await events.waitForMessages(9, timeout: .seconds(60))
            _ = try await alice.send("after 10", to: id)
            try await events.waitForMessages(10)
            try await events.waitFor(timeout: .seconds(60)) { $0.contains(.updated(try await alice.page(of: id, .around(1), limit: 1).messages[0])) }
            #expect(events.messages.map(\.seq) == Array(1...10))
            #expect(events.all.contains { if case .disconnected = $0 { true } else { false } })
        }
    }

    /// An instance answers newest pages from memory while its change feed
    /// says nothing changed; a write made through another instance can be
    /// committed before this one hears of it. The kit asks for pages at
    /// least as new as what it has seen (`min_version`), so it never reads
    /// its way back in time.
    @Test func aPageIsNeverOlderThanWhatTheClientHasSeen() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            // Alice's requests go through a load balancer that can move her.
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let alice = Self.client(cluster, "alice", baseURL: "http://127.0.0.1:\(proxy.port)")
            let id = try await alice.createConversation(members: ["bob"]).id
            for n in 1...3 { _ = try await alice.send("m\(n)", to: id) }
            let unaware = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)

            // A change committed elsewhere whose notification instance 0 has
            // not received (here: none is sent). Until instance 0 has handled
            // the notifications of the conversation's creation (which drop
            // its pages), the page it keeps may be read after the change: then
            // the change is made again, on the page read last.
            var first = try await alice.page(of: id)
            var change = 0
            while true {
                change += 1
                _ = try await cluster.store.values(
                    Int64.self,
                    """
                    WITH c AS (UPDATE conversations SET version = version + 1 WHERE id = \(id) RETURNING version)
                    UPDATE messages SET body = \("changed elsewhere \(change)"), version = (SELECT version FROM c)
                    WHERE conversation_id = \(id) AND seq = 3 RETURNING seq
                    """)
                // A client that has not seen it gets instance 0's page from memory.
                let seen = try await unaware.page(of: id)
                if seen.messages.first?.body == first.messages.first?.body { break }
                try #require(change < 20, "instance 0 never kept a page")
                first = seen
            }
            #expect(first.messages.first?.body != "changed elsewhere \(change)")

            // Alice sees it through instance 1 ...
            proxy.route(to: cluster.instances[1].port)
            proxy.cutAll()
            try await Task.sleep(for: .milliseconds(300))  // the kit's pool notices the closed connections
            let changes = try await alice.changes(in: id, since: first.version)
            #expect(changes.messages.map(\.body) == ["changed elsewhere \(change)"])
            // ... and back on instance 0, her page has it.
            proxy.route(to: cluster.instances[0].port)
            proxy.cutAll()
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await alice.page(of: id).messages.first?.body == "changed elsewhere \(change)")
            // That read replaced the page in memory: everyone reads the change now.
            #expect(try await unaware.page(of: id).messages.first?.body == "changed elsewhere \(change)")
        }
    }

    /// Typing announced over HTTP reaches the other members' live streams
    /// (across instances), not the typer's own; a non-member is refused.
    @Test func typingOverHTTPReachesTheOtherMembersLive() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let bob = Self.client(cluster, "bob", baseURL: cluster.instances[1].baseURL)
            let id = try await alice.createConversation(members: ["bob"]).id
            let (aliceEvents, bobEvents) = (EventLog(), EventLog())
            let listening = [(alice, aliceEvents), (bob, bobEvents)].map { client, log in
                Task { for try await event in client.live(conversation: id) { log.append(event) } }
            }
            defer { for task in listening { task.cancel() } }
            for log in [aliceEvents, bobEvents] {
                try await log.waitFor(timeout: .seconds(60)) { $0.contains { if case .connected(lastSeq: 0, _) = $0 { true } else { false } } }
            }
            try await alice.typing(in: id)
            try await bobEvents.waitFor(timeout: .seconds(60)) { $0.contains(.typing(userId: "alice")) }
            _ = try await alice.send("done typing", to: id)
            try await aliceEvents.waitForMessages(1)
            #expect(!aliceEvents.all.contains(.typing(userId: "alice")))
            await #expect(throws: ScrollbackError.notFound(code: .conversationNotFound, message: "No conversation with this id is visible to you: it does not exist or you are not a member.")) {
                try await Self.client(cluster, "carol").typing(in: id)
            }
        }
    }

    /// More missed than the stream replays: the kit pages the rest over
    /// HTTP, and the consumer still sees every message once, in order.
    @Test func liveAfterMoreThanTheBacklogLimitPagesOverHTTP() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice")
            let id = try await alice.createConversation().id
            let count = APILimits.maxStreamBacklog + 205
            try await cluster.insertMessages(count, into: id, from: "alice")
            let events = EventLog()
            let listening = Task {
                for try await event in alice.live(conversation: id, after: 0) { events.append(event) }
            }
            defer { listening.cancel() }
            try await events.waitForMessages(count)
            _ = try await alice.send("live again", to: id)
            try await events.waitForMessages(count + 1)
            #expect(events.messages.map(\.seq) == Array(1...Int64(count + 1)))
        }
    }

    /// The live stream ends with an error, instead of reconnecting for
    /// ever, for a conversation the user cannot see and for a token the
    /// server refuses on every connection.
    @Test func liveEndsForAConversationNotVisibleAndForATokenRefusedEveryTime() async throws {
        try await LiveCluster.run { cluster in
            let id = try await Self.client(cluster, "alice").createConversation().id
            await #expect(throws: ScrollbackError.notFound(code: .conversationNotFound, message: "No conversation with this id is visible to you: it does not exist or you are not a member.")) {
                for try await _ in Self.client(cluster, "mallory").live(conversation: id, after: 0) {}
            }
            let forged = ScrollbackClient(
                baseURL: cluster.instances[0].baseURL, retry: RetryPolicy(initialDelay: .milliseconds(10)),
                token: { "not-a-token" })
            do {
                for try await _ in forged.live(conversation: id, after: 0) {}
                Issue.record("the stream with a refused token ended without an error")
            } catch let error as ScrollbackError {
                guard case .unauthorized = error else { throw error }
            }
        }
    }

    /// A connection accepted but never answered (a server stopping, a
    /// proxy whose backend is gone) is given up and tried again.
    @Test func liveGivesUpAConnectionThatNeverAnswersItsUpgrade() async throws {
        try await LiveCluster.run { cluster in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let alice = Self.client(cluster, "alice")
            let id = try await alice.createConversation().id
            _ = try await alice.send("waiting", to: id)
            let patient = ScrollbackClient(
                baseURL: "http://127.0.0.1:\(proxy.port)",
                retry: RetryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(200)), timeout: .seconds(5),
                token: { try await cluster.token("alice") })
            proxy.swallowNewConnections(true)
            let events = EventLog()
            let listening = Task {
                for try await event in patient.live(conversation: id, after: 0) { events.append(event) }
            }
            defer { listening.cancel() }
            try await Task.sleep(for: .seconds(1))
            #expect(events.all.isEmpty, "a swallowed connection delivered something")
            // The backend is back; the hung attempt is given up after the
            // client's timeout and the next one connects. Without the timeout
            // the stream would wait on the swallowed connection for ever.
            proxy.stopSwallowingButKeepHeld()
            try await events.waitForMessages(1, timeout: .seconds(60))
            #expect(events.messages.map(\.seq) == [1])
        }
    }

    @Test func completionHandlersGiveTheAsyncResults() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice")
            let id = try await alice.createConversation().id
            let sent: Result<ScrollbackClient.SendResult, ScrollbackError> = await withCheckedContinuation { done in
                alice.send("hello", to: id, clientId: "k1") { done.resume(returning: $0) }
            }
            #expect(try sent.get().message.seq == 1)
            let missing: Result<MessagePage, ScrollbackError> = await withCheckedContinuation { done in
                alice.page(of: UUID()) { done.resume(returning: $0) }
            }
            guard case .failure(.notFound(let code, _)) = missing else {
                Issue.record("expected notFound, got \(missing)")
                return
            }
            #expect(code == .conversationNotFound)
        }
    }
}

/// Live events as they arrive, waited for with a timeout.
final class EventLog: Sendable {
    private let events = NIOLockedValueBox<[LiveEvent]>([])

    func append(_ event: LiveEvent) { events.withLockedValue { $0.append(event) } }
    var all: [LiveEvent] { events.withLockedValue { $0 } }
    var messages: [Message] {
        all.compactMap { if case .message(let message) = $0 { message } else { nil } }
    }

    func waitForMessages(_ count: Int, timeout: Duration = .seconds(60)) async throws {
        try await waitFor(timeout: timeout) { $0.filter { if case .message = $0 { true } else { false } }.count >= count }
    }

    func waitFor(timeout: Duration, _ condition: ([LiveEvent]) async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition(all) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out; events: \(all)")
        throw CancellationError()
    }
}
