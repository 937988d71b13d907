import Foundation
import PostgresNIO
import ScrollbackModels

extension UserID {
    /// ``UserID/separator`` in SQL.
    static let separatorSQL = "chr(\(separator.unicodeScalars.first!.value))"
}

/// What a notification on the change feed says happened: ids only, never a
/// body (a payload is capped at 8,000 bytes, and a body is read from the
/// tables where it is stored). Every writing statement sends its
/// notification itself (`pg_notify` in the same statement or transaction),
/// so PostgreSQL delivers it at commit, in commit order, to every instance.
///
/// The payload's format lives here alone: `notify` and `notifyStored`
/// write the SQL that builds every payload, and `events(in:)` reads them.
public enum FeedEvent: Sendable, Equatable {
    /// A message was sent (`seq` is new) or edited or deleted; the
    /// conversation's version is now at least `version`.
    case changed(conversation: UUID, seq: Int64, version: Int64)
    /// A member's read marker moved to `seq`.
    case read(conversation: UUID, user: UserID, seq: Int64)
    /// A member left or was removed.
    case memberRemoved(conversation: UUID, user: UserID)
    /// A user became a member (a new conversation, or an addition).
    case memberAdded(conversation: UUID, user: UserID)
    /// A member's role changed.
    case memberUpdated(conversation: UUID, user: UserID, role: MemberRole)
    /// A member is typing: sent, never stored.
    case typing(conversation: UUID, user: UserID)
    /// Whether these users are online anywhere may have changed (a first
    /// socket on an instance, a last one closed, an instance that expired,
    /// presence hidden or shown): their presence is read again
    /// (`ScrollbackStore+Presence.swift`). Payload `w:` then the users
    /// joined with ``UserID/separator`` (a user id may hold `:`); `o:`, the
    /// users joined with `:`, is what instances of earlier versions send
    /// during a rolling upgrade (their ids had no `:`).
    case presence(users: [UserID])
    /// `user` blocked someone or lifted a block: their pages and frames
    /// flag other senders now.
    case blocks(user: UserID)
    /// `user` was erased: every instance closes their sockets and forgets
    /// it knew them.
    case erased(user: UserID)
    /// `user`'s tokens issued before `before` were revoked (`POST
    /// /v1/admin/users/{id}/revoke`, or an erasure): every instance refuses
    /// them from now on and closes that user's sockets. Payload
    /// `v:<unix microseconds>:<user id>`, the id last.
    case revoked(user: UserID, before: Date)
    /// `user`'s profile changed (`sql/030_profiles.sql`): every instance
    /// drops what it holds of it and tells the sockets that share a
    /// conversation with them (`user_updated`). Payload `n:` then the id.
    case profile(user: UserID)
    /// A conversation's details (title, description, image, data, slow
    /// mode) changed: every instance reads them and tells the
    /// conversation's subscribers, and its members' inboxes read what
    /// changed (`conversation_updated`). Payload `c:` then the id, sent by
    /// the trigger of `sql/034_conversation_details.sql`.
    case conversationUpdated(conversation: UUID)

    /// The feed's channel in the `public` schema, where the server keeps its
    /// tables. Each schema has its own (`feed_channel()`, sql/027): PostgreSQL's
    /// channels are per database, and one schema's listeners have nothing to
    /// do with another's notifications.
    public static let channel = "scrollback_feed"

    /// The SQL of the schema's channel, for the statements that notify.
    static let channelSQL = "feed_channel()"

    /// The SQL of a notification, for the statements that write: `kind` is
    /// one letter, `fields` SQL expressions joined with `:` (uuids, numbers
    /// and roles, then at most one user id, last: it may hold `:`, and the
    /// reader takes everything after the fields before it).
    static func notify(_ kind: Character, _ fields: String...) -> String {
        "pg_notify(\(channelSQL), '\(kind):' || " + fields.joined(separator: " || ':' || ") + ")"
    }

    /// The SQL of the one notification of the sends that one statement
    /// stored, as a scalar subquery: `g:` then `id:last_seq:version` of each
    /// conversation they moved, in id order, joined with `:`. `rows` is a
    /// relation of the sends with `created`, `conversation_id`, `seq` and
    /// `conversation_version` (`store_sends`' result); nothing is sent when
    /// none was created.
    static func notifyStored(from rows: String) -> String {
        """
        SELECT pg_notify(\(channelSQL), 'g:' || string_agg(
                   moved.id::text || ':' || moved.last_seq || ':' || moved.version, ':' ORDER BY moved.id))
               FROM (
                   SELECT conversation_id AS id, max(seq) AS last_seq, max(conversation_version) AS version
                   FROM \(rows) WHERE created GROUP BY conversation_id
               ) moved
               HAVING count(*) > 0
        """
    }

    /// The notification that `user`'s profile changed (`.profile`).
    static func notifyProfile(_ user: UserID) -> PostgresQuery {
        "SELECT pg_notify(\(unescaped: channelSQL), 'n:' || \(user.rawValue)::text)"
    }

    /// The kind of a presence notification: `w:` then user ids joined with
    /// ``UserID/separator``.
    static let presenceKind: Character = "w"

    /// The longest payload PostgreSQL sends: shorter than 8,000 bytes.
    static let maxPayloadBytes = 7_999

    /// The SQL of the `w:` notifications for the users of `relation` (a
    /// relation with a `user_id` column), leaving out those who hide their
    /// presence (they look offline whatever happens), as many payloads as
    /// their bytes take. Each user weighs their id's bytes and a separator's;
    /// a payload takes the users whose running total of weights, in id
    /// order, falls in one stretch of `stretch` bytes, so it weighs at most
    /// `stretch` plus its first user's weight less one: with the kind and
    /// the separator a last user does not have, under `maxPayloadBytes`
    /// whatever the ids.
    static func notifyPresence(of relation: String) -> String {
        let stretch = maxPayloadBytes - 2 - APILimits.maxUserIDBytes
        return """
            SELECT \(notify(presenceKind, "string_agg(user_id, \(UserID.separatorSQL) ORDER BY user_id COLLATE \"C\")"))
            FROM (
                SELECT d.user_id, sum(octet_length(d.user_id) + 1) OVER (ORDER BY d.user_id COLLATE "C") AS running
                FROM (
                    SELECT DISTINCT c.user_id FROM \(relation) c
                    WHERE NOT EXISTS (SELECT 1 FROM users h WHERE h.id = c.user_id AND h.presence_hidden)
                ) d
            ) changed
            GROUP BY (running - 1) / \(stretch)
            """
    }

    /// The event of a payload; nil for one this version does not know.
    public init?(payload: String) {
        guard let colon = payload.firstIndex(of: ":") else { return nil }
        let kind = payload[..<colon]
        let body = payload[payload.index(after: colon)...]
        /// The fields of a payload of `count` fields after its kind, the
        /// last one a user id: it keeps any `:` it holds.
        func fields(_ count: Int) -> [Substring]? {
            let fields = body.split(separator: ":", maxSplits: count - 1, omittingEmptySubsequences: false)
            guard fields.count == count, let user = fields.last, !user.isEmpty else { return nil }
            return fields
        }
        func user(_ text: Substring) -> UserID { UserID(rawValue: String(text)) }
        switch kind {
        case "k":
            guard !body.isEmpty else { return nil }
            self = .blocks(user: user(body))
        case "e":
            guard !body.isEmpty else { return nil }
            self = .erased(user: user(body))
        case "n":
            guard !body.isEmpty else { return nil }
            self = .profile(user: user(body))
        case "c":
            guard let conversation = UUID(uuidString: String(body)) else { return nil }
            self = .conversationUpdated(conversation: conversation)
        case "v":
            guard let fields = fields(2), let micros = Int64(fields[0]) else { return nil }
            self = .revoked(user: user(fields[1]), before: Date(timeIntervalSince1970: Double(micros) / 1_000_000))
        case "w":
            guard !body.isEmpty else { return nil }
            self = .presence(users: body.split(separator: UserID.separator, omittingEmptySubsequences: false).map(user))
        case "o":
            // From an instance of an earlier version: ids without `:`.
            guard !body.isEmpty else { return nil }
            self = .presence(users: body.split(separator: ":", omittingEmptySubsequences: false).map(user))
        case "m", "u":
            let parts = body.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 3, let conversation = UUID(uuidString: String(parts[0])), let seq = Int64(parts[1]),
                let version = Int64(parts[2])
            else { return nil }
            self = .changed(conversation: conversation, seq: seq, version: version)
        case "r":
            guard let fields = fields(3), let conversation = UUID(uuidString: String(fields[0])),
                let seq = Int64(fields[1])
            else { return nil }
            self = .read(conversation: conversation, user: user(fields[2]), seq: seq)
        case "p":
            guard let fields = fields(3), let conversation = UUID(uuidString: String(fields[0])),
                let role = MemberRole(rawValue: String(fields[1]))
            else { return nil }
            self = .memberUpdated(conversation: conversation, user: user(fields[2]), role: role)
        case "x", "a", "t":
            guard let fields = fields(2), let conversation = UUID(uuidString: String(fields[0])) else { return nil }
            switch kind {
            case "x": self = .memberRemoved(conversation: conversation, user: user(fields[1]))
            case "a": self = .memberAdded(conversation: conversation, user: user(fields[1]))
            default: self = .typing(conversation: conversation, user: user(fields[1]))
            }
        default:
            return nil
        }
    }

    /// The events of a payload: one, or one per conversation of the sends
    /// one statement stored (`g:` then `id:last_seq:version` for each,
    /// `notifyStored`); empty for a payload this version does not know.
    /// (`m:`, one send, is what instances of earlier versions still send
    /// during a rolling upgrade.)
    public static func events(in payload: String) -> [FeedEvent] {
        guard payload.hasPrefix("g:") else { return FeedEvent(payload: payload).map { [$0] } ?? [] }
        let fields = payload.split(separator: ":", omittingEmptySubsequences: false).dropFirst()
        guard !fields.isEmpty, fields.count % 3 == 0 else { return [] }
        var events: [FeedEvent] = []
        events.reserveCapacity(fields.count / 3)
        var index = fields.startIndex
        while index < fields.endIndex {
            guard let conversation = UUID(uuidString: String(fields[index])), let seq = Int64(fields[index + 1]),
                let version = Int64(fields[index + 2])
            else { return [] }
            events.append(.changed(conversation: conversation, seq: seq, version: version))
            index += 3
        }
        return events
    }

    /// The conversation a payload names, whatever its kind: a kind this
    /// version does not know (from a newer instance during a rolling
    /// deploy) may still change what the conversation's pages show.
    static func conversation(in payload: String) -> UUID? {
        guard !["o:", "w:", "k:", "e:", "v:", "n:"].contains(where: payload.hasPrefix) else { return nil }
        let parts = payload.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        return parts.count >= 2 ? UUID(uuidString: String(parts[1])) : nil
    }

    /// The conversation the event is about; nil for presence, which is a
    /// user's in all their conversations.
    public var conversation: UUID? {
        switch self {
        case .changed(let id, _, _), .read(let id, _, _), .memberRemoved(let id, _), .memberAdded(let id, _),
            .memberUpdated(let id, _, _), .typing(let id, _), .conversationUpdated(let id):
            id
        case .presence, .blocks, .erased, .revoked, .profile:
            nil
        }
    }
}

/// A conversation's messages after a known position, read in one snapshot:
/// what a subscriber or an instance's hub has not seen yet.
public struct FeedRead: Sendable, Equatable {
    /// The conversation's last seq and version in the snapshot.
    public var lastSeq: Int64
    public var version: Int64
    /// Which of the users asked about were members in the snapshot.
    public var members: Set<UserID>
    /// Messages after the seq asked for, in seq order (dense).
    public var added: [Message]
    /// Messages at or before that seq changed after the version asked for,
    /// in version order, each once in its latest state.
    public var changed: [Message]
    /// More than the limit was missed: `added` or `changed` stops short.
    public var truncated: Bool
    /// Of messages with reactions, by seq: the reactions of the users asked
    /// about, as pairs of a user and an emoji joined with
    /// ``UserID/separator``. Each message's `me` is false: a frame for one
    /// user sets it with `message(_:for:)`.
    public var reactors: [Int64: [String]] = [:]

    /// `message` as `user` sees it: `me` set on the reactions that are theirs.
    public func message(_ message: Message, for user: UserID) -> Message {
        guard !message.reactions.isEmpty, let pairs = reactors[message.seq] else { return message }
        return Self.message(message, marking: Self.reactions(pairs, of: user))
    }

    /// The emojis of `user` among pairs of a user and an emoji.
    public static func reactions(_ pairs: [String], of user: UserID) -> Set<String> {
        MessageRow.reactions(pairs, of: user)
    }

    /// `message` with `me` set on the reactions of `emojis`.
    public static func message(_ message: Message, marking emojis: Set<String>) -> Message {
        var marked = message
        for index in marked.reactions.indices where emojis.contains(marked.reactions[index].emoji) {
            marked.reactions[index].me = true
        }
        return marked
    }
}

extension ScrollbackStore {
    /// The messages of conversation `id` after seq `afterSeq` (nil: the last
    /// seq, so none), and the changes after version `afterVersion` to
    /// messages up to that seq, with which of `users` are members, all from
    /// one snapshot. Nil when there is no such conversation.
    public func feed(
        of id: UUID, afterSeq: Int64?, afterVersion: Int64, checking users: [UserID], limit: Int
    ) async throws -> FeedRead? {
        let statement = FeedStatement(
            conversation: id, afterSeq: afterSeq, afterVersion: afterVersion, users: users.map(\.rawValue),
            limit: Int64(limit) + 1)
        let rows = try await rows(statement, writes: false, as: .feed)
        guard let head = rows.first else { return nil }
        var read = FeedRead(
            lastSeq: head.lastSeq, version: head.version, members: Set(head.members.map(UserID.init(rawValue:))),
            added: [], changed: [], truncated: false)
        for row in rows {
            guard let message = row.message else { continue }
            if row.added { read.added.append(message) } else { read.changed.append(message) }
            if !row.reactors.isEmpty { read.reactors[message.seq] = row.reactors }
        }
        // UNION ALL promises no order across its branches.
        read.added.sort { $0.seq < $1.seq }
        read.changed.sort { $0.version < $1.version }
        if read.added.count > limit || read.changed.count > limit {
            read.truncated = true
            read.added = Array(read.added.prefix(limit))
            read.changed = Array(read.changed.prefix(limit))
        }
        return read
    }

    /// Tells every instance that `user` is typing in conversation `id`;
    /// false when the user is not a member (nothing is sent then).
    public func notifyTyping(in id: UUID, by user: UserID) async throws -> Bool {
        let rows = try await rows(
            """
            SELECT \(unescaped: FeedEvent.notify("t", "conversation_id::text", "user_id"))
            FROM members WHERE conversation_id = \(id) AND user_id = \(user.rawValue)
            """,
            writes: false, as: .typing)
        return !rows.isEmpty
    }
}

/// The feed read, prepared once per connection: a conversation's head, which
/// of the given users are members, and two keyset scans, the messages after
/// `after_seq` (primary key) and the changed ones up to it (by version).
struct FeedStatement: PostgresPreparedStatement {
    static let name = "scrollback_feed_v2"
    static let sql = """
        SELECT c.last_seq, c.version,
               ARRAY(SELECT user_id FROM members WHERE conversation_id = c.id AND user_id = ANY($4)),
               m.added, \(MessageRow.positional("m", conversation: "c.id", readers: "$4"))
        FROM conversations c
        CROSS JOIN LATERAL (SELECT COALESCE($2, c.last_seq) AS after_seq) a
        LEFT JOIN LATERAL (
            (SELECT true AS added, * FROM messages
             WHERE conversation_id = c.id AND seq > a.after_seq
             ORDER BY seq LIMIT $5)
            UNION ALL
            (SELECT false AS added, * FROM messages
             WHERE conversation_id = c.id AND version > $3 AND seq <= a.after_seq
             ORDER BY version LIMIT $5)
        ) m ON true
        WHERE c.id = $1
        """
    static let bindingDataTypes: [PostgresDataType] = [.uuid, .int8, .int8, .textArray, .int8]

    var conversation: UUID
    var afterSeq: Int64?
    var afterVersion: Int64
    var users: [String]
    var limit: Int64

    struct Row: Sendable {
        var lastSeq: Int64
        var version: Int64
        var members: [String]
        var added: Bool
        var message: Message?
        /// Pairs of a user and an emoji of the users asked about.
        var reactors: [String]
    }

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(conversation)
        bindings.append(afterSeq)
        bindings.append(afterVersion)
        bindings.append(users)
        bindings.append(limit)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        var reader = RowReader(row)
        let lastSeq = try reader.required(Int64.self)
        let version = try reader.required(Int64.self)
        let members = try reader.required([String].self)
        let added = try reader.next(Bool.self) ?? false
        let columns = try reader.rawMessage()
        return Row(
            lastSeq: lastSeq, version: version, members: members, added: added,
            message: try MessageRow.message(columns, conversation: conversation, personal: false),
            reactors: columns.mine ?? [])
    }
}
