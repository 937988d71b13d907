import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// Where a `ConversationFeed` keeps what it holds between launches: the
/// window of messages it last showed, how current that window is, the read
/// markers it saw, and its outbox. The kit calls it; the `ScrollbackOffline`
/// product implements it on SQLite (`OfflineStore`), and an app may give its
/// own. A feed without one keeps all of it in memory.
///
/// The feed calls it under its lock, in the order its changes happen, so an
/// implementation needs no ordering of its own; each call is one
/// transaction. A call that throws leaves the feed working from memory
/// (`ConversationFeed.State.storageFailure` says why).
public protocol FeedStorage: Sendable {
    /// The window held of `conversation`, marked as opened now (the store
    /// evicts the conversations opened least recently first); nil when none
    /// is held.
    func openWindow(of conversation: UUID) throws -> StoredWindow?
    /// One change of a feed's window, written as one transaction.
    func save(_ changes: WindowChanges) throws
    /// The conversation's outbox, in the order its entries were made.
    func outbox(of conversation: UUID) throws -> [OutboxEntry]
    /// The conversations whose outboxes hold entries, the one with the
    /// oldest entry first (`ScrollbackClient.sendWaiting(from:)` sends them).
    func conversationsWithOutbox() throws -> [UUID]
    /// Adds an entry at the end of its conversation's outbox, or, when its
    /// client id is there already, changes it in place.
    func put(_ entry: OutboxEntry) throws
    /// Removes entries, in one transaction: sent, or discarded by the user.
    func removeOutboxEntries(clientIds: [String], in conversation: UUID) throws
    /// Drops what is held of a conversation the user can no longer see (its
    /// window and read markers; its outbox too: nothing in it can be sent).
    func forget(_ conversation: UUID) throws
}

extension FeedStorage {
    /// Removes one entry: sent, or discarded by the user.
    public func removeOutboxEntry(clientId: String, in conversation: UUID) throws {
        try removeOutboxEntries(clientIds: [clientId], in: conversation)
    }
}

/// Where an `InboxFeed` keeps the first rows of the conversation list
/// between launches (`OfflineStore` implements it). One store holds one
/// user's list: an app that signs in as another user opens another store.
public protocol InboxStorage: Sendable {
    /// The rows last saved, most recently active first (empty when none).
    func inboxRows() throws -> [Conversation]
    /// Replaces the rows kept with `rows`, in one transaction.
    func saveInbox(_ rows: [Conversation]) throws
    /// The profiles kept with the rows (their last senders, the other
    /// member of each one-to-one), so a list opened offline names them.
    func inboxUsers() throws -> ProfileSet
    /// Replaces the rows kept with `rows` and the profiles kept with them
    /// with `users`, a profile of a higher version replacing a lower one,
    /// in one transaction.
    func saveInbox(_ rows: [Conversation], users: ProfileSet) throws
}

extension InboxStorage {
    /// A storage that keeps no profiles: none.
    public func inboxUsers() throws -> ProfileSet { ProfileSet() }

    /// A storage that keeps no profiles keeps the rows.
    public func saveInbox(_ rows: [Conversation], users: ProfileSet) throws { try saveInbox(rows) }
}

/// What a store held of a conversation's window: a `MessagePage` at its
/// version, less what no page says (the read markers).
public struct StoredWindow: Sendable, Equatable {
    /// Newest first. Every message is current as of `version`.
    public var messages: [Message]
    public var version: Int64
    /// The newest seq the conversation was known to have.
    public var lastSeq: Int64
    /// Older history exists beyond the oldest message held.
    public var hasOlder: Bool
    /// How far each member had read, by user id.
    public var readSeqs: [String: Int64]
    /// The profiles kept with the window (of the users its messages name),
    /// so a conversation opened offline names its senders.
    public var users: ProfileSet

    public init(
        messages: [Message], version: Int64, lastSeq: Int64, hasOlder: Bool, readSeqs: [String: Int64] = [:],
        users: ProfileSet = ProfileSet()
    ) {
        self.messages = messages
        self.version = version
        self.lastSeq = lastSeq
        self.hasOlder = hasOlder
        self.readSeqs = readSeqs
        self.users = users
    }

    /// The window as a page read at its version: a timeline loads it as it
    /// would the server's, and catches up from its version once live.
    public var page: MessagePage {
        MessagePage(
            messages: messages, hasOlder: hasOlder, hasNewer: false, lastSeq: lastSeq, version: version, users: users)
    }
}

/// One change of a feed's window: what the store must hold after it.
public struct WindowChanges: Sendable, Equatable {
    public var conversationId: UUID
    /// Messages new, or newer than the store's copy.
    public var messages: [Message]
    /// The seqs the window holds after the change, as contiguous ranges,
    /// oldest first: rows outside them are dropped.
    public var segments: [ClosedRange<Int64>]
    /// Every message held is current as of this version.
    public var version: Int64
    public var lastSeq: Int64
    public var hasOlder: Bool
    /// How far members have read, when it changed.
    public var readSeqs: [String: Int64]?
    /// Outbox entries the server has stored (their messages are among the
    /// window's now): removed in the same transaction.
    public var acknowledged: [String]
    /// Profiles of the users `messages` name, to keep with the window: each
    /// replaces the one held of its user when that is of a lower version.
    public var users: [UserProfile]

    public init(
        conversationId: UUID, messages: [Message], segments: [ClosedRange<Int64>], version: Int64, lastSeq: Int64,
        hasOlder: Bool, readSeqs: [String: Int64]? = nil, acknowledged: [String] = [], users: [UserProfile] = []
    ) {
        self.users = users
        self.conversationId = conversationId
        self.messages = messages
        self.segments = segments
        self.version = version
        self.lastSeq = lastSeq
        self.hasOlder = hasOlder
        self.readSeqs = readSeqs
        self.acknowledged = acknowledged
    }

    /// The contiguous ranges of a set of seqs, oldest first.
    public static func segments(of seqs: some Sequence<Int64>) -> [ClosedRange<Int64>] {
        var segments: [ClosedRange<Int64>] = []
        for seq in seqs.sorted() {
            if let last = segments.last, seq <= last.upperBound + 1 {
                segments[segments.count - 1] = last.lowerBound...max(last.upperBound, seq)
            } else {
                segments.append(seq...seq)
            }
        }
        return segments
    }
}

/// A change of a message already stored, waiting in a feed's outbox
/// behind the sends written before it. Each is harmless to repeat: an edit
/// to the same body, a deletion of a message deleted already, a reaction
/// added or removed twice.
public enum MessageChange: Codable, Sendable, Equatable {
    case edit(seq: Int64, body: String)
    case delete(seq: Int64)
    case react(seq: Int64, emoji: String)
    case unreact(seq: Int64, emoji: String)

    /// The message it changes.
    public var seq: Int64 {
        switch self {
        case .edit(let seq, _), .delete(let seq), .react(let seq, _), .unreact(let seq, _): seq
        }
    }
}

/// A send (or a change of a message) waiting in a feed's outbox: written
/// before it is sent, sent with its client id (so a send repeated after a
/// lost answer or a restart is stored once), removed when the server has it.
public struct OutboxEntry: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case clientId = "client_id"
        case sender, body, attachments, failure, change
    }

    public var conversationId: UUID
    public var clientId: String
    public var sender: String
    public var body: String
    public var attachments: [Attachment]
    /// Why the server refused it (it waits for `retry` or `discard`); nil
    /// while it waits to be sent.
    public var failure: String?
    /// A change of a stored message instead of a send (`body` and
    /// `attachments` are then empty).
    public var change: MessageChange?

    public init(
        conversationId: UUID, clientId: String, sender: String, body: String, attachments: [Attachment] = [],
        failure: String? = nil, change: MessageChange? = nil
    ) {
        self.conversationId = conversationId
        self.clientId = clientId
        self.sender = sender
        self.body = body
        self.attachments = attachments
        self.failure = failure
        self.change = change
    }

    init(_ send: PendingSend, in conversation: UUID) {
        self.init(
            conversationId: conversation, clientId: send.clientId, sender: send.sender, body: send.body,
            attachments: send.attachments)
    }

    public var send: PendingSend {
        PendingSend(clientId: clientId, body: body, sender: sender, attachments: attachments)
    }
}
