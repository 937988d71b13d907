import Foundation

/// What a user is called and what they look like, as every answer that
/// names users carries it (`users` of a page, `GET /v1/users/{id}`, the
/// `user_updated` frame).
///
/// `display_name` and `avatar` are what the user or the operator set or,
/// while they set nothing, the `name` and `picture` claims of the user's
/// identity provider; null when there is neither (a client shows the id,
/// and initials). `data` is the app's own JSON object about the user
/// (``CustomData``), never read by the server. `version` moves on every
/// change: of two answers about one user, the one with the higher version
/// is the newer.
public struct UserProfile: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case id
        case displayName = "display_name"
        case avatar
        case data
        case version
    }

    public var id: String
    public var displayName: String?
    public var avatar: ProfileImage?
    public var data: CustomData?
    public var version: Int64

    public init(
        id: String, displayName: String? = nil, avatar: ProfileImage? = nil, data: CustomData? = nil,
        version: Int64 = 0
    ) {
        self.id = id
        self.displayName = displayName
        self.avatar = avatar
        self.data = data
        self.version = version
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
        avatar = try container.decodeIfPresent(ProfileImage.self, forKey: .avatar)
        data = try container.decodeIfPresent(CustomData.self, forKey: .data)
        version = try container.decode(Int64.self, forKey: .version)
    }

    /// The profile of a user no one has described: their id, nothing else.
    public static func bare(_ id: String) -> UserProfile { UserProfile(id: id) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(avatar, forKey: .avatar)
        try container.encode(data, forKey: .data)
        try container.encode(version, forKey: .version)
    }
}

/// A picture of a user (or of a conversation): where to load it, and, when
/// known, its pixel size and a blurhash, so a list reserves its box and
/// shows a placeholder before it loads.
public struct ProfileImage: Codable, Sendable, Hashable {
    public var url: String
    public var width: Int?
    public var height: Int?
    public var blurhash: String?

    /// The rule of an image's URL (openapi.yaml states it as the pattern of
    /// `ProfileImage.url`): https, a host, and a path and query of URL
    /// characters with any other percent-encoded.
    public static let urlPattern = #"^https://[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]{1,5})?(/([A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*)?([?]([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"#

    /// Whether `text` is an image URL the API takes: ``urlPattern`` and at
    /// most ``APILimits/maxImageURLBytes`` bytes.
    public static func isValidURL(_ text: String) -> Bool {
        text.utf8.count <= APILimits.maxImageURLBytes && text.wholeMatch(of: urlRegex) != nil
    }

    nonisolated(unsafe) private static let urlRegex = try! Regex(urlPattern)

    public init(url: String, width: Int? = nil, height: Int? = nil, blurhash: String? = nil) {
        self.url = url
        self.width = width
        self.height = height
        self.blurhash = blurhash
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(blurhash, forKey: .blurhash)
        try container.encode(height, forKey: .height)
        try container.encode(url, forKey: .url)
        try container.encode(width, forKey: .width)
    }

    enum CodingKeys: String, CodingKey {
        case url, width, height, blurhash
    }
}

extension UserProfile: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("avatar")
        if let avatar { avatar.write(to: &writer) } else { writer.null() }
        writer.key("data")
        if let data { data.write(to: &writer) } else { writer.null() }
        writer.key("display_name")
        writer.string(displayName)
        writer.key("id")
        writer.string(id)
        writer.key("version")
        writer.number(version)
        writer.endObject()
    }
}

extension ProfileImage: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("blurhash")
        writer.string(blurhash)
        writer.key("height")
        if let height { writer.number(height) } else { writer.null() }
        writer.key("url")
        writer.string(url)
        writer.key("width")
        if let width { writer.number(width) } else { writer.null() }
        writer.endObject()
    }
}

/// The profiles an answer names, by user id, each once: written as a JSON
/// object whose keys are the ids, in byte order.
public struct ProfileSet: Sendable, Hashable, Codable {
    public var profiles: [String: UserProfile]

    public init(_ profiles: [UserProfile] = []) {
        self.profiles = Dictionary(profiles.map { ($0.id, $0) }, uniquingKeysWith: { a, b in a.version >= b.version ? a : b })
    }

    public subscript(id: String) -> UserProfile? { profiles[id] }
    public var isEmpty: Bool { profiles.isEmpty }
    public var count: Int { profiles.count }

    public init(from decoder: any Decoder) throws {
        profiles = try decoder.singleValueContainer().decode([String: UserProfile].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(profiles)
    }
}

extension ProfileSet: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        for (index, id) in profiles.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).enumerated() {
            if index > 0 { writer.raw(UInt8(ascii: ",")) }
            writer.string(id)
            writer.raw(UInt8(ascii: ":"))
            profiles[id]!.write(to: &writer)
        }
        writer.endObject()
    }
}

/// `PATCH /v1/users/me`: each field left out stays as it is; `null` clears
/// it (the identity provider's claim shows again, when there is one).
/// An avatar is uploaded (`PUT /v1/users/me/avatar`) or set by the
/// operator (`PUT /v1/admin/users/{id}/profile`); a user may clear theirs
/// here.
public struct UpdateProfileRequest: Decodable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case displayName = "display_name"
        case avatar
        case data
    }

    public var displayName: FieldChange<String>
    public var avatar: FieldChange<ProfileImage>
    public var data: FieldChange<CustomData>

    public init(
        displayName: FieldChange<String> = .unchanged, avatar: FieldChange<ProfileImage> = .unchanged,
        data: FieldChange<CustomData> = .unchanged
    ) {
        self.displayName = displayName
        self.avatar = avatar
        self.data = data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        displayName = try FieldChange(container, .displayName)
        avatar = try FieldChange(container, .avatar)
        data = try FieldChange(container, .data)
    }
}

extension UpdateProfileRequest: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try displayName.encode(into: &container, .displayName)
        try avatar.encode(into: &container, .avatar)
        try data.encode(into: &container, .data)
    }
}

/// `PUT /v1/admin/users/{id}/profile`: the profile as a whole; a field left
/// out or null is cleared.
public struct SetProfileRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case displayName = "display_name"
        case avatar
        case data
    }

    public var displayName: String?
    public var avatar: ProfileImage?
    public var data: CustomData?

    public init(displayName: String? = nil, avatar: ProfileImage? = nil, data: CustomData? = nil) {
        self.displayName = displayName
        self.avatar = avatar
        self.data = data
    }
}

/// One field of a partial update: left as it is, cleared, or set.
public enum FieldChange<Value: Codable & Sendable & Equatable>: Sendable, Equatable {
    case unchanged
    case cleared
    case set(Value)

    init<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, _ key: Key) throws {
        if !container.contains(key) {
            self = .unchanged
        } else if try container.decodeNil(forKey: key) {
            self = .cleared
        } else {
            self = .set(try container.decode(Value.self, forKey: key))
        }
    }

    func encode<Key: CodingKey>(into container: inout KeyedEncodingContainer<Key>, _ key: Key) throws {
        switch self {
        case .unchanged: break
        case .cleared: try container.encodeNil(forKey: key)
        case .set(let value): try container.encode(value, forKey: key)
        }
    }

    /// `current` after the change.
    public func applied(to current: Value?) -> Value? {
        switch self {
        case .unchanged: current
        case .cleared: nil
        case .set(let value): value
        }
    }
}

/// `GET /v1/users?q=` and `GET /v1/users?ids=`: profiles, and for a search
/// the cursor of the next page (null after the last).
public struct UserList: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case users
        case nextCursor = "next_cursor"
    }

    public var users: [UserProfile]
    public var nextCursor: String?

    public init(users: [UserProfile], nextCursor: String? = nil) {
        self.users = users
        self.nextCursor = nextCursor
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(nextCursor, forKey: .nextCursor)
        try container.encode(users, forKey: .users)
    }
}

/// `GET /v1/users/{id}`, `PATCH /v1/users/me`, `PUT /v1/admin/users/{id}/profile`.
public struct UserEnvelope: Codable, Sendable, Equatable {
    public var user: UserProfile

    public init(user: UserProfile) {
        self.user = user
    }
}
