import Foundation
import NIOConcurrencyHelpers
import OpenCombineShim
import ScrollbackClient
import ScrollbackClientCombine
import ScrollbackModels
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

@Suite struct PublisherTests {
    /// Nothing is sent before a subscriber arrives; each subscription sends
    /// the request again, and a re-sent send is the same message.
    @Test func publishersAreLazyAndASubscriptionSendsAgain() async throws {
        try await LiveCluster.run { cluster in
            let requests = NIOLockedValueBox(0)
            let alice = Self.counting(cluster, requests)
            let id = try await alice.createConversation().id
            let before = requests.withLockedValue { $0 }

            let send = alice.publishers.send("hello", to: id)
            let page = alice.publishers.page(of: id)
            try await Task.sleep(for: .milliseconds(300))
            #expect(requests.withLockedValue { $0 } == before, "a publisher sent something before it was subscribed")

            let first = try await Self.value(of: send)
            #expect(!first.replayed && first.message.seq == 1)
            let second = try await Self.value(of: send)
            #expect(second.replayed && second.message == first.message, "the re-subscription is a retry of one message")
            #expect(requests.withLockedValue { $0 } == before + 2)
            #expect(try await Self.value(of: page).messages.map(\.seq) == [1])

            let missing = alice.publishers.conversation(UUID())
            do {
                _ = try await Self.value(of: missing)
                Issue.record("a conversation nobody created was found")
            } catch let error as ScrollbackError {
                guard case .notFound(.conversationNotFound, _) = error else { throw error }
            }
        }
    }

    @Test func liveEventsArriveThroughThePublisher() async throws {
        try await LiveCluster.run { cluster in
            let alice = ScrollbackClient(baseURL: cluster.instances[0].baseURL) { try await cluster.token("alice") }
            let id = try await alice.createConversation().id
            let received = NIOLockedValueBox<[Int64]>([])
            let cancellable = alice.publishers.live(conversation: id, after: 0).sink(
                receiveCompletion: { _ in },
                receiveValue: { event in
                    if case .message(let message) = event { received.withLockedValue { $0.append(message.seq) } }
                })
            for n in 1...3 { _ = try await alice.send("m\(n)", to: id) }
            let deadline = ContinuousClock.now + .seconds(60)
            while received.withLockedValue({ $0.count }) < 3, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(received.withLockedValue { $0 } == [1, 2, 3])
            cancellable.cancel()
        }
    }

    /// A feed's state publisher starts nothing until subscribed; then it
    /// starts the feed and delivers its states, and finishes when the feed stops.
    @Test func aFeedsStatePublisherStartsTheFeedWhenSubscribed() async throws {
        try await LiveCluster.run { cluster in
            let requests = NIOLockedValueBox(0)
            let alice = Self.counting(cluster, requests)
            let id = try await cluster.conversation("alice", members: [])
            try await cluster.insertMessages(3, into: id, from: "alice")
            let feed = ConversationFeed(client: alice, conversation: id, userId: "alice")
            let states = feed.statePublisher
            try await Task.sleep(for: .milliseconds(300))
            #expect(requests.withLockedValue { $0 } == 0, "the publisher fetched something before it was subscribed")
            #expect(feed.state.connection == .idle)

            let received = NIOLockedValueBox<[ConversationFeed.State]>([])
            let finished = NIOLockedValueBox(false)
            let cancellable = states.sink(
                receiveCompletion: { _ in finished.withLockedValue { $0 = true } },
                receiveValue: { state in received.withLockedValue { $0.append(state) } })
            defer { cancellable.cancel() }
            _ = try await alice.send("live", to: id)
            try await Self.eventually("the live message in a published state") {
                received.withLockedValue { $0.last?.timeline.messages.map(\.body) == ["live", "bulk 3", "bulk 2", "bulk 1"] }
            }
            #expect(received.withLockedValue { $0.first?.connection } != .idle, "the subscription started the feed")
            feed.stop()
            try await Self.eventually("the publisher finishes when the feed stops") { finished.withLockedValue { $0 } }
            #expect(received.withLockedValue { $0.last?.connection } == .ended)
        }
    }

    /// Alice's client on instance 0, counting its requests (each asks the token provider once).
    static func counting(_ cluster: LiveCluster, _ requests: NIOLockedValueBox<Int>) -> ScrollbackClient {
        ScrollbackClient(baseURL: cluster.instances[0].baseURL) {
            requests.withLockedValue { $0 += 1 }
            return try await cluster.token("alice")
        }
    }

    static func eventually(_ what: String, timeout: Duration = .seconds(60), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting for \(what)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// The first value of a publisher.
    static func value<Output: Sendable>(of publisher: AnyPublisher<Output, ScrollbackError>) async throws -> Output {
        let box = NIOLockedValueBox<AnyCancellable?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            let cancellable = publisher.first().sink(
                receiveCompletion: { completion in
                    if case .failure(let error) = completion { continuation.resume(throwing: error) }
                },
                receiveValue: { continuation.resume(returning: $0) })
            box.withLockedValue { $0 = cancellable }
        }
    }
}

extension PublisherTests {
    @Test func searchIsAPublisherToo() async throws {
        try await LiveCluster.run { cluster in
            let alice = ScrollbackClient(baseURL: cluster.instances[0].baseURL) { try await cluster.token("alice") }
            let id = try await alice.createConversation().id
            _ = try await alice.send("Où est la gare ?", to: id)
            let search = alice.publishers.search("gare", in: id, limit: 5)
            let results = try await Self.value(of: search)
            #expect(results.hits.map(\.seq) == [1] && results.next == nil)
            #expect(results.hits.first?.snippet.highlightedWords == ["gare"])
        }
    }
}

extension PublisherTests {
    /// Profiles as publishers: the calls answer what the async calls do,
    /// and `profileUpdates` hands on each batch that changed the client's
    /// cache from the subscription on, until it is cancelled.
    @Test func profilesArePublishersToo() async throws {
        try await LiveCluster.run { cluster in
            let alice = ScrollbackClient(baseURL: cluster.instances[0].baseURL) { try await cluster.token("alice") }
            let bob = ScrollbackClient(baseURL: cluster.instances[0].baseURL) { try await cluster.token("bob") }
            _ = try await bob.updateProfile(displayName: .set("Bob Marsh"))
            _ = try await cluster.conversation("alice", members: ["bob"])

            let batches = NIOLockedValueBox<[[UserProfile]]>([])
            let updates = alice.publishers.profileUpdates.sink { batch in batches.withLockedValue { $0.append(batch) } }
            let renamed = try await Self.value(of: alice.publishers.updateProfile(displayName: .set("Alice L.")))
            #expect(renamed.displayName == "Alice L.")
            #expect(try await Self.value(of: alice.publishers.me()).displayName == "Alice L.")
            #expect(try await Self.value(of: alice.publishers.user("bob")).displayName == "Bob Marsh")
            #expect(try await Self.value(of: alice.publishers.users(["bob", "nobody"])).map(\.id) == ["bob"])
            #expect(try await Self.value(of: alice.publishers.searchUsers("mar")).users.map(\.id) == ["bob"])
            try await Self.eventually("alice's rename and bob's profile handed on") {
                let ids = batches.withLockedValue { $0.flatMap { $0.map(\.id) } }
                return ids.contains("alice") && ids.contains("bob")
            }
            #expect(batches.withLockedValue { $0.first?.first?.displayName } == "Alice L.")
            updates.cancel()
            let seen = batches.withLockedValue { $0.count }
            _ = try await alice.updateProfile(displayName: .set("Alice Liddell"))
            try await Task.sleep(for: .milliseconds(200))
            #expect(batches.withLockedValue { $0.count } == seen, "nothing after the cancel")
            #expect(alice.profiles["alice"]?.displayName == "Alice Liddell")
        }
    }
}
