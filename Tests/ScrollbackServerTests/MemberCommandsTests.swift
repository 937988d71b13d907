import Foundation
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The commands both doors take (HTTP and the live stream) are one layer:
/// what it decides holds whichever door a command comes through.
@Suite struct MemberCommandsTests {
    /// A user typing through both doors at once costs the database one
    /// notification per typing interval, not one per notice.
    @Test func typingThroughBothDoorsNotifiesOncePerInterval() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let alice = try await cluster.connect("alice")
            let token = try await cluster.token("alice")
            let started = ContinuousClock.now
            let payloads = try await TestDatabase.feedPayloads(on: cluster.store) {
                for _ in 0..<3 {
                    try alice.send(.typing(conversationId: id))
                    let http = try await RawConnection.open(port: cluster.instances[0].port)
                    try await http.send(
                        "POST /v1/conversations/\(id)/typing HTTP/1.1\r\nHost: test\r\n"
                            + "Authorization: Bearer \(token)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    #expect(await http.closed(within: .seconds(30)))
                    #expect(http.receivedText.hasPrefix("HTTP/1.1 204"), "\(http.receivedText)")
                }
                // The socket's frames are handled in order: a ping's answer
                // comes after every typing frame before it was handled.
                try alice.send(.ping)
                while try await alice.next() != .pong {}
            }
            let typing = payloads.filter { $0.hasPrefix("t:\(id.uuidString.lowercased()):") }
            // One per interval: exactly one unless a busy machine took longer than it.
            let paced = 1 + Int((ContinuousClock.now - started) / .seconds(APILimits.typingIntervalSeconds))
            #expect(typing.count >= 1 && typing.count <= paced, "\(typing)")
        }
    }

    /// A notice that is refused is not counted against the interval: a
    /// non-member is told so every time.
    @Test func aNonMemberIsRefusedEveryTypingNotice() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let commands = MemberCommands(store: store, limiter: RateLimiter(limits: .off))
            for _ in 0..<3 {
                await #expect(throws: StoreError.conversationNotFound) {
                    try await commands.typing(in: id, by: "mallory")
                }
            }
            try await commands.typing(in: id, by: "alice")
        }
    }

    @Test func typingPaceAdmitsOneNoticePerUserAndConversationPerInterval() {
        var pace = TypingPace(interval: .seconds(2))
        let start = ContinuousClock.now
        let (one, two) = (UUID(), UUID())
        func admits(_ user: UserID, _ conversation: UUID, after seconds: Double) -> Bool {
            pace.admits(user, in: conversation, at: start + .seconds(seconds))
        }
        #expect(admits("alice", one, after: 0))
        #expect(!admits("alice", one, after: 1.9))
        #expect(admits("bob", one, after: 1.9), "another user's own interval")
        #expect(admits("alice", two, after: 1.9), "another conversation's own interval")
        #expect(admits("alice", one, after: 2), "the interval is over")
        // Asking starts nothing; recording does.
        let three = UUID()
        #expect(pace.wouldAdmit("carol", in: three, at: start))
        #expect(pace.wouldAdmit("carol", in: three, at: start + .seconds(0.5)), "asked, not recorded")
        pace.record("carol", in: three, at: start + .seconds(0.5))
        #expect(!pace.wouldAdmit("carol", in: three, at: start + .seconds(1)))
    }

    /// Two sockets of one non-member send typing at once: each is told
    /// that the conversation is not theirs, none is dropped as paced.
    @Test func concurrentNoticesOfANonMemberAreAllRefused() async throws {
        try await TestDatabase.withStore { store in
            let id = try await store.createConversation(creator: "alice", title: nil, members: []).id
            let commands = MemberCommands(store: store, limiter: RateLimiter(limits: .off))
            let refused = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        do {
                            try await commands.typing(in: id, by: "mallory")
                            return false
                        } catch StoreError.conversationNotFound {
                            return true
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(refused == 8)
        }
    }
}
