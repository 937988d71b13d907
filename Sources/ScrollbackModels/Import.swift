import Foundation

/// One line of an import (`POST /v1/admin/import`, NDJSON), as sent: every
/// field optional here, so that a line missing one is reported with its
/// number rather than refused as a whole body. `type` says which fields it
/// needs:
///
/// - `conversation`: `id` (a UUID), `created_by`, optional `title`,
///   `description`, `data` and `created_at`;
/// - `member`: `conversation_id`, `user_id`, optional `role` (`member`) and `joined_at`;
/// - `message`: `conversation_id`, `external_id` (its stable id where it
///   came from), `sender`, `body`, `created_at`, optional `data` and
///   `message_type` (the message's `type`); a conversation's messages in
///   `created_at` order, which becomes their seq order;
/// - `reaction`: `conversation_id`, `message_external_id`, `user_id`, `emoji`,
///   optional `created_at`;
/// - `read_marker`: `conversation_id`, `user_id`, `message_external_id` (the
///   last message they read);
/// - `user`: `user_id`, optional `display_name`, `avatar` (an https image
///   URL with its size) and `data`: the user's profile, as a whole (as the
///   operator's `PUT /v1/admin/users/{id}/profile` sets it).
public struct ImportLine: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case type
        case id
        case conversationId = "conversation_id"
        case title
        case createdBy = "created_by"
        case createdAt = "created_at"
        case userId = "user_id"
        case role
        case joinedAt = "joined_at"
        case externalId = "external_id"
        case sender
        case body
        case messageExternalId = "message_external_id"
        case emoji
        case description
        case data
        case messageType = "message_type"
        case displayName = "display_name"
        case avatar
    }

    public var type: String?
    public var id: String?
    public var conversationId: String?
    public var title: String?
    public var createdBy: String?
    public var createdAt: String?
    public var userId: String?
    public var role: String?
    public var joinedAt: String?
    public var externalId: String?
    public var sender: String?
    public var body: String?
    public var messageExternalId: String?
    public var emoji: String?
    /// A conversation's description.
    public var description: String?
    /// The app's own data of a conversation or a message.
    public var data: CustomData?
    /// A message's app-defined `type` (this line's own `type` is `message`).
    public var messageType: String?
    /// A user's display name.
    public var displayName: String?
    /// A user's avatar.
    public var avatar: ProfileImage?

    public init(type: String) {
        self.type = type
    }

    public static func conversation(_ id: UUID, createdBy: String, title: String? = nil, createdAt: Date? = nil) -> ImportLine {
        var line = ImportLine(type: "conversation")
        line.id = id.uuidString.lowercased()
        line.createdBy = createdBy
        line.title = title
        line.createdAt = createdAt.map(ScrollbackJSON.formatTimestamp)
        return line
    }

    public static func member(_ user: String, of conversation: UUID, role: MemberRole = .member) -> ImportLine {
        var line = ImportLine(type: "member")
        line.conversationId = conversation.uuidString.lowercased()
        line.userId = user
        line.role = role.rawValue
        return line
    }

    public static func message(
        _ externalId: String, in conversation: UUID, sender: String, body: String, createdAt: Date
    ) -> ImportLine {
        var line = ImportLine(type: "message")
        line.conversationId = conversation.uuidString.lowercased()
        line.externalId = externalId
        line.sender = sender
        line.body = body
        line.createdAt = ScrollbackJSON.formatTimestamp(createdAt)
        return line
    }

    public static func reaction(_ emoji: String, by user: String, to externalId: String, in conversation: UUID) -> ImportLine {
        var line = ImportLine(type: "reaction")
        line.conversationId = conversation.uuidString.lowercased()
        line.messageExternalId = externalId
        line.userId = user
        line.emoji = emoji
        return line
    }

    public static func user(_ user: String, displayName: String?, avatar: ProfileImage? = nil, data: CustomData? = nil)
        -> ImportLine
    {
        var line = ImportLine(type: "user")
        line.userId = user
        line.displayName = displayName
        line.avatar = avatar
        line.data = data
        return line
    }

    public static func readMarker(_ user: String, at externalId: String, in conversation: UUID) -> ImportLine {
        var line = ImportLine(type: "read_marker")
        line.conversationId = conversation.uuidString.lowercased()
        line.userId = user
        line.messageExternalId = externalId
        return line
    }
}

/// What is wrong with one line of an import.
public struct ImportProblem: Codable, Sendable, Equatable {
    /// 1 for the first line.
    public var line: Int
    public var message: String

    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }
}

/// The answer to an import: what it stored (or, with `dry_run`, would
/// store), and its problems. With any problem nothing is stored (422).
public struct ImportReport: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case dryRun = "dry_run"
        case lines
        case conversations
        case members
        case messages
        case reactions
        case readMarkers = "read_markers"
        case users
        case alreadyImported = "already_imported"
        case problems
        case problemCount = "problem_count"
    }

    public var dryRun: Bool
    /// Lines read (blank ones included).
    public var lines: Int
    /// Conversations created.
    public var conversations: Int
    public var members: Int
    public var messages: Int
    public var reactions: Int
    public var readMarkers: Int
    /// Profiles changed (`user` lines; one set again as it was is not counted).
    public var users: Int
    /// Conversations whose messages were imported before from the same
    /// lines: left as they are.
    public var alreadyImported: Int
    /// The first problems, by line (at most ``APILimits/maxImportProblemsListed``).
    public var problems: [ImportProblem]
    /// How many problems in all.
    public var problemCount: Int

    public init(
        dryRun: Bool, lines: Int, conversations: Int = 0, members: Int = 0, messages: Int = 0, reactions: Int = 0,
        readMarkers: Int = 0, users: Int = 0, alreadyImported: Int = 0, problems: [ImportProblem] = [],
        problemCount: Int = 0
    ) {
        self.dryRun = dryRun
        self.lines = lines
        self.conversations = conversations
        self.members = members
        self.messages = messages
        self.reactions = reactions
        self.readMarkers = readMarkers
        self.users = users
        self.alreadyImported = alreadyImported
        self.problems = problems
        self.problemCount = problemCount
    }

    /// `users` may be absent (servers before profiles were imported): 0.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        dryRun = try container.decode(Bool.self, forKey: .dryRun)
        lines = try container.decode(Int.self, forKey: .lines)
        conversations = try container.decode(Int.self, forKey: .conversations)
        members = try container.decode(Int.self, forKey: .members)
        messages = try container.decode(Int.self, forKey: .messages)
        reactions = try container.decode(Int.self, forKey: .reactions)
        readMarkers = try container.decode(Int.self, forKey: .readMarkers)
        users = try container.decodeIfPresent(Int.self, forKey: .users) ?? 0
        alreadyImported = try container.decode(Int.self, forKey: .alreadyImported)
        problems = try container.decode([ImportProblem].self, forKey: .problems)
        problemCount = try container.decode(Int.self, forKey: .problemCount)
    }
}
