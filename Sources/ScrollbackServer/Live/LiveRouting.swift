import Foundation
import ScrollbackModels
import ScrollbackStore

/// Who gets which live frame: every subscription of one instance and what
/// has been delivered to it, as a value. Each mutating method takes one
/// input (a subscription starting or ending, a socket leaving, a signal of
/// the change feed, the result of a read) and returns what to do as
/// `Effects`; `LiveHub` performs them. Nothing here knows a socket object,
/// a clock or the database, so every rule below can be tested by feeding
/// inputs in any order.
///
/// Per conversation with subscribers, the routing keeps a position: the last
/// seq and version its reads have reached (`Feed`). A notification on the
/// change feed only says that something after it exists: the conversation
/// is marked for a read, which the catch-up worker (`LiveDelivery`) takes
/// with `takeReads`, performs in one snapshot (`ScrollbackStore.feed`) and
/// hands back to `apply`. One read per conversation and instance serves
/// every subscriber, and a lost notification costs nothing: the next read,
/// or the one after a reconnect of the listening connection, covers it.
///
/// A subscription starts pending: what is read meanwhile is buffered, the
/// subscriber's own snapshot (with its backlog) is sent, and the buffer
/// follows, filtered against that snapshot: messages after its last seq,
/// changes after its version (a message it has in an older version comes as
/// an update). Every live subscriber has at least what the position says; one
/// that goes live behind it (its snapshot is older than the one that set the
/// position, and nothing buffered bridges the difference) has the reads start
/// over from what it has, and the others skip what they have. So a subscriber
/// sees every message once, in seq order, with no gap, however its snapshot
/// and the reads interleave.
///
/// A `member_removed` notification ends the user's subscriptions. When it is
/// lost, the next read, which checks the subscribed users, ends them: it is
/// trusted over a subscriber's snapshot when it is newer (a higher version,
/// or taken after the subscriber went live); a tie asks for another read.
struct LiveRouting {
    typealias SocketID = Int

    /// A frame for one socket; frames for the same socket go out in the
    /// order of `Effects.sends`.
    struct Send {
        var socket: SocketID
        var frame: ServerFrameBytes
    }

    struct SubscriptionKey: Hashable {
        var socket: SocketID
        var conversation: UUID
    }

    /// What one input asks of the hub.
    struct Effects {
        var sends: [Send] = []
        /// Conversations marked for a read: the worker has something to do.
        var reads: Set<UUID> = []
        /// Subscriptions the routing ended itself, each told `member_removed`
        /// (the ones ended by `unsubscribe` or `disconnect` are not listed:
        /// the caller asked for those).
        var ended: [SubscriptionKey] = []
    }

    /// Where one read starts, and what it must check.
    struct ReadRequest: Sendable {
        var conversation: UUID
        var afterSeq: Int64
        var afterVersion: Int64
        /// The subscribed users, whose membership the read checks.
        var users: [UserID]
        /// Subscriptions activated up to this one went live before the read
        /// was taken: it is newer than their snapshots.
        var epoch: UInt64
    }

    private var feeds: [UUID: Feed] = [:]
    /// The conversations of each socket: an index of `feeds` kept by the same
    /// two functions that add and remove subscriptions, so a disconnect does
    /// not scan every feed.
    private var conversationsBySocket: [SocketID: Set<UUID>] = [:]
    /// Conversations with something to read, until the worker takes them.
    private var dirty: Set<UUID> = []
    /// Counts activations, so a read knows which subscribers are older than it.
    private var epoch: UInt64 = 0
    private var typingPace: TypingPace
    /// The change feed's listening connection is in place: without it,
    /// nothing written elsewhere reaches this instance's sockets.
    private(set) var isListening = false

    init(typingInterval: Duration = .seconds(APILimits.typingIntervalSeconds)) {
        typingPace = TypingPace(interval: typingInterval)
    }

    /// A point in a conversation's history: its last seq and version in one
    /// snapshot. Both only grow, so positions are ordered.
    private struct Position: Equatable {
        var lastSeq: Int64
        var version: Int64

        /// Whether `self` has everything `other` has.
        func covers(_ other: Position) -> Bool {
            lastSeq >= other.lastSeq && version >= other.version
        }
    }

    private struct Feed {
        /// Where the next read starts; every live subscriber has at least
        /// this much. Nil until the first subscriber's snapshot sets it.
        var position: Position?
        /// A notification arrived before there was a position to read from.
        var changedBeforeStart = false
        var subscriptions: [SocketID: Subscription] = [:]
    }

    private struct Subscription {
        let user: UserID
        /// It asked for `presence` frames.
        let presence: Bool
        var phase: Phase
    }

    private enum Phase {
        case pending([Item])
        case live(Live)

        /// Buffers `item` while pending; once live, passes on what the
        /// subscriber does not have yet.
        mutating func take(_ item: Item, _ deliver: (Delivery) -> Void) {
            switch self {
            case .pending(var buffered):
                self = .pending([])  // so the append below does not copy the buffer
                buffered.append(item)
                self = .pending(buffered)
            case .live(var live):
                live.take(item, deliver)
                self = .live(live)
            }
        }
    }

    private struct Live {
        /// Every message up to its last seq and every change up to its
        /// version was sent, or is the client's to fetch (it was in the
        /// snapshot, or a `resync_required` said so).
        var has: Position
        /// A read of a newer snapshot knows better whether the user is a member.
        let snapshotVersion: Int64
        /// Activations up to this one: a read taken later is newer than the snapshot.
        let epoch: UInt64

        /// Passes on what the subscriber does not have yet.
        mutating func take(_ item: Item, _ deliver: (Delivery) -> Void) {
            switch item {
            case .other(let frame):
                deliver(.frame(frame))
            case .read(let batch):
                // From further on than the subscriber has, it would leave a
                // gap: `activate` has the reads start over from what it has.
                guard has.covers(batch.from), !has.covers(batch.to) else { return }
                switch batch.content {
                case .resync(let frame):
                    deliver(.frame(frame))
                case .messages(let added, let changed):
                    var lastSeq = has.lastSeq
                    for outgoing in added {
                        if outgoing.message.seq > lastSeq {
                            deliver(.message(outgoing))
                            lastSeq = outgoing.message.seq
                        } else if outgoing.message.version > has.version {
                            // Its snapshot, newer than where the read started,
                            // had the message: only a later edit is news.
                            deliver(.update(outgoing))
                        }
                    }
                    for outgoing in changed where outgoing.message.version > has.version {
                        deliver(.message(outgoing))
                    }
                }
                has = Position(lastSeq: max(has.lastSeq, batch.to.lastSeq), version: max(has.version, batch.to.version))
            }
        }
    }

    /// What a read or a notification gives a subscriber, encoded once for
    /// all of them.
    private enum Item {
        case read(Batch)
        case other(ServerFrameBytes)
    }

    /// What one read found, from where it started to its snapshot.
    private struct Batch {
        var from: Position
        var to: Position
        /// The subscribed users the read found no longer members.
        var nonMembers: Set<UserID>
        var content: Content

        enum Content {
            /// New messages in seq order, each with its `message` frame, then
            /// the changes, each with its `message_updated` frame.
            case messages(added: [Outgoing], changed: [Outgoing])
            /// The read stopped short: the subscriber pages and fetches changes over HTTP.
            case resync(ServerFrameBytes)
        }
    }

    /// A message a read found, with its frame as every subscriber without
    /// a reaction to it gets it (`me` false throughout).
    private struct Outgoing {
        var message: Message
        var frame: ServerFrameBytes
        var updated: Bool
        /// The subscribers' reactions to it, as pairs of a user and an
        /// emoji (`FeedRead.reactors`).
        var reactors: [String]?

        init(_ message: Message, updated: Bool, in read: FeedRead) {
            self.message = message
            self.updated = updated
            frame = ServerFrameBytes(updated ? .messageUpdated(message) : .message(message))
            reactors = message.reactions.isEmpty ? nil : read.reactors[message.seq]
        }
    }

    private enum Delivery {
        case frame(ServerFrameBytes)
        case message(Outgoing)
        /// `message_updated` of a message a read found as new: rare (see
        /// `Phase.take`), so encoded only when a subscriber needs it.
        case update(Outgoing)
    }

    /// Encodes the rare frames once per input, however many subscribers need
    /// them: `Delivery.update`, and a message as one subscriber sees it whose
    /// reactions include theirs (`me` is about the one who reads).
    private struct Frames {
        private var updates: [Int64: ServerFrameBytes] = [:]
        private var personal: [PersonalKey: ServerFrameBytes] = [:]

        private struct PersonalKey: Hashable {
            var seq: Int64
            var updated: Bool
            var mine: Set<String>
            var blockedSender: Bool
        }

        /// `blocked`: the senders `user` blocked.
        mutating func frame(for delivery: Delivery, to user: UserID, blocked: Set<String>) -> ServerFrameBytes {
            switch delivery {
            case .frame(let frame):
                return frame
            case .message(let outgoing):
                return personalized(outgoing, updated: outgoing.updated, to: user, blocked: blocked) ?? outgoing.frame
            case .update(let outgoing):
                if let frame = personalized(outgoing, updated: true, to: user, blocked: blocked) { return frame }
                if let frame = updates[outgoing.message.seq] { return frame }
                let frame = ServerFrameBytes(.messageUpdated(outgoing.message))
                updates[outgoing.message.seq] = frame
                return frame
            }
        }

        private mutating func personalized(
            _ outgoing: Outgoing, updated: Bool, to user: UserID, blocked: Set<String>
        ) -> ServerFrameBytes? {
            let mine = outgoing.reactors.map { FeedRead.reactions($0, of: user) } ?? []
            let blockedSender = blocked.contains(outgoing.message.sender)
            guard !mine.isEmpty || blockedSender else { return nil }
            let key = PersonalKey(seq: outgoing.message.seq, updated: updated, mine: mine, blockedSender: blockedSender)
            if let frame = personal[key] { return frame }
            var message = FeedRead.message(outgoing.message, marking: mine)
            message.blockedSender = blockedSender
            let frame = ServerFrameBytes(updated ? .messageUpdated(message) : .message(message))
            personal[key] = frame
            return frame
        }
    }

    // MARK: Subscriptions

    /// A subscription in its pending phase: reads are buffered for it until
    /// `activate`. A subscription of the socket to the same conversation is
    /// replaced.
    mutating func register(socket: SocketID, user: UserID, to id: UUID, presence: Bool = false) {
        feeds[id, default: Feed()].subscriptions[socket] = Subscription(
            user: user, presence: presence, phase: .pending([]))
        conversationsBySocket[socket, default: []].insert(id)
    }

    /// Makes a pending subscription live with its own snapshot: `subscribed`,
    /// the backlog (or `resync_required`), then what was buffered and is newer.
    /// A buffered read newer than the snapshot that found the user no longer
    /// a member ends it with `member_removed` instead.
    mutating func activate(socket: SocketID, in id: UUID, snapshot: FeedRead) -> Effects {
        var effects = Effects()
        guard let subscription = feeds[id]?.subscriptions[socket], case .pending(let buffered) = subscription.phase
        else { return effects }  // removed from the conversation meanwhile: told already
        let removals = buffered.compactMap { item -> Int64? in
            guard case .read(let batch) = item, batch.nonMembers.contains(subscription.user) else { return nil }
            return batch.to.version
        }
        if removals.contains(where: { $0 > snapshot.version }) {
            endSubscriptions(in: id, &effects) { key, _ in key == socket }
            return effects
        }
        func send(_ frame: ServerFrameBytes) { effects.sends.append(Send(socket: socket, frame: frame)) }
        send(ServerFrameBytes(.subscribed(conversationId: id, lastSeq: snapshot.lastSeq, version: snapshot.version)))
        if snapshot.truncated {
            send(ServerFrameBytes(.resyncRequired(conversationId: id, lastSeq: snapshot.lastSeq)))
        } else {
            let blocked = blockedBy[subscription.user] ?? []
            for message in snapshot.added {
                var message = snapshot.message(message, for: subscription.user)
                message.blockedSender = blocked.contains(message.sender)
                send(ServerFrameBytes(.message(message)))
            }
        }
        epoch += 1
        var live = Live(
            has: Position(lastSeq: snapshot.lastSeq, version: snapshot.version), snapshotVersion: snapshot.version,
            epoch: epoch)
        var frames = Frames()
        let blocked = blockedBy[subscription.user] ?? []
        for item in buffered { live.take(item) { send(frames.frame(for: $0, to: subscription.user, blocked: blocked)) } }
        feeds[id]?.subscriptions[socket]?.phase = .live(live)
        if removals.contains(snapshot.version) {
            // A read of the same version cannot say whether the user left
            // before or after the snapshot: one taken now can.
            markDirty(id, &effects)
        }
        let has = live.has
        if let position = feeds[id]?.position {
            if !has.covers(position) {
                // The position came from a newer subscriber's snapshot, and
                // no buffered read bridged the difference: the reads start
                // over from what this one has, and the others skip what they
                // have.
                feeds[id]?.position = has
                markDirty(id, &effects)
            }
        } else {
            feeds[id]?.position = has
            if feeds[id]?.changedBeforeStart == true { markDirty(id, &effects) }
        }
        return effects
    }

    mutating func unsubscribe(socket: SocketID, from id: UUID) {
        removeSubscription(of: socket, from: id)
    }

    /// Ends every subscription of a socket that is gone.
    mutating func disconnect(socket: SocketID) {
        for id in conversations(of: socket) { removeSubscription(of: socket, from: id) }
    }

    /// The conversations a socket is subscribed to, pending or live.
    func conversations(of socket: SocketID) -> Set<UUID> {
        conversationsBySocket[socket] ?? []
    }

    var subscriptionCount: Int { feeds.values.reduce(0) { $0 + $1.subscriptions.count } }
    var conversationCount: Int { feeds.count }

    // MARK: The change feed

    /// `now` throttles typing.
    mutating func handle(_ signal: FeedSignal, at now: ContinuousClock.Instant) -> Effects {
        var effects = Effects()
        switch signal {
        case .lost:
            isListening = false
        case .listening:
            isListening = true
            // Whatever was notified while nobody listened: read it all.
            for id in Array(feeds.keys) {
                if feeds[id]?.position != nil { markDirty(id, &effects) } else { feeds[id]?.changedBeforeStart = true }
            }
        case .event(let event):
            handle(event, at: now, &effects)
        }
        return effects
    }

    private mutating func handle(_ event: FeedEvent, at now: ContinuousClock.Instant, _ effects: inout Effects) {
        guard let conversation = event.conversation, let feed = feeds[conversation] else { return }
        switch event {
        case .changed(let id, _, let version):
            guard let position = feed.position else {
                feeds[id]?.changedBeforeStart = true
                return
            }
            if version > position.version { markDirty(id, &effects) }
        case .read(let id, let user, let seq):
            fanOut(
                .other(ServerFrameBytes(.read(conversationId: id, userId: user.rawValue, seq: seq))), in: id, &effects)
        case .typing(let id, let user):
            guard typingPace.admits(user, in: id, at: now) else { return }
            // Not buffered for pending subscribers: it is stale by the time they go live.
            let others = feed.subscriptions.filter { _, subscription in
                guard case .live = subscription.phase else { return false }
                return subscription.user != user
            }
            guard !others.isEmpty else { return }
            let frame = ServerFrameBytes(.typing(conversationId: id, userId: user.rawValue))
            for socket in others.keys { effects.sends.append(Send(socket: socket, frame: frame)) }
        case .memberRemoved(let id, let user):
            endSubscriptions(in: id, &effects) { _, subscription in subscription.user == user }
        case .memberAdded:
            break  // for inboxes; a subscriber is a member already
        case .memberUpdated(let id, let user, let role):
            fanOut(
                .other(ServerFrameBytes(.memberUpdated(conversationId: id, userId: user.rawValue, role: role))), in: id,
                &effects)
        case .presence:
            break  // read by the hub's presence pass, then `presence(_:in:)`
        case .blocks:
            break  // read by the hub's pass, then `setBlocked(_:for:)`
        case .erased, .revoked:
            break  // the hub closes the user's sockets, which ends their subscriptions
        case .profile:
            break  // not about one conversation (`conversation` is nil)
        case .conversationUpdated:
            break  // read by the hub's pass, then `detailsChanged(_:)`
        }
    }

    /// Whether `id` has subscribers here, pending or live.
    func isSubscribed(_ id: UUID) -> Bool { feeds[id] != nil }

    /// Tells the subscribers of a conversation (pending ones after their
    /// snapshot) its details as read after a `conversation_updated`.
    mutating func detailsChanged(_ details: ConversationDetails) -> Effects {
        var effects = Effects()
        fanOut(
            .other(ServerFrameBytes(.conversationUpdated(details, cursor: nil))), in: details.conversationId, &effects)
        return effects
    }

    /// The senders each subscribed user blocked, for the `blocked_sender`
    /// flag of their frames; absent: none.
    private var blockedBy: [UserID: Set<String>] = [:]

    /// The users with subscriptions here.
    var subscribedUsers: Set<UserID> {
        Set(feeds.values.flatMap { $0.subscriptions.values.map(\.user) })
    }

    /// `user` blocked `senders` (as read after a `blocks` notification, or
    /// when they subscribe).
    mutating func setBlocked(_ senders: Set<String>, for user: UserID) {
        blockedBy[user] = senders.isEmpty ? nil : senders
    }

    /// The conversations with subscribers here that asked for presence.
    var presenceConversations: [UUID] {
        feeds.compactMap { id, feed in feed.subscriptions.values.contains { $0.presence } ? id : nil }
    }

    /// Tells the subscribers of `id` that asked for presence (pending ones
    /// after their snapshot) that a member's presence changed.
    mutating func presence(_ presence: MemberPresence, in id: UUID) -> Effects {
        var effects = Effects()
        fanOut(.other(ServerFrameBytes(.presence(conversationId: id, presence))), in: id, &effects) { $0.presence }
        return effects
    }

    // MARK: Reads, for the catch-up worker

    /// The conversations marked for a read, each with where its read starts;
    /// they are unmarked until something marks them again.
    mutating func takeReads() -> [ReadRequest] {
        let ids = dirty
        dirty.removeAll()
        return ids.compactMap { id in
            guard let feed = feeds[id], let position = feed.position else { return nil }
            return ReadRequest(
                conversation: id, afterSeq: position.lastSeq, afterVersion: position.version,
                users: Array(Set(feed.subscriptions.values.map(\.user))), epoch: epoch)
        }
    }

    /// Fans a read out. Subscribers older than the read who were no longer
    /// members in its snapshot get `member_removed` instead (older: their
    /// snapshot has a lower version, or they were live before the read was
    /// taken); nil `read` means the conversation is gone.
    mutating func apply(_ read: FeedRead?, for request: ReadRequest) -> Effects {
        var effects = Effects()
        let id = request.conversation
        let from = Position(lastSeq: request.afterSeq, version: request.afterVersion)
        guard feeds[id]?.position == from else {
            return effects  // its subscribers left, or the position moved since
        }
        guard let read else {
            endSubscriptions(in: id, &effects) { _, _ in true }
            return effects
        }
        let nonMembers = Set(request.users).subtracting(read.members)
        var undecided = false
        endSubscriptions(in: id, &effects) { _, subscription in
            // Pending ones decide when they activate, against their snapshot.
            guard nonMembers.contains(subscription.user), case .live(let live) = subscription.phase else {
                return false
            }
            if read.version > live.snapshotVersion || live.epoch <= request.epoch { return true }
            undecided = true  // the same version as its snapshot: see `activate`
            return false
        }
        if undecided { markDirty(id, &effects) }
        let content: Batch.Content =
            read.truncated
            ? .resync(ServerFrameBytes(.resyncRequired(conversationId: id, lastSeq: read.lastSeq)))
            : .messages(
                added: read.added.map { Outgoing($0, updated: false, in: read) },
                changed: read.changed.map { Outgoing($0, updated: true, in: read) })
        let to = Position(lastSeq: read.lastSeq, version: read.version)
        fanOut(.read(Batch(from: from, to: to, nonMembers: nonMembers, content: content)), in: id, &effects)
        feeds[id]?.position = to
        return effects
    }

    /// A read that failed is tried again by the next pass.
    mutating func retry(_ request: ReadRequest) -> Effects {
        var effects = Effects()
        if feeds[request.conversation] != nil { markDirty(request.conversation, &effects) }
        return effects
    }

    // MARK: Helpers

    private mutating func markDirty(_ id: UUID, _ effects: inout Effects) {
        dirty.insert(id)
        effects.reads.insert(id)
    }

    /// Gives `item` to every subscriber of `id`: buffered while pending, sent once live.
    private mutating func fanOut(
        _ item: Item, in id: UUID, _ effects: inout Effects, to included: (Subscription) -> Bool = { _ in true }
    ) {
        // Out of the dictionary while it changes, so the buffers are not copied.
        guard var feed = feeds.removeValue(forKey: id) else { return }
        var frames = Frames()
        for socket in Array(feed.subscriptions.keys) where included(feed.subscriptions[socket]!) {
            let user = feed.subscriptions[socket]!.user
            feed.subscriptions[socket]!.phase.take(item) {
                effects.sends.append(
                    Send(socket: socket, frame: frames.frame(for: $0, to: user, blocked: blockedBy[user] ?? [])))
            }
        }
        feeds[id] = feed
    }

    /// Sends `member_removed` to the subscriptions of `id` that `removed`
    /// picks, and ends them.
    private mutating func endSubscriptions(
        in id: UUID, _ effects: inout Effects, where removed: (SocketID, Subscription) -> Bool
    ) {
        guard let ending = feeds[id]?.subscriptions.filter({ removed($0.key, $0.value) }), !ending.isEmpty else {
            return
        }
        let frame = ServerFrameBytes(.memberRemoved(conversationId: id))
        for socket in ending.keys {
            effects.sends.append(Send(socket: socket, frame: frame))
            effects.ended.append(SubscriptionKey(socket: socket, conversation: id))
            removeSubscription(of: socket, from: id)
        }
    }

    /// The one way a subscription ends; a conversation without subscribers
    /// is forgotten, with where its reads stood.
    private mutating func removeSubscription(of socket: SocketID, from id: UUID) {
        guard feeds[id]?.subscriptions.removeValue(forKey: socket) != nil else { return }
        if feeds[id]?.subscriptions.isEmpty == true { feeds[id] = nil }
        conversationsBySocket[socket]?.remove(id)
        if conversationsBySocket[socket]?.isEmpty == true { conversationsBySocket[socket] = nil }
    }
}
