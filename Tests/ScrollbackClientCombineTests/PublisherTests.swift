import Foundation
import NIOConcurrencyHelpers
import OpenCombineShim
import ScrollbackClient
import ScrollbackClientCombine
import ScrollbackModels
import ScrollbackTestSupport
import Testing

@Suite struct PublisherTests {
    /// Nothing is sent before a subscriber arrives; each subscription sends
    /// the request again, and a re-sent send is the same message.
    @Test func publishersAreLazyAndASubscriptionSendsAgain() async throws {
        try await LiveCluster.run { cluster in
            let requests = NIOLockedValueBox(0)
            let alice = ScrollbackClient(baseURL: cluster.instances[0].baseURL) {
                requests.withLockedValue { $0 += 1 }
                return try await cluster.token("alice")
            }
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
            let deadline = ContinuousClock.now + .seconds(15)
            while received.withLockedValue({ $0.count }) < 3, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(received.withLockedValue { $0 } == [1, 2, 3])
            cancellable.cancel()
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
