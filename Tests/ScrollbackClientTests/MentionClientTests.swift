import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// `mentions(before:limit:)` through the kit, async and with a completion handler.
@Suite struct MentionClientTests {
    @Test func mentionsPageThroughTheKit() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let bob = ClientTests.client(cluster, "bob")
            let conversation = try await alice.createConversation(members: ["bob"])
            for n in 1...3 { _ = try await alice.send("hi @bob \(n)", to: conversation.id) }
            let first = try await bob.mentions(limit: 2)
            #expect(first.mentions.map(\.seq) == [3, 2])
            let cursor = try #require(first.next)
            let rest: Result<MentionPage, ScrollbackError> = await withCheckedContinuation { done in
                bob.mentions(before: cursor, limit: 2) { done.resume(returning: $0) }
            }
            let last = try rest.get()
            #expect(last.mentions.map(\.seq) == [1] && last.next == nil)
            #expect(try await bob.conversation(conversation.id).unreadMentions == 3)
            #expect(try await bob.markRead(2, in: conversation.id).unreadMentions == 1)
            do {
                _ = try await bob.mentions(before: "not-a-cursor")
                Issue.record("a bad cursor was accepted")
            } catch let error as ScrollbackError {
                guard case .invalidInput(.invalidParameter, _) = error else { throw error }
            }
        }
    }
}
