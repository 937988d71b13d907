import Foundation
import PostgresNIO
import ScrollbackModels

/// The columns of a message, selected under one alias and decoded by name or
/// by position, so every statement that returns messages spells and reads
/// them the same way.
///
/// A message is its stored columns (`names`) and two computed ones
/// (`computed`): the preview of the message it replies to, read from that
/// message as it is now, and which of the readers' reactions it has, so
/// `me` of each reaction is about the user who asked. Both are evaluated only
/// for a message that has a parent or reactions.
enum MessageRow {
    static let names = [
        "seq", "sender", "body", "client_id", "created_at", "version", "edited_at", "deleted", "reply_to",
        "thread_root", "reply_count", "last_reply_at", "thread_participants", "reaction_emojis", "reaction_counts",
        "attachments", "data", "type",
    ]

    /// `m.seq AS m_seq, m.sender AS m_sender, ..., <parent> AS m_parent, <mine> AS m_mine`
    static func columns(_ alias: String, conversation: String, readers: String) -> String {
        let computed = computedExpressions(alias, conversation: conversation, readers: readers)
        return (names.map { "\(alias).\($0) AS \(alias)_\($0)" }
            + ["\(computed.parent) AS \(alias)_parent", "\(computed.mine) AS \(alias)_mine"])
            .joined(separator: ", ")
    }

    /// The stored columns in the order `positional(_:)` selects them (what a
    /// derived table carries on to an outer `SELECT`).
    static func positional(_ alias: String) -> String {
        names.map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    /// The stored columns, then the computed ones: what `RowReader.message` reads.
    static func positional(_ alias: String, conversation: String, readers: String) -> String {
        let computed = computedExpressions(alias, conversation: conversation, readers: readers)
        return positional(alias) + ", \(computed.parent), \(computed.mine)"
    }

    /// `conversation` is an SQL expression of the conversation's id, and
    /// `readers` one of a `text[]` of the users whose reactions count as
    /// `me` (pairs of user and emoji are selected, joined with
    /// ``UserID/separator``, so one read can serve several).
    private static func computedExpressions(
        _ alias: String, conversation: String, readers: String
    ) -> (parent: String, mine: String) {
        (
            """
            CASE WHEN \(alias).reply_to IS NULL THEN NULL ELSE (
                SELECT ARRAY[p.sender, left(p.body, \(APILimits.replyExcerptLength)), p.deleted::text]
                FROM messages p WHERE p.conversation_id = \(conversation) AND p.seq = \(alias).reply_to) END
            """,
            """
            CASE WHEN \(alias).reaction_emojis IS NULL THEN NULL ELSE ARRAY(
                SELECT r.user_id || \(UserID.separatorSQL) || r.emoji FROM reactions r
                WHERE r.conversation_id = \(conversation) AND r.seq = \(alias).seq AND r.user_id = ANY(\(readers))) END
            """
        )
    }

    /// A user id as an SQL `text[]` literal of one element, for statements
    /// built as text. Quotes are doubled, so any id is safe.
    static func readers(_ user: UserID) -> String {
        "ARRAY['\(user.rawValue.replacingOccurrences(of: "'", with: "''"))']::text[]"
    }

    /// The message in `row` under `alias`, or nil when a LEFT JOIN found none.
    static func decode(
        _ row: PostgresRandomAccessRow, alias: String, conversation: UUID, personal: Bool = true
    ) throws -> Message? {
        func column<T: PostgresDecodable>(_ name: String, _ type: T.Type) throws -> T? {
            let cell = row["\(alias)_\(name)"]
            guard var bytes = cell.bytes else { return nil }
            return try T(from: &bytes, type: cell.dataType, format: cell.format, context: .default)
        }
        return try message(
            Columns(
                seq: column("seq", Int64.self), sender: column("sender", String.self),
                body: column("body", String.self), clientID: column("client_id", String.self),
                createdAt: column("created_at", Date.self), version: column("version", Int64.self),
                editedAt: column("edited_at", Date.self), deleted: column("deleted", Bool.self),
                replyTo: column("reply_to", Int64.self), threadRoot: column("thread_root", Int64.self),
                replyCount: column("reply_count", Int32.self), lastReplyAt: column("last_reply_at", Date.self),
                threadParticipants: column("thread_participants", [String].self),
                reactionEmojis: column("reaction_emojis", [String].self),
                reactionCounts: column("reaction_counts", [Int32].self),
                attachments: column("attachments", String.self), data: column("data", String.self),
                type: column("type", String.self), parent: column("parent", [String].self), mine: column("mine", [String].self)),
            conversation: conversation, personal: personal)
    }

    /// The columns of one message, all nullable for a LEFT JOIN that found none.
    struct Columns {
        var seq: Int64?
        var sender: String?
        var body: String?
        var clientID: String?
        var createdAt: Date?
        var version: Int64?
        var editedAt: Date?
        var deleted: Bool?
        var replyTo: Int64?
        var threadRoot: Int64?
        var replyCount: Int32?
        var lastReplyAt: Date?
        var threadParticipants: [String]?
        var reactionEmojis: [String]?
        var reactionCounts: [Int32]?
        /// The JSON of the attachments (`StoredAttachment`s).
        var attachments: String?
        /// The JSON of the message's custom data, and its type.
        var data: String?
        var type: String?
        /// `[sender, excerpt, deleted]` of the parent.
        var parent: [String]?
        /// User and emoji pairs of the readers' reactions (`split(_:)`).
        var mine: [String]?
    }

    /// The message in `columns`, or nil when a LEFT JOIN found none. When
    /// `personal`, the statement had one reader and `me` of each reaction is
    /// about them; otherwise every `me` is false and `reactions(_:of:)`
    /// tells the readers' reactions apart.
    static func message(_ columns: Columns, conversation: UUID, personal: Bool) throws -> Message? {
        guard let seq = columns.seq else { return nil }
        guard let sender = columns.sender, let body = columns.body, let createdAt = columns.createdAt,
            let version = columns.version, let deleted = columns.deleted
        else { throw MalformedRow() }
        var message = Message(
            conversationId: conversation, seq: seq, sender: sender, body: body, clientId: columns.clientID,
            createdAt: createdAt, version: version, editedAt: columns.editedAt, deleted: deleted,
            threadRoot: columns.threadRoot)
        if let replyTo = columns.replyTo {
            guard let parent = columns.parent, parent.count == 3 else { throw MalformedRow() }
            let parentDeleted = parent[2] == "true"
            message.replyTo = ReplyPreview(
                seq: replyTo, sender: parent[0], excerpt: parentDeleted ? nil : parent[1], deleted: parentDeleted)
        }
        if let count = columns.replyCount, count > 0, let last = columns.lastReplyAt {
            message.thread = ThreadSummary(
                replyCount: Int64(count), lastReplyAt: last, participants: columns.threadParticipants ?? [])
        }
        message.data = try ScrollbackStore.storedData(columns.data)
        message.type = columns.type
        if let attachments = columns.attachments {
            message.attachments = try StoredAttachment.attachments(attachments, in: conversation)
        }
        if let emojis = columns.reactionEmojis, let counts = columns.reactionCounts {
            guard emojis.count == counts.count else { throw MalformedRow() }
            let mine = personal ? Set((columns.mine ?? []).map(Self.emoji(ofPair:))) : []
            message.reactions = zip(emojis, counts).map { emoji, count in
                ReactionSummary(emoji: emoji, count: Int64(count), me: mine.contains(emoji))
            }
        }
        return message
    }

    /// A pair of a user and an emoji split in two at its first
    /// ``UserID/separator``, which no user id holds.
    static func split(_ pair: String) -> (user: UserID, emoji: String) {
        guard let separator = pair.firstIndex(of: UserID.separator) else { return (.system, pair) }
        return (UserID(rawValue: String(pair[..<separator])), String(pair[pair.index(after: separator)...]))
    }

    /// The emoji of a pair of a user and an emoji.
    static func emoji(ofPair pair: String) -> String { split(pair).emoji }

    /// The emojis of `user` among pairs of a user and an emoji.
    static func reactions(_ pairs: [String], of user: UserID) -> Set<String> {
        Set(pairs.lazy.map(split).filter { $0.user == user }.map(\.emoji))
    }
}

/// A row without a column its statement always returns: a bug between a
/// statement and its decoding, not a database outage (a logged 500, not a 503).
struct MalformedRow: Error {}

/// An attachment as `messages.attachments` holds it (`sql/011_attachments.sql`):
/// what the server recorded of the upload, without its URL, which is made
/// from the ids when it is read.
struct StoredAttachment: Codable, Sendable {
    enum CodingKeys: String, CodingKey {
        case id, kind, size, filename, width, height, blurhash
        case contentType = "content_type"
    }

    var id: UUID
    var kind: AttachmentKind
    var contentType: String
    var size: Int64
    var filename: String
    var width: Int?
    var height: Int?
    var blurhash: String?

    private static let decoder = JSONDecoder()

    /// The attachments of a message of `conversation` from their column's JSON.
    static func attachments(_ json: String, in conversation: UUID) throws -> [Attachment] {
        do {
            return try decoder.decode([StoredAttachment].self, from: Data(json.utf8)).map { stored in
                Attachment(
                    id: stored.id, kind: stored.kind, contentType: stored.contentType, size: stored.size,
                    filename: stored.filename, width: stored.width, height: stored.height, blurhash: stored.blurhash,
                    url: Attachment.path(stored.id, in: conversation))
            }
        } catch {
            throw MalformedRow()
        }
    }
}
