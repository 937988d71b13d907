import Foundation
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// The live sockets of one instance, and the performer of `LiveRouting`:
/// the routing decides which socket gets which frame and which
/// conversation needs a read, the hub keeps the sockets by id, hands the
/// routing each input and performs what it returns. The routing is the one
/// owner of who is subscribed to what.
///
/// Nothing here waits for a socket: frames are put on each socket's bounded
/// queue (`OutboundQueue`), and each socket's writer drains its own.
actor LiveHub {
    private var routing = LiveRouting()
    private var inbox = InboxRouting()
    private var sockets: [Int: StreamSocket] = [:]
    private var shuttingDown = false
    /// Presence: the users a presence notification (`w:`, or an earlier
    /// version's `o:`) named since the last pass (`everyone`: all members of
    /// the subscribed conversations, after the feed's connection was lost),
    /// and what this instance last told of
    /// each user its subscribers watch, so that a notification that changes
    /// nothing (a second socket elsewhere) sends no frame.
    private var presenceNamed: Set<UserID> = []
    private var presenceOfEveryone = false
    private var announced: [UserID: MemberPresence] = [:]
    /// Blocks: the users whose lists changed since the last pass
    /// (`everyone`: every subscribed user, after the feed's connection was lost).
    private var blocksNamed: Set<UserID> = []
    private var blocksOfEveryone = false
    /// Profiles: the users whose profile changed since the last pass.
    private var profilesNamed: Set<UserID> = []
    /// Conversations with subscribers here whose details changed since the
    /// last pass.
    private var detailsNamed: Set<UUID> = []
    /// Wakes the catch-up worker when a conversation is marked for a read.
    /// Keeping only the newest wake-up is enough: the worker takes every
    /// marked conversation at once, and a mark made after that take yields
    /// another wake-up.
    nonisolated let wakeUps: AsyncStream<Void>
    private let wakeWorker: AsyncStream<Void>.Continuation

    init() {
        (wakeUps, wakeWorker) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The change feed's listening connection is in place: without it,
    /// nothing written elsewhere reaches this instance's sockets.
    var isListening: Bool { routing.isListening }

    // MARK: Sockets

    enum Admission {
        case accepted
        case shuttingDown
        /// As many sockets as the instance takes are open.
        case full
    }

    func connect(_ socket: StreamSocket, limit: Int) -> Admission {
        guard !shuttingDown else { return .shuttingDown }
        guard sockets.count < limit else { return .full }
        sockets[socket.id] = socket
        return .accepted
    }

    func disconnect(_ socket: StreamSocket) {
        sockets[socket.id] = nil
        routing.disconnect(socket: socket.id)
        inbox.remove(socket: socket.id)
    }

    /// Every socket is asked to close with 1001 once the frame it is
    /// handling is answered; new sockets are refused.
    func shutDown() -> [StreamSocket] {
        shuttingDown = true
        return Array(sockets.values)
    }

    var openSockets: Int { sockets.count }

    // MARK: Subscriptions

    /// A subscription in its pending phase; reads are buffered for it until
    /// `activate`.
    func register(_ socket: StreamSocket, user: UserID, to id: UUID, presence: Bool = false) {
        // A socket that has left would keep the subscription forever.
        guard sockets[socket.id] != nil else { return }
        routing.register(socket: socket.id, user: user, to: id, presence: presence)
    }

    /// Makes a pending subscription live with its own snapshot: `subscribed`,
    /// the backlog (or `resync_required`), then what was buffered and is newer.
    func activate(_ socket: StreamSocket, to id: UUID, snapshot: FeedRead) {
        perform(routing.activate(socket: socket.id, in: id, snapshot: snapshot))
    }

    func unsubscribe(_ socket: StreamSocket, from id: UUID) {
        routing.unsubscribe(socket: socket.id, from: id)
    }

    // MARK: Inboxes

    /// An inbox subscription in its pending phase (see `InboxRouting`).
    func registerInbox(_ socket: StreamSocket, user: UserID) {
        guard sockets[socket.id] != nil else { return }
        inbox.register(socket: socket.id, user: user)
    }

    /// Makes a pending inbox subscription live with its own snapshot.
    func activateInbox(_ socket: StreamSocket, after: InboxCursor?, snapshot: InboxRead) {
        perform(inbox.activate(socket: socket.id, after: after, snapshot: snapshot))
    }

    func unsubscribeInbox(_ socket: StreamSocket) {
        inbox.remove(socket: socket.id)
    }

    typealias InboxReadRequest = InboxRouting.ReadRequest

    /// The users whose inboxes are marked for a read; call it on each of `wakeUps`.
    func takeInboxReads() -> [InboxReadRequest] {
        inbox.takeReads()
    }

    func apply(_ read: InboxRead, for request: InboxReadRequest) {
        perform(inbox.apply(read, for: request))
    }

    func retry(_ request: InboxReadRequest) {
        perform(inbox.retry(request))
    }

    // MARK: The change feed

    func handle(_ signal: FeedSignal) {
        perform(routing.handle(signal, at: .now))
        perform(inbox.handle(signal))
        switch signal {
        case .event(.presence(let users)):
            presenceNamed.formUnion(users)
            wakeWorker.yield()
        case .event(.blocks(let user)):
            blocksNamed.insert(user)
            wakeWorker.yield()
        case .event(.profile(let user)):
            profilesNamed.insert(user)
            wakeWorker.yield()
        case .event(.conversationUpdated(let id)) where routing.isSubscribed(id):
            detailsNamed.insert(id)
            wakeWorker.yield()
        case .event(.erased(let user)):
            // Closed as a token that is no longer valid is: the client signs
            // in again (and the product's sign-in knows the account is gone).
            for socket in sockets.values where socket.user == user {
                socket.send(.error(code: .unauthorized, message: "The user was erased.", ref: nil))
                socket.close(code: StreamCloseCode.unauthorized, reason: "user erased")
            }
        case .event(.revoked(let user, let before)):
            for socket in sockets.values where socket.user == user && (socket.issuedAt ?? .distantPast) < before {
                socket.send(.error(code: .unauthorized, message: StreamSocket.revokedMessage, ref: nil))
                socket.close(code: StreamCloseCode.unauthorized, reason: "token revoked")
            }
        case .listening:
            presenceOfEveryone = true
            blocksOfEveryone = true
            wakeWorker.yield()
        case .event, .lost:
            break
        }
    }

    // MARK: Blocks, for the catch-up worker

    /// The subscribed users whose block lists to read again; call it on
    /// each of `wakeUps`.
    func takeBlockReads() -> [UserID] {
        defer {
            blocksNamed.removeAll()
            blocksOfEveryone = false
        }
        guard blocksOfEveryone || !blocksNamed.isEmpty else { return [] }
        let subscribed = routing.subscribedUsers
        return Array(blocksOfEveryone ? subscribed : blocksNamed.intersection(subscribed))
    }

    /// `user` blocked `senders`: their frames flag those senders' messages.
    func setBlocked(_ senders: Set<String>, for user: UserID) {
        routing.setBlocked(senders, for: user)
    }

    /// A read of block lists that failed is tried again by the next pass.
    func retryBlocks(_ users: [UserID]) {
        blocksNamed.formUnion(users)
        wakeWorker.yield()
    }

    // MARK: Profiles, for the catch-up worker

    /// Whose profiles changed, and the users of the sockets open here, who
    /// are told when they share a conversation with them.
    struct ProfileRequest: Sendable {
        var changed: [UserID]
        var viewers: [UserID]
    }

    /// The profile changes to tell since the last call (nil: none); call it
    /// on each of `wakeUps`.
    func takeProfiles() -> ProfileRequest? {
        defer { profilesNamed.removeAll() }
        let viewers = Set(sockets.values.compactMap(\.user))
        guard !profilesNamed.isEmpty, !viewers.isEmpty else { return nil }
        return ProfileRequest(changed: Array(profilesNamed), viewers: Array(viewers))
    }

    /// Sends `user_updated` once to each socket of a viewer who shares a
    /// conversation with the user whose profile it is (`audience`: pairs
    /// of a viewer and a changed user).
    func apply(_ profiles: ProfileSet, audience: [(viewer: UserID, changed: UserID)]) {
        var viewersOf: [UserID: Set<UserID>] = [:]
        for pair in audience { viewersOf[pair.changed, default: []].insert(pair.viewer) }
        for (changed, viewers) in viewersOf {
            guard let profile = profiles[changed.rawValue] else { continue }
            let frame = ServerFrameBytes(.userUpdated(profile))
            for socket in sockets.values where socket.user.map(viewers.contains) == true { socket.send(frame) }
        }
    }

    /// A read of profiles that failed is tried again by the next pass.
    func retry(_ request: ProfileRequest) {
        profilesNamed.formUnion(request.changed)
        wakeWorker.yield()
    }

    // MARK: Conversations' details, for the catch-up worker

    /// The conversations whose details to read and tell their subscribers
    /// since the last call; call it on each of `wakeUps`.
    func takeDetails() -> [UUID] {
        defer { detailsNamed.removeAll() }
        return detailsNamed.filter(routing.isSubscribed)
    }

    /// Sends `conversation_updated` to each subscriber of each conversation.
    func apply(_ details: [ConversationDetails]) {
        for item in details { perform(routing.detailsChanged(item)) }
    }

    /// A read of details that failed is tried again by the next pass.
    func retryDetails(_ ids: [UUID]) {
        detailsNamed.formUnion(ids)
        wakeWorker.yield()
    }

    // MARK: Presence, for the catch-up worker

    /// Whose presence to read, and in which conversations.
    struct PresenceRequest: Sendable {
        /// Nil: every member of `conversations`.
        var users: [UserID]?
        var conversations: [UUID]
    }

    /// The presence to read since the last call (nil: none); call it on
    /// each of `wakeUps`.
    func takePresence() -> PresenceRequest? {
        defer {
            presenceNamed.removeAll()
            presenceOfEveryone = false
        }
        guard presenceOfEveryone || !presenceNamed.isEmpty else { return nil }
        let conversations = routing.presenceConversations
        let users = presenceOfEveryone ? nil : Array(presenceNamed)
        guard !conversations.isEmpty else {
            // Nobody here watches them.
            forgetPresence(except: [], of: users)
            return nil
        }
        return PresenceRequest(users: users, conversations: conversations)
    }

    /// Tells each subscriber the presence that changed since this instance
    /// last told it: `rows` is the read of `request`.
    func apply(_ rows: [ConversationMemberPresence], for request: PresenceRequest) {
        var now: [UserID: MemberPresence] = [:]
        for row in rows { now[UserID(rawValue: row.presence.userId)] = row.presence }
        forgetPresence(except: Set(now.keys), of: request.users)
        var changed: Set<UserID> = []
        for (user, presence) in now where announced[user] != presence {
            announced[user] = presence
            changed.insert(user)
        }
        guard !changed.isEmpty else { return }
        for row in rows where changed.contains(UserID(rawValue: row.presence.userId)) {
            perform(routing.presence(row.presence, in: row.conversation))
        }
    }

    /// A read of presence that failed is tried again by the next pass.
    func retry(_ request: PresenceRequest) {
        if let users = request.users { presenceNamed.formUnion(users) } else { presenceOfEveryone = true }
        wakeWorker.yield()
    }

    /// Forgets what was told of the users of `users` (nil: all) who are
    /// not in `kept`: no subscriber here watches them now, and whatever they
    /// become is told in full once one does.
    private func forgetPresence(except kept: Set<UserID>, of users: [UserID]?) {
        if let users {
            for user in users where !kept.contains(user) { announced[user] = nil }
        } else {
            announced = announced.filter { kept.contains($0.key) }
        }
    }

    // MARK: Reads, for the catch-up worker

    typealias ReadRequest = LiveRouting.ReadRequest

    /// The conversations marked for a read since the last call, each with
    /// where its read starts; call it on each of `wakeUps`.
    func takeReads() -> [ReadRequest] {
        routing.takeReads()
    }

    /// Fans a read out; nil `read` means the conversation is gone.
    func apply(_ read: FeedRead?, for request: ReadRequest) {
        perform(routing.apply(read, for: request))
    }

    /// A read that failed is tried again by the next pass.
    func retry(_ request: ReadRequest) {
        perform(routing.retry(request))
    }

    /// Ends `wakeUps`, after the wake-up it holds (if any).
    nonisolated func stopWorker() {
        wakeWorker.finish()
    }

    private func perform(_ effects: LiveRouting.Effects) {
        perform(effects.sends, reading: !effects.reads.isEmpty)
    }

    private func perform(_ effects: InboxRouting.Effects) {
        perform(effects.sends, reading: !effects.reads.isEmpty)
    }

    private func perform(_ sends: [LiveRouting.Send], reading: Bool) {
        for send in sends { sockets[send.socket]?.send(send.frame) }
        if reading { wakeWorker.yield() }
    }

    /// Sockets, subscriptions and what waits in the queues, for the log.
    func statistics() -> LiveStatistics {
        var statistics = LiveStatistics(sockets: sockets.count)
        for socket in sockets.values {
            let depth = socket.queue.depth
            statistics.queuedFrames += depth.frames
            statistics.queuedBytes += depth.bytes
        }
        statistics.subscriptions = routing.subscriptionCount
        statistics.inboxes = inbox.subscriptionCount
        statistics.conversations = routing.conversationCount
        return statistics
    }
}
