import Foundation
import HTTPTypes
import Logging
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// Devices registered for push notifications, through the HTTP API on a
/// real server and PostgreSQL.
@Suite struct DeviceAPITests {
    static func register(
        _ server: TestServer, _ deviceID: String, as user: String, platform: String = "apns",
        token: String = String(repeating: "ab", count: 32)
    ) async throws -> TestServer.Reply {
        try await server.request(
            .put, "/v1/devices/\(deviceID)", as: user, json: RegisterDeviceRequest(platform: platform, token: token))
    }

    @Test func aDeviceIsRegisteredReplacedListedAndRemoved() async throws {
        try await TestServer.run { server in
            let created = try await Self.register(server, "iphone-1", as: "alice")
            #expect(created.status == .created, "\(created.text)")
            let device = try created.decode(Device.self)
            #expect(device.deviceId == "iphone-1" && device.platform == .apns)

            // A new token for the same device replaces the old one: 200, one device.
            let again = try await Self.register(server, "iphone-1", as: "alice", token: String(repeating: "cd", count: 32))
            #expect(again.status == .ok)
            #expect(try again.decode(Device.self).createdAt == device.createdAt)
            _ = try await Self.register(server, "pixel", as: "alice", platform: "fcm", token: "fcm:" + String(repeating: "x", count: 150))
            let list = try await server.request(.get, "/v1/devices", as: "alice").decode(DeviceList.self)
            #expect(list.devices.map(\.deviceId) == ["pixel", "iphone-1"])
            #expect(list.devices.last?.token == String(repeating: "cd", count: 32))
            // Nobody else's.
            #expect(try await server.request(.get, "/v1/devices", as: "bob").decode(DeviceList.self).devices.isEmpty)
            #expect(try await server.request(.delete, "/v1/devices/pixel", as: "bob").status == .notFound)

            #expect(try await server.request(.delete, "/v1/devices/pixel", as: "alice").status == .noContent)
            let gone = try await server.request(.delete, "/v1/devices/pixel", as: "alice")
            #expect(try gone.status == .notFound && (gone.error().error.code) == .deviceNotFound)
            #expect(try await server.request(.get, "/v1/devices", as: "alice").decode(DeviceList.self).devices.count == 1)
        }
    }

    /// A phone signed in as bob after alice hands its token to bob: alice's
    /// notifications must never reach it again.
    @Test func aTokenBelongsToOneUserAtATime() async throws {
        try await TestServer.run { server in
            let token = String(repeating: "0f", count: 32)
            let alices = try await Self.register(server, "phone", as: "alice", token: token)
            let bobs = try await Self.register(server, "phone-b", as: "bob", token: token)
            #expect(alices.status == .created && bobs.status == .created)
            let alice = try await server.request(.get, "/v1/devices", as: "alice").decode(DeviceList.self)
            let bob = try await server.request(.get, "/v1/devices", as: "bob").decode(DeviceList.self)
            #expect(alice.devices.isEmpty)
            #expect(bob.devices.map(\.token) == [token])
        }
    }

    /// One phone's token registered by ten users at once on two
    /// instances (the app signed in and out fast, or a replayed request),
    /// ten times over: every request is answered 200 or 201, never 500, one
    /// device holds the token after each round, and no log line holds it.
    @Test func aTokenRegisteredByManyUsersAtOnceEndsWithOneOfThem() async throws {
        let log = CapturedLog()
        var logger = Logger(label: "scrollback.tests.devices") { _ in log.handler() }
        logger.logLevel = .info
        try await LiveCluster.run(instances: 2, logger: logger) { cluster in
            let users = (1...10).map { "user\($0)" }
            for round in 1...10 {
                let token = "race-token-\(round)-" + String(repeating: "f", count: 40)
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for (n, user) in users.enumerated() {
                        group.addTask {
                            try await cluster.request(
                                .PUT, "/v1/devices/phone", as: user,
                                body: #"{"platform": "fcm", "token": "\#(token)"}"#, on: n % 2
                            ).status
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == 200 || $0 == 201 }, "round \(round): \(statuses)")
                let holders = try await cluster.store.values(
                    String.self, "SELECT user_id FROM devices WHERE token = \(token)")
                #expect(holders.count == 1, "round \(round): \(holders)")
            }
        }
        let lines = log.entries.map { "\($0.message) \($0.metadata)" }
        #expect(!lines.contains { $0.contains("race-token") }, "\(lines.filter { $0.contains("race-token") })")
        #expect(log.messages(at: .error).isEmpty, "\(log.messages(at: .error))")
    }

    @Test func badDevicesAreRefusedWithWhatToFixAndTheLimitHolds() async throws {
        try await TestServer.run { server in
            func code(_ reply: TestServer.Reply) throws -> APIErrorCode { try reply.error().error.code }
            #expect(try code(try await Self.register(server, "d1", as: "alice", platform: "blackberry")) == .invalidDevice)
            #expect(try code(try await Self.register(server, "d1", as: "alice", token: "")) == .invalidDevice)
            #expect(try code(try await Self.register(server, "d1", as: "alice", token: "has space")) == .invalidDevice)
            let long = String(repeating: "t", count: APILimits.maxDeviceTokenLength + 1)
            #expect(try code(try await Self.register(server, "d1", as: "alice", token: long)) == .invalidDevice)
            let longID = String(repeating: "i", count: APILimits.maxDeviceIDLength + 1)
            #expect(try code(try await Self.register(server, longID, as: "alice")) == .invalidDevice)
            #expect(try code(try await Self.register(server, "bad%20id", as: "alice")) == .invalidDevice)
            let missing = try await server.request(.put, "/v1/devices/d1", as: "alice", rawBody: #"{"platform": "apns"}"#)
            #expect(missing.status == .badRequest)
            #expect(try await server.request(.get, "/v1/devices").status == .unauthorized)
            #expect(try await server.request(.get, "/v1/devices", as: "alice").decode(DeviceList.self).devices.isEmpty)

            // The limit, with many registrations at once: never more than it.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<(APILimits.maxDevicesPerUser + 10) {
                    group.addTask { _ = try await Self.register(server, "d\(n)", as: "alice", token: "token-\(n)") }
                }
                try await group.waitForAll()
            }
            let devices = try await server.request(.get, "/v1/devices", as: "alice").decode(DeviceList.self).devices
            #expect(devices.count == APILimits.maxDevicesPerUser)
            let over = try await Self.register(server, "one-more", as: "alice", token: "token-more")
            #expect(try over.status == .unprocessableContent && (code(over)) == .tooManyDevices)
            // Registering a known device again is not a new one.
            #expect(try await Self.register(server, devices[0].deviceId, as: "alice", token: "fresh").status == .ok)
        }
    }

    /// A device names its app and, for APNs, its environment: kept, listed,
    /// replaced with the token, and refused with what to fix when bad
    /// (nothing changes then).
    @Test func aDeviceNamesItsAppAndItsAPNsEnvironment() async throws {
        try await TestServer.run { server in
            func put(_ id: String, _ body: String) async throws -> TestServer.Reply {
                try await server.request(.put, "/v1/devices/\(id)", as: "alice", rawBody: body)
            }
            let token = String(repeating: "ab", count: 32)
            let sandbox = try await put("iphone", #"{"platform": "apns", "token": "\#(token)", "app_id": "com.example.chat", "environment": "sandbox"}"#)
            #expect(sandbox.status == .created, "\(sandbox.text)")
            var device = try sandbox.decode(Device.self)
            #expect(device.appId == "com.example.chat" && device.environment == .sandbox)
            // APNs without an environment is production; other platforms have none.
            device = try await put("iphone", #"{"platform": "apns", "token": "\#(token)"}"#).decode(Device.self)
            #expect(device.appId == nil && device.environment == .production)
            let pixel = try await put("pixel", #"{"platform": "fcm", "token": "fcm-1", "app_id": "com.example.chat_2"}"#)
            let android = try pixel.decode(Device.self)
            #expect(android.environment == nil && android.appId == "com.example.chat_2")
            let relay = try await put("relay", #"{"platform": "gateway", "token": "relay-1", "app_id": "im.example.push"}"#)
            #expect(relay.status == .created)
            #expect(try relay.decode(Device.self).platform == .gateway)
            let raw = try #require(try JSONSerialization.jsonObject(with: Data(sandbox.text.utf8)) as? [String: Any])
            #expect(raw["app_id"] as? String == "com.example.chat" && raw["environment"] as? String == "sandbox")

            for (body, says) in [
                (#"{"platform": "fcm", "token": "t", "environment": "sandbox"}"#, "apns"),
                (#"{"platform": "apns", "token": "t", "environment": "staging"}"#, "production, sandbox"),
                (#"{"platform": "apns", "token": "t", "app_id": "com example"}"#, "app_id"),
                (#"{"platform": "apns", "token": "t", "app_id": ""}"#, "app_id"),
                (#"{"platform": "apns", "token": "t", "app_id": "\#(String(repeating: "a", count: APILimits.maxDeviceAppIDLength + 1))"}"#, "app_id"),
                (#"{"platform": "apns", "token": "t", "app_id": "com.exämple"}"#, "app_id"),
            ] {
                let reply = try await put("iphone", body)
                #expect(reply.status == .unprocessableContent, "\(body)")
                let error = try reply.error().error
                #expect(error.code == .invalidDevice && error.message.contains(says), "\(reply.text)")
            }
            let list = try await server.request(.get, "/v1/devices", as: "alice").decode(DeviceList.self).devices
            #expect(list.count == 3)
            #expect(list.first { $0.deviceId == "iphone" }.map { $0.token == token && $0.environment == .production } == true)
        }
    }
}
