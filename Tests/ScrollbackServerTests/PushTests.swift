import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The push gateway on loopback, fed by real instances: who is pushed
/// (members other than the sender, not muted, with a device, without a
/// live socket), with the counts their inbox shows, silent updates when
/// they read, and tokens the gateway rejects forgotten.
@Suite struct PushTests {
    static let secret = "push-test-secret-0123456789"
    static let token = String(repeating: "ab", count: 32)

    static func run(
        _ gateway: WebhookReceiver, always: Bool = false, withholdContent: Bool = false,
        _ test: @escaping @Sendable (LiveCluster) async throws -> Void
    ) async throws {
        try await gateway.serve { url in
            try await LiveCluster.run(configure: { configuration in
                configuration.outbox.pushGatewayURL = url
                configuration.outbox.pushSecret = secret
                WebhookTests.retryFast(&configuration.outbox)
                configuration.outbox.pushEvenOnline = always
                configuration.outbox.withholdPushContent = withholdContent
            }) { cluster in
                let deadline = ContinuousClock.now + .seconds(30)
                while try await !cluster.store.outboxSinks().contains(.push), ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                try await test(cluster)
            }
        }
    }

    static func notifications(_ deliveries: [WebhookReceiver.Delivery]) throws -> [PushNotification] {
        try deliveries.map { try ScrollbackJSON.decoder().decode(PushNotification.self, from: Data($0.body)) }
    }

    static func register(_ store: ScrollbackStore, _ user: String, token: String = token) async throws {
        _ = try await store.registerDevice(
            "phone-\(user)", of: UserID(rawValue: user),
            RegisteredDevice(platform: .apns, token: token + user, appID: "com.example.chat", environment: .sandbox),
            limit: 20)
    }

    /// The counts the inbox shows `user`: unread messages over every
    /// conversation, and conversations with any.
    static func inboxCounts(_ store: ScrollbackStore, _ user: String) async throws -> UnreadCounts {
        let page = try await store.conversations(for: UserID(rawValue: user), limit: 100, after: nil)
        let unread = page.conversations.map(\.unreadCount)
        return UnreadCounts(unreadMessages: unread.reduce(0, +), unreadConversations: Int64(unread.filter { $0 > 0 }.count))
    }

    @Test func eachOfflineUnmutedRecipientIsPushedWithTheInboxCounts() async throws {
        let gateway = WebhookReceiver()
        try await Self.run(gateway) { cluster in
            let store = cluster.store
            let id = try await cluster.conversation("alice", members: ["bob", "carol", "dave"])
            let other = try await cluster.conversation("erin", members: ["bob"])
            for user in ["alice", "bob", "carol"] { try await Self.register(store, user) }
            _ = try await store.setMute(id, for: "carol", muted: true, until: nil)
            // Counts are read when the push goes out: each send waits for
            // the push before it, so each push's counts are known exactly.
            let sends = [(other, "erin", "elsewhere"), (id, "alice", "hello @bob"), (id, "alice", "are you there?")]
            var deliveries: [WebhookReceiver.Delivery] = []
            for (index, (conversation, sender, body)) in sends.enumerated() {
                _ = try await store.send(to: conversation, from: UserID(rawValue: sender), body: body, clientID: nil)
                deliveries = try await gateway.wait("push \(index + 1) to bob") { $0.count > index }
            }
            try await Task.sleep(for: .milliseconds(400))
            let pushes = try Self.notifications(gateway.deliveries)
            // Only bob: alice sent, carol muted, dave has no device.
            #expect(pushes.map(\.userId) == ["bob", "bob", "bob"])
            #expect(pushes.map(\.type) == [.message, .message, .message])
            #expect(pushes.map(\.excerpt) == ["elsewhere", "hello @bob", "are you there?"])
            #expect(pushes.map(\.mention) == [false, true, false])
            #expect(pushes.map(\.counts) == [
                UnreadCounts(unreadMessages: 1, unreadConversations: 1),
                UnreadCounts(unreadMessages: 2, unreadConversations: 2),
                UnreadCounts(unreadMessages: 3, unreadConversations: 2),
            ])
            #expect(pushes.last?.counts == (try await Self.inboxCounts(store, "bob")))
            #expect(pushes[0].devices == [
                PushDevice(
                    deviceId: "phone-bob", platform: .apns, token: Self.token + "bob", appId: "com.example.chat",
                    environment: .sandbox)
            ])
            #expect(Set(pushes.map(\.id)).count == 3)
            for delivery in deliveries {
                #expect(throws: Never.self) {
                    try WebhookSignature.verify(delivery.signature, body: delivery.body, secret: Self.secret)
                }
            }

            // Bob reads on one device: a silent update takes his badge down.
            _ = try await store.markRead(2, in: id, by: "bob")
            _ = try await gateway.wait("the counts update") { $0.count >= 4 }
            let update = try #require(try Self.notifications(gateway.deliveries).last)
            #expect(update.type == .counts && update.userId == "bob" && update.excerpt == nil)
            #expect(update.counts == UnreadCounts(unreadMessages: 1, unreadConversations: 1))
            #expect(update.counts == (try await Self.inboxCounts(store, "bob")))

            // Carol's mute runs out: she is pushed again.
            _ = try await store.setMute(id, for: "carol", muted: false, until: nil)
            _ = try await store.send(to: id, from: "alice", body: "carol?", clientID: nil)
            _ = try await gateway.wait("the pushes after the unmute") { $0.count >= 6 }
            let last = try Self.notifications(gateway.deliveries).suffix(2)
            #expect(Set(last.map(\.userId)) == ["bob", "carol"])
            let carols = try #require(last.first { $0.userId == "carol" })
            #expect(carols.counts == (try await Self.inboxCounts(store, "carol")))
        }
    }

    /// A member with a live socket on any instance sees the message there:
    /// no push, unless the server pushes always.
    @Test func aUserWithALiveSocketIsNotPushedUnlessAlways() async throws {
        let gateway = WebhookReceiver()
        try await Self.run(gateway) { cluster in
            let store = cluster.store
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await Self.register(store, "bob")
            let socket = try await cluster.connect("bob")
            // Presence is written within a second.
            let deadline = ContinuousClock.now + .seconds(30)
            while try await store.online(["bob"]).isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            _ = try await store.send(to: id, from: "alice", body: "while online", clientID: nil)
            // Its event handled (no one to push) before bob goes offline.
            while try await store.outboxCounts(.push).pending > 0, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await store.outboxCounts(.push).pending == 0)
            #expect(gateway.deliveries.isEmpty)
            socket.close()
            while try await !store.online(["bob"]).isEmpty, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            _ = try await store.send(to: id, from: "alice", body: "after", clientID: nil)
            _ = try await gateway.wait("the push once offline") { !$0.isEmpty }
            #expect(try Self.notifications(gateway.deliveries).map(\.excerpt) == ["after"])
        }
        let always = WebhookReceiver()
        try await Self.run(always, always: true, withholdContent: true) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await Self.register(cluster.store, "bob")
            let socket = try await cluster.connect("bob")
            defer { socket.close() }
            _ = try await cluster.store.send(to: id, from: "alice", body: "secret", clientID: nil)
            _ = try await always.wait("the push while online") { !$0.isEmpty }
            let push = try #require(try Self.notifications(always.deliveries).first)
            #expect(push.excerpt == nil && push.userId == "bob")
        }
    }

    /// A token the gateway answers as rejected is forgotten, and a gateway
    /// that fails is retried without pushing twice to those it reached.
    @Test func rejectedTokensAreForgottenAndRetriesSkipWhoWasReached() async throws {
        let failedOnce = NIOLockedValueBox(false)
        let gateway = WebhookReceiver { delivery in
            guard let push = try? ScrollbackJSON.decoder().decode(PushNotification.self, from: Data(delivery.body))
            else { return .status(400) }
            if push.userId == "carol", !failedOnce.withLockedValue({ failed in defer { failed = true }; return failed }) {
                return .status(502)
            }
            if push.userId == "bob" { return .json(200, #"{"rejected": ["\#(push.devices[0].token)"]}"#) }
            return .status(200)
        }
        try await Self.run(gateway) { cluster in
            let store = cluster.store
            let id = try await cluster.conversation("alice", members: ["bob", "carol"])
            try await Self.register(store, "bob")
            try await Self.register(store, "carol")
            _ = try await store.send(to: id, from: "alice", body: "hi", clientID: nil)
            _ = try await gateway.wait("bob once, carol twice") { $0.count >= 3 }
            try await Task.sleep(for: .milliseconds(500))
            let users = try Self.notifications(gateway.deliveries).map(\.userId)
            #expect(users == ["bob", "carol", "carol"])
            #expect(gateway.deliveries.map(\.attempt) == [1, 1, 2])
            #expect(try await store.devices(of: "bob").isEmpty)
            #expect(try await store.devices(of: "carol").count == 1)
        }
    }
}
