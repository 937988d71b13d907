import Foundation
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// The subscriptions of one instance and what has been delivered to them.
///
/// Per conversation with subscribers here, the hub keeps the last seq and
/// version it has read (`Feed`). A notification on the change feed only
/// says that something after them exists; the catch-up worker
/// (`LiveDelivery`) then reads everything after them in one snapshot
/// (`ScrollbackStore.feed`) and the hub fans it out. One read per
/// conversation and instance serves every subscriber, and a lost
/// notification costs nothing: the next read, or the one after a reconnect
/// of the listening connection, covers it.
///
/// A subscription starts pending: what the hub reads meanwhile is buffered,
/// the subscriber's own snapshot (with its backlog) is sent, and the buffer
/// follows, filtered against that snapshot: messages after its last seq,
/// changes after its version. So a subscriber sees every message once, in
/// seq order, with no gap, however its snapshot and the hub's reads
/// interleave.
///
/// Nothing here waits for a socket: frames are put on each socket's bounded
/// queue (`OutboundQueue`), and each socket's writer drains its own.
actor LiveHub {
    private var feeds: [UUID: Feed] = [:]
    private var sockets: [Int: StreamSocket] = [:]
    /// Conversations with something to read, for the catch-up worker.
    private var dirty: Set<UUID> = []
    private var workerWaiting: CheckedContinuation<Void, Never>?
    private var workerStopped = false
    /// Counts activations, so a read knows which subscribers are older than it.
    private var epoch: UInt64 = 0
    private var lastTyping: [TypingKey: ContinuousClock.Instant] = [:]
    private var shuttingDown = false
    /// The change feed's listening connection is in place: without it,
    /// nothing written elsewhere reaches this instance's sockets.
    private(set) var isListening = false
    private let typingInterval: Duration = .seconds(APILimits.typingIntervalSeconds)

    private struct Feed {
        /// Where the hub's reads stand; nil until the first subscriber's
        /// snapshot sets it.
        var lastSeq: Int64?
        var version: Int64?
        /// A notification arrived before there was a position to read from.
        var changedBeforeStart = false
        var subscriptions: [Int: Subscription] = [:]
    }

    private struct Subscription {
        let socket: StreamSocket
        let user: UserID
        var phase: Phase
    }

    private enum Phase {
        case pending([Item])
        /// `lastSeq`: the last message sent; `version`: the snapshot's, below
        /// which changes were already in it or are the client's to fetch.
        case live(lastSeq: Int64, version: Int64, epoch: UInt64)
    }

    /// What a read or a notification gives a subscriber.
    private enum Item {
        case added(Message, ServerFrameBytes)
        case changed(Message, ServerFrameBytes)
        /// A read that stopped short: the subscriber pages and fetches changes over HTTP.
        case resync(UUID, lastSeq: Int64)
        case other(ServerFrameBytes)
    }

    private struct TypingKey: Hashable {
        var conversation: UUID
        var user: UserID
    }

    // MARK: Sockets

    func connect(_ socket: StreamSocket) -> Bool {
        guard !shuttingDown else { return false }
        sockets[socket.id] = socket
        return true
    }

    func disconnect(_ socket: StreamSocket) {
        sockets[socket.id] = nil
        for id in socket.subscriptions() { remove(socket, from: id) }
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
    func register(_ socket: StreamSocket, user: UserID, to id: UUID) {
        feeds[id, default: Feed()].subscriptions[socket.id] = Subscription(
            socket: socket, user: user, phase: .pending([]))
    }

    /// Makes a pending subscription live with its own snapshot: `subscribed`,
    /// the backlog (or `resync_required`), then what was buffered and is newer.
    func activate(_ socket: StreamSocket, to id: UUID, snapshot: FeedRead) {
        guard var feed = feeds[id], let subscription = feed.subscriptions[socket.id],
            case .pending(let buffered) = subscription.phase
        else { return }  // removed from the conversation meanwhile: told already
        socket.send(
            ServerFrameBytes(.subscribed(conversationId: id, lastSeq: snapshot.lastSeq, version: snapshot.version)))
        if snapshot.truncated {
            socket.send(ServerFrameBytes(.resyncRequired(conversationId: id, lastSeq: snapshot.lastSeq)))
        } else {
            for message in snapshot.added { socket.send(ServerFrameBytes(.message(message))) }
        }
        epoch += 1
        var phase = Phase.live(lastSeq: snapshot.lastSeq, version: snapshot.version, epoch: epoch)
        for item in buffered { Self.deliver(item, to: socket, phase: &phase) }
        feed.subscriptions[socket.id]?.phase = phase
        if feed.lastSeq == nil {
            feed.lastSeq = snapshot.lastSeq
            feed.version = snapshot.version
            if feed.changedBeforeStart { markDirty(id) }
        }
        feeds[id] = feed
    }

    func unsubscribe(_ socket: StreamSocket, from id: UUID) {
        remove(socket, from: id)
    }

    private func remove(_ socket: StreamSocket, from id: UUID) {
        guard var feed = feeds[id] else { return }
        feed.subscriptions[socket.id] = nil
        feeds[id] = feed.subscriptions.isEmpty ? nil : feed
    }

    // MARK: The change feed

    func handle(_ signal: FeedSignal) {
        switch signal {
        case .lost:
            isListening = false
        case .listening:
            isListening = true
            // Whatever was notified while nobody listened: read it all.
            for (id, feed) in feeds {
                if feed.lastSeq != nil { markDirty(id) } else { feeds[id]?.changedBeforeStart = true }
            }
        case .event(let event):
            handle(event)
        }
    }

    private func handle(_ event: FeedEvent) {
        guard var feed = feeds[event.conversation] else { return }
        switch event {
        case .changed(let id, _, let version):
            guard let known = feed.version else {
                feeds[id]?.changedBeforeStart = true
                return
            }
            if version > known { markDirty(id) }
        case .read(let id, let user, let seq):
            fanOut(.other(ServerFrameBytes(.read(conversationId: id, userId: user.rawValue, seq: seq))), in: &feed)
            feeds[id] = feed
        case .typing(let id, let user):
            let key = TypingKey(conversation: id, user: user)
            let now = ContinuousClock.now
            if let last = lastTyping[key], now - last < typingInterval { return }
            lastTyping[key] = now
            if lastTyping.count > 10_000 { lastTyping = lastTyping.filter { now - $0.value < typingInterval } }
            let frame = ServerFrameBytes(.typing(conversationId: id, userId: user.rawValue))
            for subscription in feed.subscriptions.values where subscription.user != user {
                if case .live = subscription.phase { subscription.socket.send(frame) }
            }
        case .memberRemoved(let id, let user):
            removeMember(user, from: id)
        }
    }

    /// `member_removed` to each of the user's subscriptions, which end.
    private func removeMember(_ user: UserID, from id: UUID) {
        guard var feed = feeds[id] else { return }
        Self.endSubscriptions(of: id, in: &feed) { $0.user == user }
        feeds[id] = feed.subscriptions.isEmpty ? nil : feed
    }

    /// Sends `member_removed` to the subscriptions that `removed` picks, and ends them.
    private static func endSubscriptions(
        of id: UUID, in feed: inout Feed, where removed: (Subscription) -> Bool
    ) {
        let frame = ServerFrameBytes(.memberRemoved(conversationId: id))
        for (key, subscription) in feed.subscriptions where removed(subscription) {
            subscription.socket.send(frame)
            subscription.socket.forget(id)
            feed.subscriptions[key] = nil
        }
    }

    // MARK: Reads, for the catch-up worker

    struct ReadRequest: Sendable {
        var conversation: UUID
        var afterSeq: Int64
        var afterVersion: Int64
        var users: [UserID]
        var epoch: UInt64
    }

    /// Waits for conversations to read and returns them, each with where its
    /// read starts; nil once `stopWorker` was called.
    func nextReads() async -> [ReadRequest]? {
        while dirty.isEmpty, !workerStopped {
            await withCheckedContinuation { workerWaiting = $0 }
        }
        if workerStopped { return nil }
        let ids = dirty
        dirty.removeAll()
        return ids.compactMap { id in
            guard let feed = feeds[id], let lastSeq = feed.lastSeq, let version = feed.version else { return nil }
            return ReadRequest(
                conversation: id, afterSeq: lastSeq, afterVersion: version,
                users: Array(Set(feed.subscriptions.values.map(\.user))), epoch: epoch)
        }
    }

    /// Fans a read out. Subscribers older than the read who were no longer
    /// members in its snapshot get `member_removed` instead; nil `read`
    /// means the conversation is gone.
    func apply(_ read: FeedRead?, for request: ReadRequest) {
        let id = request.conversation
        guard var feed = feeds[id], feed.lastSeq == request.afterSeq, feed.version == request.afterVersion else {
            return  // its subscribers left, or another read moved it on
        }
        guard let read else {
            Self.endSubscriptions(of: id, in: &feed) { _ in true }
            feeds[id] = nil
            return
        }
        Self.endSubscriptions(of: id, in: &feed) { subscription in
            guard case .live(_, _, let activated) = subscription.phase else { return false }
            return activated <= request.epoch && !read.members.contains(subscription.user)
        }
        if read.truncated {
            fanOut(.resync(id, lastSeq: read.lastSeq), in: &feed)
        } else {
            for message in read.added { fanOut(.added(message, ServerFrameBytes(.message(message))), in: &feed) }
            for message in read.changed {
                fanOut(.changed(message, ServerFrameBytes(.messageUpdated(message))), in: &feed)
            }
        }
        feed.lastSeq = read.lastSeq
        feed.version = read.version
        feeds[id] = feed.subscriptions.isEmpty ? nil : feed
    }

    func stopWorker() {
        workerStopped = true
        workerWaiting?.resume()
        workerWaiting = nil
    }

    /// A read that failed is tried again by the next pass.
    func retry(_ request: ReadRequest) {
        if feeds[request.conversation] != nil { markDirty(request.conversation) }
    }

    private func markDirty(_ id: UUID) {
        dirty.insert(id)
        if let waiting = workerWaiting {
            workerWaiting = nil
            waiting.resume()
        }
    }

    private func fanOut(_ item: Item, in feed: inout Feed) {
        for key in Array(feed.subscriptions.keys) {
            guard var subscription = feed.subscriptions[key] else { continue }
            switch subscription.phase {
            case .pending(var buffered):
                buffered.append(item)
                subscription.phase = .pending(buffered)
            case .live:
                Self.deliver(item, to: subscription.socket, phase: &subscription.phase)
            }
            feed.subscriptions[key] = subscription
        }
    }

    /// Sends `item` to a live subscriber unless its snapshot already had it.
    private static func deliver(_ item: Item, to socket: StreamSocket, phase: inout Phase) {
        guard case .live(let lastSeq, let version, let epoch) = phase else { return }
        switch item {
        case .added(let message, let frame):
            guard message.seq > lastSeq else { return }
            socket.send(frame)
            phase = .live(lastSeq: message.seq, version: version, epoch: epoch)
        case .changed(let message, let frame):
            guard message.version > version else { return }
            socket.send(frame)
        case .resync(let id, let readLastSeq):
            socket.send(ServerFrameBytes(.resyncRequired(conversationId: id, lastSeq: readLastSeq)))
            phase = .live(lastSeq: max(lastSeq, readLastSeq), version: version, epoch: epoch)
        case .other(let frame):
            socket.send(frame)
        }
    }

    /// Sockets, subscriptions and what waits in the queues, for the log.
    func statistics() -> LiveStatistics {
        var statistics = LiveStatistics(sockets: sockets.count)
        for socket in sockets.values {
            let depth = socket.queue.depth
            statistics.queuedFrames += depth.frames
            statistics.queuedBytes += depth.bytes
        }
        statistics.subscriptions = feeds.values.reduce(0) { $0 + $1.subscriptions.count }
        statistics.conversations = feeds.count
        return statistics
    }
}

/// A frame encoded once, sent to any number of sockets.
struct ServerFrameBytes: Sendable {
    let buffer: ByteBuffer

    init(_ frame: ServerFrame) {
        buffer = ByteBuffer(bytes: frame.jsonBytes)
    }
}

struct LiveStatistics: Sendable, Equatable {
    var sockets = 0
    var subscriptions = 0
    var conversations = 0
    var queuedFrames = 0
    var queuedBytes = 0
    var closedTooSlow = 0
}
