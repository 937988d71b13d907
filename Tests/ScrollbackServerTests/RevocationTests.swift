import Foundation
import NIOConcurrencyHelpers
import NIOHTTP1
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackTestSupport
import Testing

@Suite("Revoking a user's tokens")
struct RevocationTests {
    /// GET /v1/conversations with `token` on instance `index`: its status.
    static func status(_ cluster: LiveCluster, _ token: String, on index: Int = 0) async throws -> Int {
        try await cluster.request(.GET, "/v1/conversations", token: token, on: index).status
    }

    /// Until `check` holds, for at most `limit`.
    static func eventually(within limit: Duration = .seconds(10), _ check: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try await check() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await check()
    }

    /// Revokes `user`'s tokens through the admin route of instance `index`.
    static func revoke(_ user: String, in cluster: LiveCluster, on index: Int = 0) async throws -> TokenRevocation {
        let server = try await cluster.tokens.serverToken(named: "security", ttl: 600)
        let path = "/v1/admin/users/\(user.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? user)/revoke"
        let reply = try await cluster.request(.POST, path, token: server, on: index)
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
        return try reply.decode(TokenRevocation.self)
    }

    @Test("A revocation refuses the user's older tokens on every instance, closes their sockets on both with 4401, and is audited")
    func revocationReachesEveryInstance() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let old = try await cluster.token("alice")
            let bystander = try await cluster.token("bob")
            // Both instances have read that alice was never revoked.
            for index in 0..<2 { #expect(try await Self.status(cluster, old, on: index) == 200) }
            let sockets = [try await cluster.connect("alice", to: 0), try await cluster.connect("alice", to: 1)]
            let bobSocket = try await cluster.connect("bob", to: 1)
            // Tokens are issued in whole seconds: the revocation comes in a later one.
            try await Task.sleep(for: .milliseconds(1100))
            let revocation = try await Self.revoke("alice", in: cluster)
            #expect(revocation.userId == "alice")
            #expect(revocation.revokedBefore <= Date())
            #expect(try await Self.status(cluster, old, on: 0) == 401)
            #expect(try await Self.eventually { try await Self.status(cluster, old, on: 1) == 401 })
            for socket in sockets {
                let close = try await socket.closed(timeout: .seconds(10))
                #expect(close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) } == StreamCloseCode.unauthorized)
            }
            // Others are untouched; a token issued after it works everywhere.
            await #expect(throws: StreamClientError.self) { try await bobSocket.closed(timeout: .milliseconds(300)) }
            #expect(try await Self.status(cluster, bystander, on: 1) == 200)
            let fresh = try await cluster.token("alice")
            for index in 0..<2 { #expect(try await Self.status(cluster, fresh, on: index) == 200) }
            let again = try await cluster.connect("alice", to: 1)
            await #expect(throws: StreamClientError.self) { try await again.closed(timeout: .milliseconds(500)) }
            // The audit log names the call and the user.
            let server = try await cluster.tokens.serverToken(named: "security", ttl: 600)
            let audit = try await cluster.request(.GET, "/v1/admin/audit", token: server).decode(AuditPage.self)
            let entry = audit.entries.first { $0.path.hasSuffix("/revoke") }
            #expect(entry?.actor == "security")
            #expect(entry?.detail?["user_id"] == "alice")
            #expect(entry?.status == 200)
        }
    }

    @Test("Sockets that sign in on one instance while the revocation lands on the other all end closed with 4401")
    func revocationRacingSockets() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            var tokens: [String] = []
            for _ in 0..<40 { tokens.append(try await cluster.token("alice")) }
            #expect(try await Self.status(cluster, tokens[0], on: 1) == 200)
            try await Task.sleep(for: .milliseconds(1100))
            let sockets = NIOLockedValueBox<[StreamClient]>([])
            async let revoked = Self.revoke("alice", in: cluster, on: 0)
            await withTaskGroup(of: Void.self) { group in
                for (index, token) in tokens.enumerated() {
                    group.addTask {
                        try? await Task.sleep(for: .milliseconds(index * 4))
                        let socket = StreamClient(port: cluster.instances[1].port, token: token)
                        sockets.withLockedValue { $0.append(socket) }
                    }
                }
            }
            _ = try await revoked
            for socket in sockets.withLockedValue({ $0 }) {
                let close = try await socket.closed(timeout: .seconds(15))
                #expect(close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) } == StreamCloseCode.unauthorized)
            }
            // And any socket opened afterwards with one of them is refused.
            let late = StreamClient(port: cluster.instances[1].port, token: tokens[0])
            let close = try await late.closed(timeout: .seconds(15))
            #expect(close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) } == StreamCloseCode.unauthorized)
        }
    }

    @Test("An erasure revokes the user's tokens; a user the service never saw can be revoked ahead")
    func erasureRevokes() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let old = try await cluster.token("carol")
            let created = try await cluster.request(.POST, "/v1/conversations", token: old, body: #"{"members":["dave"]}"#)
            #expect(created.status == 201)
            #expect(try await Self.status(cluster, old, on: 1) == 200)
            try await Task.sleep(for: .milliseconds(1100))
            let server = try await cluster.tokens.serverToken(named: "privacy", ttl: 600)
            #expect(try await cluster.request(.DELETE, "/v1/admin/users/carol", token: server).status == 200)
            #expect(try await Self.status(cluster, old, on: 0) == 401)
            #expect(try await Self.eventually { try await Self.status(cluster, old, on: 1) == 401 })

            let stranger = try await cluster.token("never-seen")
            try await Task.sleep(for: .milliseconds(1100))
            _ = try await Self.revoke("never-seen", in: cluster)
            #expect(try await Self.status(cluster, stranger, on: 0) == 401)
            // Revoking again moves the time forward, never back.
            let first = try await cluster.store.tokensRevoked(of: "never-seen")
            try await Task.sleep(for: .milliseconds(1100))
            let second = try await Self.revoke("never-seen", in: cluster)
            #expect(first.map { second.revokedBefore > $0 } == true)
        }
    }

    @Test("After a revocation, a key set's token without iat is refused; one issued after it signs in")
    func tokensWithoutIssuedAt() async throws {
        let keys = ProviderKeys()
        let jwks = KeySetServer()
        try jwks.publish([keys.ecJWK(kid: "ec-1")])
        try await jwks.serve { url in
            try await LiveCluster.run(configure: IdentityProviderTests.configure(url)) { cluster in
                let id = "google-oauth2|1234"
                let undated = try await keys.token(ProviderKeys.claims(id, ["iat": nil]), signer: .ec, kid: "ec-1")
                #expect(try await Self.status(cluster, undated) == 200)
                _ = try await Self.revoke(id, in: cluster)
                let reply = try await cluster.request(.GET, "/v1/conversations", token: undated)
                #expect(reply.status == 401)
                #expect((try? reply.decode(APIErrorBody.self).error.message)?.contains("revoked") == true)
                try await Task.sleep(for: .milliseconds(1100))
                let dated = try await keys.token(ProviderKeys.claims(id), signer: .ec, kid: "ec-1")
                #expect(try await Self.status(cluster, dated) == 200)
            }
        }
    }

    @Test("A revocation needs a server token")
    func revocationIsTheOperators() async throws {
        try await LiveCluster.run { cluster in
            let reply = try await cluster.request(.POST, "/v1/admin/users/bob/revoke", as: "alice")
            #expect(reply.status == 403)
            #expect(try await Self.status(cluster, try await cluster.token("bob")) == 200)
        }
    }
}
