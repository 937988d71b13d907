import Foundation

/// Where a device's push notifications go.
public enum DevicePlatform: String, Codable, Sendable, Hashable, CaseIterable {
    /// Apple Push Notification service (iOS, iPadOS, macOS).
    case apns
    /// Firebase Cloud Messaging (Android).
    case fcm
    /// Web Push (a browser's push subscription).
    case web
    /// Whatever the push gateway (`SCROLLBACK_PUSH_GATEWAY_URL`) forwards to.
    case gateway
}

/// The APNs environment a device's token was issued in: a development
/// build's tokens (`sandbox`) are taken by Apple's sandbox host only.
public enum DeviceEnvironment: String, Codable, Sendable, Hashable, CaseIterable {
    case production
    case sandbox
}

/// A device a user registered for push notifications (`PUT /v1/devices/{device_id}`).
public struct Device: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case deviceId = "device_id"
        case platform, token
        case appId = "app_id"
        case environment
        case createdAt = "created_at"
        case updatedAt = "updated_at"
    }

    /// The app's own id for the installation (stable across token changes).
    public var deviceId: String
    public var platform: DevicePlatform
    /// The platform's push token.
    public var token: String
    /// The app the device's pushes are for (the APNs topic or Android
    /// package); nil: the server's default.
    public var appId: String?
    /// APNs only: the environment the token was issued in (production
    /// unless registered as sandbox); nil for other platforms.
    public var environment: DeviceEnvironment?
    public var createdAt: Date
    /// When the token was last registered.
    public var updatedAt: Date

    public init(
        deviceId: String, platform: DevicePlatform, token: String, appId: String? = nil,
        environment: DeviceEnvironment? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.deviceId = deviceId
        self.platform = platform
        self.token = token
        self.appId = appId
        self.environment = environment
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `PUT /v1/devices/{device_id}`: the platform and its token, and the app
/// and (APNs) environment they belong to.
public struct RegisterDeviceRequest: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case platform, token
        case appId = "app_id"
        case environment
    }

    public var platform: String
    public var token: String
    public var appId: String?
    public var environment: String?

    public init(platform: String, token: String, appId: String? = nil, environment: String? = nil) {
        self.platform = platform
        self.token = token
        self.appId = appId
        self.environment = environment
    }
}

/// `GET /v1/devices`: the caller's devices, most recently registered first.
public struct DeviceList: Codable, Sendable, Hashable {
    public var devices: [Device]

    public init(devices: [Device]) {
        self.devices = devices
    }
}

/// A member's presence as the other members of a conversation see it.
public struct MemberPresence: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case online
        case lastSeenAt = "last_seen_at"
    }

    public var userId: String
    /// A live socket on some instance (false for a user who hides it).
    public var online: Bool
    /// When their last socket closed; nil while online, never seen, or hidden.
    public var lastSeenAt: Date?

    public init(userId: String, online: Bool, lastSeenAt: Date?) {
        self.userId = userId
        self.online = online
        self.lastSeenAt = lastSeenAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encode(online, forKey: .online)
        try container.encode(lastSeenAt, forKey: .lastSeenAt)
    }
}

/// `GET /v1/conversations/{id}/presence`: every member's presence.
public struct ConversationPresence: Codable, Sendable, Hashable {
    public var members: [MemberPresence]

    public init(members: [MemberPresence]) {
        self.members = members
    }
}

/// `PUT /v1/presence`: whether the caller hides their presence.
public struct PresenceSettings: Codable, Sendable, Hashable {
    public var hidden: Bool

    public init(hidden: Bool) {
        self.hidden = hidden
    }
}
