import AsyncHTTPClient
import NIOHTTP1
import Foundation
import NIOCore
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// Presence over HTTP on real instances: online while a socket is open on
/// any instance, last seen once it closes, hidden on request, and never
/// shown to a user who shares no conversation.
@Suite struct PresenceAPITests {
    /// A request as `user` to instance 0; the status and the body.
    static func request(
        _ cluster: LiveCluster, _ method: HTTPMethod, _ path: String, as user: String, body: String? = nil
    ) async throws -> (Int, Data) {
        let reply = try await cluster.request(method, path, as: user, body: body)
        return (reply.status, reply.body)
    }

    static func presence(_ cluster: LiveCluster, _ id: UUID, as user: String = "alice") async throws
        -> [String: MemberPresence]
    {
        let (status, body) = try await request(cluster, .GET, "/v1/conversations/\(id)/presence", as: user)
        #expect(status == 200)
        let members = try ScrollbackJSON.decoder().decode(ConversationPresence.self, from: body).members
        return Dictionary(uniqueKeysWithValues: members.map { ($0.userId, $0) })
    }

    /// Polls until `condition` holds of conversation `id`'s presence as `client` sees it.
    static func until(
        _ cluster: LiveCluster, _ id: UUID, _ what: String, _ condition: ([String: MemberPresence]) -> Bool
    ) async throws -> [String: MemberPresence] {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let now = try await presence(cluster, id)
            if condition(now) { return now }
            guard ContinuousClock.now < deadline else {
                Issue.record("never: \(what) (\(now))")
                return now
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    @Test func membersSeeWhoIsOnlineAnywhereAndStrangersSeeNothing() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let before = try await Self.presence(cluster, id)
            #expect(before["bob"] == MemberPresence(userId: "bob", online: false, lastSeenAt: nil))

            // Bob's socket is on the other instance.
            let socket = try await cluster.connect("bob", to: 1)
            _ = try await Self.until(cluster, id, "bob online") { $0["bob"]?.online == true }
            // Strangers: the same 404 as a conversation that does not exist.
            let (status, body) = try await Self.request(cluster, .GET, "/v1/conversations/\(id)/presence", as: "mallory")
            #expect(status == 404)
            #expect(try ScrollbackJSON.decoder().decode(APIErrorBody.self, from: body).error.code == .conversationNotFound)
            #expect(!String(decoding: body, as: UTF8.self).contains("bob"))

            socket.close()
            let after = try await Self.until(cluster, id, "bob offline") { $0["bob"]?.online == false }
            let seen = try #require(after["bob"]?.lastSeenAt)
            #expect(abs(seen.timeIntervalSinceNow) < 60)

            // Hidden: offline and never seen, even while connected.
            #expect(try await Self.request(cluster, .PUT, "/v1/presence", as: "bob", body: #"{"hidden": true}"#).0 == 200)
            let again = try await cluster.connect("bob")
            defer { again.close() }
            try await Task.sleep(for: .seconds(1))
            #expect(try await Self.presence(cluster, id)["bob"] == MemberPresence(userId: "bob", online: false, lastSeenAt: nil))
            _ = try await Self.request(cluster, .PUT, "/v1/presence", as: "bob", body: #"{"hidden": false}"#)
            _ = try await Self.until(cluster, id, "bob shown again") { $0["bob"]?.online == true }
        }
    }
}
