import Foundation

/// A member's role in a conversation. Its creator is the `owner` (one per
/// conversation) until they hand ownership over; the owner makes members
/// `admin`s. What each may do is `may(_:on:)`: the one table, which the
/// server enforces and a client may read to show only what will work.
public enum MemberRole: String, Codable, Sendable, CaseIterable, Hashable {
    case owner
    case admin
    case member

    /// What a member may do to a conversation or to another member.
    public enum Action: String, Sendable, CaseIterable {
        /// `POST .../members`.
        case addMember = "add_member"
        /// `DELETE .../members/{user_id}` of another member.
        case removeMember = "remove_member"
        /// The same with `?ban=true`; `DELETE .../bans/{user_id}` lifts it.
        case ban
        /// `GET .../bans`.
        case listBans = "list_bans"
        /// `PATCH .../members/{user_id}`: make a member an admin or an admin
        /// a member, or hand ownership over (`"role": "owner"`).
        case changeRole = "change_role"
        /// `DELETE .../messages/{seq}` of another sender's message.
        case deleteOthersMessage = "delete_others_message"
        /// `PATCH /v1/conversations/{id}` with `title`.
        case setTitle = "set_title"
        /// `PATCH /v1/conversations/{id}` with `slow_mode_seconds`.
        case setSlowMode = "set_slow_mode"
        /// Send during slow mode without waiting.
        case skipSlowMode = "skip_slow_mode"
        /// Set another member's `data` (everyone sets their own).
        case setMemberData = "set_member_data"
    }

    /// Whether a member of this role may do `action`, to a member of role
    /// `target` when the action has one (removing, banning, changing a
    /// role): an owner acts on admins and members, an admin on members.
    public func may(_ action: Action, on target: MemberRole? = nil) -> Bool {
        switch action {
        case .addMember:
            return true
        case .removeMember, .ban:
            return outranks(target ?? .member)
        case .changeRole:
            return self == .owner && (target ?? .member) != .owner
        case .listBans, .deleteOthersMessage, .setTitle, .setSlowMode, .skipSlowMode, .setMemberData:
            return self != .member
        }
    }

    /// An owner outranks admins and members, an admin members.
    public func outranks(_ other: MemberRole) -> Bool {
        switch (self, other) {
        case (.owner, .admin), (.owner, .member), (.admin, .member): true
        default: false
        }
    }
}

/// A member of a conversation and their role.
public struct ConversationMember: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case role
        case data
    }

    public var userId: String
    public var role: MemberRole
    /// The app's own data about this membership (`CustomData`); nil when none.
    public var data: CustomData?

    public init(userId: String, role: MemberRole, data: CustomData? = nil) {
        self.userId = userId
        self.role = role
        self.data = data
    }

    /// The app's own data as its own type; nil when the member has none.
    public func data<T: Decodable>(as type: T.Type) throws -> T? {
        try data?.decode(type)
    }
}

/// `GET /v1/conversations/{id}/members`: every member with their role, by user id.
public struct MemberList: Codable, Sendable, Hashable {
    public var members: [ConversationMember]
    /// Each member's profile, by id.
    public var users: ProfileSet

    public init(members: [ConversationMember], users: ProfileSet = ProfileSet()) {
        self.members = members
        self.users = users
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        members = try container.decode([ConversationMember].self, forKey: .members)
        users = try container.decodeIfPresent(ProfileSet.self, forKey: .users) ?? ProfileSet()
    }
}

/// `PATCH /v1/conversations/{id}/members/{user_id}`: `role` is one of
/// `MemberRole`'s values (kept as sent, so that another is refused with
/// what it must be).
public struct UpdateMemberRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case role
        case data
    }

    public var role: String?
    /// The membership's data (`.some(nil)`: none); nil leaves it as it is.
    /// A member sets their own; the owner or an admin anyone's.
    public var data: CustomData??

    public init(role: MemberRole? = nil, data: CustomData?? = nil) {
        self.role = role?.rawValue
        self.data = data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        role = try container.decodeIfPresent(String.self, forKey: .role)
        data = container.contains(.data) ? .some(try container.decodeIfPresent(CustomData.self, forKey: .data)) : nil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(role, forKey: .role)
        if let data { try container.encode(data, forKey: .data) }
    }
}

/// `PATCH /v1/conversations/{id}`: the fields given change; a `title` of
/// null removes the title.
public struct UpdateConversationRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case title
        case slowModeSeconds = "slow_mode_seconds"
        case description
        case data
    }

    /// Nil: unchanged; `.some(nil)`: no title.
    public var title: String??
    public var slowModeSeconds: Int?
    /// Nil: unchanged; `.some(nil)`: no description.
    public var description: String??
    /// The app's own data. Nil: unchanged; `.some(nil)`: none.
    public var data: CustomData??

    public init(
        title: String?? = nil, slowModeSeconds: Int? = nil, description: String?? = nil, data: CustomData?? = nil
    ) {
        self.title = title
        self.slowModeSeconds = slowModeSeconds
        self.description = description
        self.data = data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        title = container.contains(.title) ? .some(try container.decodeIfPresent(String.self, forKey: .title)) : nil
        slowModeSeconds = try container.decodeIfPresent(Int.self, forKey: .slowModeSeconds)
        description =
            container.contains(.description)
            ? .some(try container.decodeIfPresent(String.self, forKey: .description)) : nil
        data = container.contains(.data) ? .some(try container.decodeIfPresent(CustomData.self, forKey: .data)) : nil
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let title { try container.encode(title, forKey: .title) }
        try container.encodeIfPresent(slowModeSeconds, forKey: .slowModeSeconds)
        if let description { try container.encode(description, forKey: .description) }
        if let data { try container.encode(data, forKey: .data) }
    }
}

/// A user kept out of a conversation.
public struct Ban: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case userId = "user_id"
        case bannedBy = "banned_by"
        case bannedAt = "banned_at"
        case until
    }

    public var userId: String
    public var bannedBy: String
    public var bannedAt: Date
    /// Nil: until lifted.
    public var until: Date?

    public init(userId: String, bannedBy: String, bannedAt: Date, until: Date?) {
        self.userId = userId
        self.bannedBy = bannedBy
        self.bannedAt = bannedAt
        self.until = until
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encode(bannedBy, forKey: .bannedBy)
        try container.encode(bannedAt, forKey: .bannedAt)
        try container.encode(until, forKey: .until)
    }
}

/// `GET /v1/conversations/{id}/bans`: the bans in force, by user id.
public struct BanList: Codable, Sendable, Hashable {
    public var bans: [Ban]

    public init(bans: [Ban]) {
        self.bans = bans
    }
}
