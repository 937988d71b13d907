import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

@Suite struct DeviceClientTests {
    @Test func devicesAreRegisteredListedAndRemovedThroughTheKit() async throws {
        try await LiveCluster.run { cluster in
            let alice = ClientTests.client(cluster, "alice")
            let token = String(repeating: "9a", count: 32)
            let device = try await alice.registerDevice("ipad:1", platform: .apns, token: token)
            #expect(device.deviceId == "ipad:1" && device.platform == .apns && device.token == token)
            let viaCompletion = try await withCheckedThrowingContinuation { continuation in
                alice.registerDevice("web-1", platform: .web, token: "https://push.example/abc") {
                    continuation.resume(with: $0)
                }
            }
            #expect(viaCompletion.platform == .web)
            #expect(Set(try await alice.devices().map(\.deviceId)) == ["ipad:1", "web-1"])
            try await alice.removeDevice("ipad:1")
            #expect(try await alice.devices().map(\.deviceId) == ["web-1"])
            do {
                try await alice.removeDevice("ipad:1")
                Issue.record("a device removed twice was found")
            } catch let error as ScrollbackError {
                #expect(error.code == .deviceNotFound)
            }
            do {
                _ = try await alice.registerDevice("x", platform: .fcm, token: "with space")
                Issue.record("a token with a space was taken")
            } catch let error as ScrollbackError {
                #expect(error.code == .invalidDevice)
            }
        }
    }

    @Test func conversationsAreMutedAndUnmutedThroughTheKit() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let bob = ClientTests.client(cluster, "bob")
            #expect(try await bob.mute(id) == MuteState(conversationId: id, muted: true, mutedUntil: nil))
            #expect(try await bob.conversation(id).muted)
            let until = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 600).rounded())
            let timed = try await withCheckedThrowingContinuation { continuation in
                bob.mute(id, until: until) { continuation.resume(with: $0) }
            }
            #expect(timed.mutedUntil == until)
            #expect(try await !bob.unmute(id).muted)
            #expect(try await !bob.conversation(id).muted)
            do {
                _ = try await bob.mute(id, until: Date(timeIntervalSince1970: 0))
                Issue.record("a mute that ended in 1970 was taken")
            } catch let error as ScrollbackError {
                #expect(error.code == .invalidMute)
            }
        }
    }

    @Test func presenceIsReadAndHiddenThroughTheKit() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let alice = ClientTests.client(cluster, "alice")
            let members = try await alice.presence(of: id)
            #expect(members.map(\.userId) == ["alice", "bob"] && members.allSatisfy { !$0.online })
            let bob = ClientTests.client(cluster, "bob")
            let hidden = try await withCheckedThrowingContinuation { continuation in
                bob.setPresenceHidden(true) { continuation.resume(with: $0) }
            }
            #expect(hidden.hidden)
            do {
                _ = try await ClientTests.client(cluster, "mallory").presence(of: id)
                Issue.record("a stranger saw a conversation's presence")
            } catch let error as ScrollbackError {
                #expect(error.code == .conversationNotFound)
            }
        }
    }
}
