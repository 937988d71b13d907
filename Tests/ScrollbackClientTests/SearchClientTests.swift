import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

@Suite struct SearchClientTests {
    @Test func searchPagesThroughTheKitAndOpensHistoryAroundAHit() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let bob = ClientTests.client(cluster, "bob")
            let trip = try await alice.createConversation(title: "Trip", members: ["bob"]).id
            let solo = try await bob.createConversation().id
            for n in 1...3 { _ = try await alice.send("ferry ticket #\(n) & more", to: trip) }
            _ = try await bob.send("my own ferry", to: solo)

            let first = try await bob.search("ferry", limit: 3)
            #expect(first.hits.map(\.message.body) == ["my own ferry", "ferry ticket #3 & more", "ferry ticket #2 & more"])
            let rest = try await bob.search("ferry", before: try #require(first.next), limit: 3)
            #expect(rest.hits.map(\.seq) == [1] && rest.next == nil)
            // A query with characters that need escaping, in one conversation.
            let phrase = try await bob.search("\"ticket #3\" & more", in: trip)
            #expect(phrase.hits.map(\.seq) == [3])
            #expect(phrase.hits.first?.snippet.highlightedWords == ["ticket", "3", "more"])
            let around = try await bob.page(of: trip, .around(phrase.hits[0].seq), limit: 3)
            #expect(around.messages.contains(phrase.hits[0].message))

            // Nothing to search for: the server says so.
            await #expect(throws: ScrollbackError.self) { _ = try await bob.search("   ") }
            let solo2: Result<SearchResults, ScrollbackError> = await withCheckedContinuation { done in
                alice.search("ferry", in: solo) { done.resume(returning: $0) }
            }
            guard case .failure(.notFound(.conversationNotFound, _)) = solo2 else {
                Issue.record("expected conversation_not_found, got \(solo2)")
                return
            }
            let viaCompletion: Result<SearchResults, ScrollbackError> = await withCheckedContinuation { done in
                alice.search("ferry", limit: 1) { done.resume(returning: $0) }
            }
            #expect(try viaCompletion.get().hits.map(\.seq) == [3])
        }
    }
}
