import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// An app's token provider that caches its token, as one backed by an
/// identity provider does: it mints a new one only when asked to refresh,
/// and records each time it was asked.
final class CachingProvider: Sendable {
    private let state: NIOLockedValueBox<(token: String, asked: [Bool])>
    private let mint: @Sendable () async throws -> String

    init(first: String, mint: @escaping @Sendable () async throws -> String) {
        state = NIOLockedValueBox((first, []))
        self.mint = mint
    }

    var asked: [Bool] { state.withLockedValue { $0.asked } }

    func token(refreshing: Bool) async throws -> String {
        state.withLockedValue { $0.asked.append(refreshing) }
        guard refreshing else { return state.withLockedValue { $0.token } }
        let fresh = try await mint()
        state.withLockedValue { $0.token = fresh }
        return fresh
    }
}

@Suite("The kit asks its token provider for a fresh token once the service refuses one")
struct TokenRefreshTests {
    static func client(_ cluster: LiveCluster, _ provider: CachingProvider) -> ScrollbackClient {
        ScrollbackClient(
            baseURL: cluster.instances[0].baseURL,
            retry: RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(50), maxDelay: .milliseconds(200)),
            tokenProvider: { try await provider.token(refreshing: $0) })
    }

    @Test("A 401 asks for a fresh token once and the call goes on; a provider that stays refused is the call's unauthorized")
    func httpRefresh() async throws {
        try await LiveCluster.run { cluster in
            let expired = try await cluster.tokens.token(for: "alice", ttl: -120)
            let provider = CachingProvider(first: expired) { try await cluster.token("alice") }
            let alice = Self.client(cluster, provider)
            let conversation = try await alice.createConversation(title: "refreshed")
            #expect(conversation.createdBy == "alice")
            #expect(provider.asked == [false, true])
            _ = try await alice.conversations()
            #expect(provider.asked == [false, true, false])

            let stale = CachingProvider(first: expired) { expired }
            do {
                _ = try await Self.client(cluster, stale).conversations()
                Issue.record("a refused token was taken")
            } catch let error as ScrollbackError {
                guard case .unauthorized = error else { throw error }
            }
            #expect(stale.asked == [false, true])
        }
    }

    @Test("A socket closed with 4401 (the token expired, or was revoked) reconnects with a fresh token and the stream goes on")
    func socketRefresh() async throws {
        try await LiveCluster.run { cluster in
            let short = try await cluster.tokens.token(for: "bob", ttl: 2)
            let provider = CachingProvider(first: short) { try await cluster.token("bob") }
            let bob = Self.client(cluster, provider)
            let alice = ClientTests.client(cluster, "alice")
            let id = try await alice.createConversation(members: ["bob"]).id
            let events = NIOLockedValueBox<[LiveEvent]>([])
            let reading = Task {
                for try await event in bob.live(conversation: id, after: 0) { events.withLockedValue { $0.append(event) } }
            }
            defer { reading.cancel() }
            func connections() -> Int {
                events.withLockedValue { $0.filter { if case .connected = $0 { true } else { false } }.count }
            }
            #expect(try await Self.eventually { connections() == 1 })
            // The token expires: the server closes the socket with 4401.
            #expect(try await Self.eventually(within: .seconds(20)) { connections() == 2 })
            #expect(provider.asked.contains(true))
            // A revocation: 4401 again, and the fresh token is one issued after it.
            try await Task.sleep(for: .milliseconds(1100))
            let server = try await cluster.tokens.serverToken(named: "security", ttl: 60)
            let backend = ScrollbackClient(baseURL: cluster.instances[0].baseURL, token: { server })
            let revocation = try await backend.revokeTokens(of: "bob")
            #expect(revocation.userId == "bob")
            #expect(try await Self.eventually(within: .seconds(20)) { connections() == 3 })
            _ = try await alice.send("after both", to: id)
            #expect(try await Self.eventually {
                events.withLockedValue { $0.contains { if case .message(let m) = $0 { m.body == "after both" } else { false } } }
            })
        }
    }

    @Test("A provider whose fresh tokens are refused too ends the stream with unauthorized")
    func socketRefusedForGood() async throws {
        try await LiveCluster.run { cluster in
            let expired = try await cluster.tokens.token(for: "carol", ttl: -120)
            let provider = CachingProvider(first: expired) { expired }
            let carol = Self.client(cluster, provider)
            let id = try await ClientTests.client(cluster, "alice").createConversation(members: ["carol"]).id
            do {
                for try await _ in carol.live(conversation: id, after: 0) {}
                Issue.record("the stream ended without an error")
            } catch let error as ScrollbackError {
                guard case .unauthorized = error else { throw error }
            }
            #expect(provider.asked.contains(true))
        }
    }

    static func eventually(within limit: Duration = .seconds(10), _ check: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try check() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try check()
    }
}
