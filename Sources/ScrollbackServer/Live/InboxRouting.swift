import Foundation
import ScrollbackModels
import ScrollbackStore

/// Who gets which inbox frame: every inbox subscription of one instance and
/// what each was told, as a value, like `LiveRouting` for conversations.
/// Each mutating method takes one input and returns what to do; `LiveHub`
/// performs it.
///
/// An inbox is read per user, never per socket: a read
/// (`ScrollbackStore.inbox`) returns what changed in the user's
/// conversations since a cursor, and the cursor to start the next one from,
/// in one snapshot. So a read never misses a change, however the
/// notifications that asked for it were lost or reordered: the routing
/// only decides when to read (a notification about one of the user's
/// conversations, their read marker or their membership), and one read
/// serves every socket of the user.
///
/// Reads may repeat what a socket was told (a read starts at a cursor, not
/// after the last change seen). Each socket keeps where it stands in every
/// conversation it was told of (`Line`) and is sent only what is newer:
/// a later membership (an addition or removal after the one it knows), a
/// higher version (`conversation_activity`) or a higher read marker
/// (`read`). Every frame carries the cursor the client may resume from: the
/// point before which it has been told everything (`Live.floor`).
struct InboxRouting {
    typealias SocketID = LiveRouting.SocketID

    struct Effects {
        var sends: [LiveRouting.Send] = []
        /// Users marked for a read: the worker has something to do.
        var reads: Set<UserID> = []
    }

    /// Where one read starts.
    struct ReadRequest: Sendable {
        var user: UserID
        var after: InboxCursor
        /// The read lists every conversation of the user: additions may
        /// have been notified while nobody listened.
        var memberships = false
    }

    private var users: [UserID: UserInbox] = [:]
    private var userOfSocket: [SocketID: UserID] = [:]
    /// The inbox users of each conversation they are known to be members
    /// of: the users a message there concerns. It may list a user who has
    /// left (a read finds nothing for them), never miss one who is a member.
    private var usersByConversation: [UUID: Set<UserID>] = [:]
    private var dirty: Set<UserID> = []
    /// Users whose next read lists their memberships (see `ReadRequest`).
    private var relearn: Set<UserID> = []
    /// Users with no live socket yet (no `position`): which conversations
    /// are theirs is learned from their first socket's snapshot, so any
    /// change until then may concern them.
    private var unstarted: Set<UserID> = []

    private struct UserInbox {
        /// Where the next read starts; nil until the first socket is live.
        var position: InboxCursor?
        var changedBeforeStart = false
        var conversations: Set<UUID> = []
        var sockets: [SocketID: Phase] = [:]
    }

    private enum Phase {
        /// Reads applied while the socket's own snapshot is taken, with
        /// where each started.
        case pending([(InboxRead, start: InboxCursor)])
        case live(Live)
    }

    /// A conversation as one socket was told of it.
    enum Line: Equatable {
        case member(membership: Int64, version: Int64, readSeq: Int64, details: Int64)
        case removed(membership: Int64)

        var membership: Int64 {
            switch self {
            case .member(let membership, _, _, _), .removed(let membership): membership
            }
        }
    }

    private struct Live {
        /// The socket has been told everything that changed before it.
        var floor: InboxCursor
        var lines: [UUID: Line] = [:]

        /// The frames of `read` that are news to the socket, each with the
        /// cursor it stood at before the read; a read from no later than
        /// the floor moves the floor to the read's end.
        mutating func take(_ read: InboxRead, start: InboxCursor, user: UserID, _ send: (ServerFrame) -> Void) {
            let cursor = floor.description
            if read.truncated {
                // The client fetches its list again, newer than the read.
                lines.removeAll()
                send(.inboxResyncRequired(cursor: read.cursor.description))
                floor = max(floor, read.cursor)
                return
            }
            for entry in read.entries {
                let conversation = entry.conversation
                let line = Line.member(
                    membership: entry.membership, version: conversation.version, readSeq: conversation.readSeq,
                    details: entry.detailsVersion)
                let known = lines[conversation.id]
                let details = ServerFrame.conversationUpdated(
                    ConversationDetails(conversation, detailsVersion: entry.detailsVersion), cursor: cursor)
                switch known {
                case .member(let membership, let version, let readSeq, let told) where membership == entry.membership:
                    // Its details first: an activity frame does not carry them.
                    if entry.detailsVersion > told { send(details) }
                    if conversation.version > version {
                        send(.conversationActivity(InboxActivity(conversation), cursor: cursor))
                    } else if conversation.readSeq > readSeq {
                        send(
                            .inboxRead(
                                conversationId: conversation.id, userId: user.rawValue, seq: conversation.readSeq,
                                unreadCount: conversation.unreadCount, unreadMentions: conversation.unreadMentions,
                                cursor: cursor))
                    } else if entry.detailsVersion <= told {
                        continue
                    }
                case .some(let known) where known.membership > entry.membership:
                    continue  // an older read than what the socket was told
                case .some:
                    // Removed (or in an earlier membership) as far as it knows.
                    send(.memberAdded(conversation, cursor: cursor))
                case nil:
                    // Changed since the cursor: the client's list may be older.
                    if entry.detailsChanged, !entry.joined { send(details) }
                    send(
                        entry.joined
                            ? .memberAdded(conversation, cursor: cursor)
                            : .conversationActivity(InboxActivity(conversation), cursor: cursor))
                }
                lines[conversation.id] = line
            }
            for removal in read.removals {
                if let known = lines[removal.conversation], known.membership >= removal.membership { continue }
                send(.inboxMemberRemoved(conversationId: removal.conversation, cursor: cursor))
                lines[removal.conversation] = .removed(membership: removal.membership)
            }
            if start <= floor { floor = max(floor, read.cursor) }
        }
    }

    // MARK: Subscriptions

    /// An inbox subscription in its pending phase: reads are buffered for it
    /// until `activate`. The socket's earlier inbox subscription, if any, is
    /// replaced.
    mutating func register(socket: SocketID, user: UserID) {
        remove(socket: socket)
        users[user, default: UserInbox()].sockets[socket] = .pending([])
        userOfSocket[socket] = user
        if users[user]?.position == nil { unstarted.insert(user) }
    }

    /// Makes a pending subscription live with its own snapshot: read from
    /// `after` (what the client has), or, without one, from now on.
    mutating func activate(socket: SocketID, after: InboxCursor?, snapshot: InboxRead) -> Effects {
        var effects = Effects()
        guard let user = userOfSocket[socket], case .pending(let buffered) = users[user]?.sockets[socket] else {
            return effects
        }
        func send(_ frame: ServerFrame) {
            effects.sends.append(LiveRouting.Send(socket: socket, frame: ServerFrameBytes(frame)))
        }
        send(.inboxSubscribed(cursor: (after ?? snapshot.cursor).description))
        // A resync is answered by a list fetched later than the snapshot
        // (and an `after` from another database is no floor at all).
        let start = snapshot.truncated ? snapshot.cursor : after ?? snapshot.cursor
        var live = Live(floor: start)
        if after != nil { live.take(snapshot, start: start, user: user, send) }
        for (read, start) in buffered { live.take(read, start: start, user: user, send) }
        users[user]?.sockets[socket] = .live(live)
        learn(snapshot.memberships ?? [], of: user)
        if let position = users[user]?.position {
            if live.floor < position {
                // The reads start over from what this socket has; the
                // others are sent only what is news to them.
                users[user]?.position = live.floor
                markDirty(user, &effects)
            }
        } else {
            users[user]?.position = live.floor
            unstarted.remove(user)
            if users[user]?.changedBeforeStart == true { markDirty(user, &effects) }
        }
        return effects
    }

    /// Ends the socket's inbox subscription (an `unsubscribe_inbox`, or the
    /// socket left).
    mutating func remove(socket: SocketID) {
        guard let user = userOfSocket.removeValue(forKey: socket) else { return }
        users[user]?.sockets[socket] = nil
        guard users[user]?.sockets.isEmpty == true, let inbox = users.removeValue(forKey: user) else { return }
        unstarted.remove(user)
        dirty.remove(user)
        relearn.remove(user)
        for id in inbox.conversations { forget(user, in: id) }
    }

    var subscriptionCount: Int { userOfSocket.count }

    // MARK: The change feed

    mutating func handle(_ signal: FeedSignal) -> Effects {
        var effects = Effects()
        switch signal {
        case .lost:
            break
        case .listening:
            // Whatever was notified while nobody listened: read it all,
            // additions included.
            for user in Array(users.keys) {
                relearn.insert(user)
                markDirty(user, &effects)
            }
        case .event(let event):
            switch event {
            case .changed(let id, _, _), .conversationUpdated(let id):
                for user in usersByConversation[id] ?? [] { markDirty(user, &effects) }
                // Whose conversations are not known until their snapshot
                // is applied: the change may be theirs, and later than it.
                for user in unstarted { users[user]?.changedBeforeStart = true }
            case .read(_, let user, _):
                markDirty(user, &effects)
            case .memberAdded(let id, let user):
                guard users[user] != nil else { break }
                learn([id], of: user)
                markDirty(user, &effects)
            case .memberRemoved(let id, let user):
                guard users[user] != nil else { break }
                markDirty(user, &effects)
                users[user]?.conversations.remove(id)
                forget(user, in: id)
            case .typing, .presence, .memberUpdated, .blocks, .erased, .revoked, .profile:
                break
            }
        }
        return effects
    }

    // MARK: Reads, for the catch-up worker

    /// The users marked for a read, each with where its read starts; they
    /// are unmarked until something marks them again.
    mutating func takeReads() -> [ReadRequest] {
        let marked = dirty
        dirty.removeAll()
        return marked.compactMap { user in
            users[user]?.position.map { ReadRequest(user: user, after: $0, memberships: relearn.remove(user) != nil) }
        }
    }

    /// Hands a read to every socket of its user: buffered while pending,
    /// what is news once live.
    mutating func apply(_ read: InboxRead, for request: ReadRequest) -> Effects {
        var effects = Effects()
        let user = request.user
        guard var inbox = users[user], inbox.position == request.after else {
            // The user's sockets left, or the reads started over: the read
            // that replaces this one lists the memberships it was to list.
            if request.memberships, users[user] != nil { relearn.insert(user) }
            return effects
        }
        for (socket, phase) in inbox.sockets {
            switch phase {
            case .pending(var buffered):
                buffered.append((read, request.after))
                inbox.sockets[socket] = .pending(buffered)
            case .live(var live):
                live.take(read, start: request.after, user: user) { frame in
                    effects.sends.append(LiveRouting.Send(socket: socket, frame: ServerFrameBytes(frame)))
                }
                inbox.sockets[socket] = .live(live)
            }
        }
        inbox.position = max(request.after, read.cursor)
        users[user] = inbox
        learn(read.memberships ?? Set(read.entries.map(\.conversation.id)), of: user)
        return effects
    }

    /// A read that failed is tried again by the next pass.
    mutating func retry(_ request: ReadRequest) -> Effects {
        var effects = Effects()
        if users[request.user] != nil {
            if request.memberships { relearn.insert(request.user) }
            markDirty(request.user, &effects)
        }
        return effects
    }

    // MARK: Helpers

    private mutating func markDirty(_ user: UserID, _ effects: inout Effects) {
        guard users[user] != nil else { return }
        if users[user]?.position == nil {
            users[user]?.changedBeforeStart = true
            return
        }
        dirty.insert(user)
        effects.reads.insert(user)
    }

    private mutating func learn(_ conversations: Set<UUID>, of user: UserID) {
        guard users[user] != nil else { return }
        for id in conversations where users[user]?.conversations.insert(id).inserted == true {
            usersByConversation[id, default: []].insert(user)
        }
    }

    private mutating func forget(_ user: UserID, in id: UUID) {
        usersByConversation[id]?.remove(user)
        if usersByConversation[id]?.isEmpty == true { usersByConversation[id] = nil }
    }
}
