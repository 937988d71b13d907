import Foundation
import ScrollbackModels

/// What a subscriber of the shared socket listens to: one conversation, or
/// the user's inbox.
enum LiveTopic: Hashable, Sendable {
    case conversation(UUID)
    case inbox
}

/// The one socket of a client as a value: who subscribes through it, when
/// it is opened and closed, which frames go to whom. `LiveConnection`
/// performs what it decides; each subscriber (a conversation's live
/// protocol, an inbox) keeps deciding its own resume, gaps and backoff, and
/// sees the socket as if it were its own.
///
/// The rules: a socket is opened when a subscriber asks for one and none is
/// open or opening, and closed when the last subscriber leaves; a subscriber
/// that asks while it is open is told at once. Frames are routed by
/// conversation id (inbox frames to the inbox); a user's profile
/// (`user_updated`, about no single conversation) goes to the client's
/// profile cache. A subscriber that gives up its subscription (not
/// subscribed in time, a fetch that failed) gives up the socket too only
/// while it is still opening (an upgrade that hangs hangs for everyone);
/// on an open socket it unsubscribes its topic, unless another subscriber
/// still listens to it. Two subscribers of one topic
/// share the server's subscription: a later `subscribe` for it resumes no
/// later than what the socket has carried, so the one already listening
/// misses nothing (it drops what it sees twice).
struct SocketRouting: Sendable, Equatable {
    typealias Subscriber = Int

    enum Action: Sendable, Equatable {
        /// A subscriber starts listening to a topic (it asks for the socket with `want`).
        case join(Subscriber, LiveTopic)
        /// The subscriber needs the socket: it is told `opened` when it is.
        case want(Subscriber)
        /// The subscriber sends a frame on the socket it was told of.
        case send(Subscriber, ClientFrame)
        /// The subscriber gives up its subscription on this socket; it may `want` again later.
        case release(Subscriber)
        /// The subscriber stops listening for good.
        case leave(Subscriber)
        /// What happened to socket `socket`: opened and authenticated, a
        /// frame, closed, broken, or no token for it.
        case socket(Int, LiveProtocol.Input)
    }

    enum Effect: Sendable, Equatable {
        /// Fetch a token and open socket `number`, authenticated by its first frame.
        case open(Int)
        case close(Int)
        case write(ClientFrame, on: Int)
        /// Hand the subscriber what happened, as the input of its own protocol.
        case tell(Subscriber, LiveProtocol.Input)
        /// A user's profile changed (`user_updated`): it is the client's,
        /// not one subscriber's, and goes to its profile cache.
        case learn(UserProfile)
    }

    private enum Socket: Sendable, Equatable {
        case none
        case opening(Int)
        case open(Int)
    }

    private var socket = Socket.none
    private var opened = 0
    private var topics: [Subscriber: LiveTopic] = [:]
    /// Asked for the socket while it was opening.
    private var waiting: Set<Subscriber> = []
    /// Told the open socket is theirs to use.
    private var onSocket: Set<Subscriber> = []
    /// Sent a subscription on the open socket whose confirmation
    /// (`subscribed`, `inbox_subscribed`) has not come.
    private var confirming: Set<Subscriber> = []
    /// What the open socket has carried per conversation (the newest seq)
    /// and for the inbox (the last cursor): where a shared subscription may
    /// be resumed from without losing anything for those on it.
    private var carried: [UUID: Int64] = [:]
    private var carriedCursor: String?
    /// Topics subscribed on the open socket.
    private var subscribed: Set<LiveTopic> = []

    /// The number of the socket open or opening, if any.
    var currentSocket: Int? {
        switch socket {
        case .none: nil
        case .opening(let number), .open(let number): number
        }
    }

    var subscriberCount: Int { topics.count }

    mutating func handle(_ action: Action) -> [Effect] {
        switch action {
        case .join(let subscriber, let topic):
            topics[subscriber] = topic
            return []
        case .want(let subscriber):
            guard topics[subscriber] != nil else { return [] }
            switch socket {
            case .open:
                onSocket.insert(subscriber)
                return [.tell(subscriber, .opened)]
            case .opening:
                waiting.insert(subscriber)
                return []
            case .none:
                opened += 1
                socket = .opening(opened)
                waiting.insert(subscriber)
                return [.open(opened)]
            }
        case .send(let subscriber, let frame):
            guard case .open(let number) = socket, onSocket.contains(subscriber) else { return [] }
            return [.write(shared(frame, from: subscriber), on: number)]
        case .release(let subscriber):
            return release(subscriber)
        case .leave(let subscriber):
            var effects = release(subscriber)
            topics[subscriber] = nil
            if topics.isEmpty, let number = currentSocket {
                effects.append(.close(number))
                reset()
            }
            return effects
        case .socket(let number, let input):
            guard number == currentSocket else { return [] }  // a socket given up already
            return socketReported(number, input)
        }
    }

    // MARK: Subscribers

    /// A subscription frame, rewritten so that the subscribers already on
    /// its topic lose nothing when the server replaces their subscription.
    private mutating func shared(_ frame: ClientFrame, from subscriber: Subscriber) -> ClientFrame {
        switch frame {
        case .subscribe(let id, let after, let presence):
            confirming.insert(subscriber)
            let topic = LiveTopic.conversation(id)
            defer { subscribed.insert(topic) }
            guard subscribed.contains(topic), let seen = carried[id] else { return frame }
            return .subscribe(conversationId: id, afterSeq: min(after ?? seen, seen), presence: presence)
        case .subscribeInbox(let after):
            confirming.insert(subscriber)
            defer { subscribed.insert(.inbox) }
            guard subscribed.contains(.inbox), after == nil, let cursor = carriedCursor else { return frame }
            return .subscribeInbox(after: cursor)
        default:
            return frame
        }
    }

    private mutating func release(_ subscriber: Subscriber) -> [Effect] {
        confirming.remove(subscriber)
        if waiting.remove(subscriber) != nil, case .opening(let number) = socket {
            // Given up while opening: the upgrade hangs for everyone waiting on it.
            let others = waiting
            reset()
            return [.close(number)] + others.sorted().map { .tell($0, .failed(reason: "The socket did not open in time.")) }
        }
        guard onSocket.remove(subscriber) != nil, case .open(let number) = socket, let topic = topics[subscriber],
            !onSocket.contains(where: { topics[$0] == topic }), subscribed.remove(topic) != nil
        else { return [] }
        switch topic {
        case .conversation(let id):
            carried[id] = nil
            return [.write(.unsubscribe(conversationId: id), on: number)]
        case .inbox:
            carriedCursor = nil
            return [.write(.unsubscribeInbox, on: number)]
        }
    }

    private mutating func reset() {
        socket = .none
        waiting = []
        onSocket = []
        confirming = []
        subscribed = []
        carried = [:]
        carriedCursor = nil
    }

    // MARK: The socket

    private mutating func socketReported(_ number: Int, _ input: LiveProtocol.Input) -> [Effect] {
        switch input {
        case .opened:
            socket = .open(number)
            let told = waiting.sorted()
            onSocket.formUnion(waiting)
            waiting = []
            return told.map { .tell($0, .opened) }
        case .received(let frame):
            return route(frame)
        case .closed, .failed, .tokenUnavailable:
            let told = waiting.union(onSocket).sorted()
            reset()
            return told.map { .tell($0, input) }
        default:
            return []
        }
    }

    private mutating func route(_ frame: ServerFrame) -> [Effect] {
        let listeners: [Subscriber]
        switch frame {
        case .subscribed(let id, let seq, _):
            carried[id] = max(carried[id] ?? seq, seq)
            // Only to those waiting for it: to one already live it would
            // read as a new subscription.
            listeners = confirming.filter { topics[$0] == .conversation(id) }.sorted()
            confirming.subtract(listeners)
        case .message(let message):
            carried[message.conversationId] = max(carried[message.conversationId] ?? message.seq, message.seq)
            listeners = on(.conversation(message.conversationId))
        case .messageUpdated(let message):
            listeners = on(.conversation(message.conversationId))
        case .read(let id, _, _), .typing(let id, _), .presence(let id, _), .memberUpdated(let id, _, _),
            .resyncRequired(let id, _):
            listeners = on(.conversation(id))
        case .memberRemoved(let id):
            listeners = on(.conversation(id))
            subscribed.remove(.conversation(id))
        case .error(_, _, let ref, _):
            if let ref {
                // About a conversation (a send's client id concerns nobody here).
                listeners = UUID(uuidString: ref).map { on(.conversation($0)) } ?? []
            } else {
                listeners = onSocket.sorted()
            }
        case .inboxSubscribed(let cursor):
            carriedCursor = cursor
            listeners = on(.inbox)
            confirming.subtract(listeners)
        case .conversationActivity(_, let cursor), .memberAdded(_, let cursor), .inboxMemberRemoved(_, let cursor),
            .inboxResyncRequired(let cursor), .inboxRead(_, _, _, _, _, let cursor):
            carriedCursor = cursor
            listeners = on(.inbox)
        case .userUpdated(let profile):
            return [.learn(profile)]
        case .conversationUpdated(let details, let cursor):
            // With a cursor, the inbox's; without, the conversation's.
            if let cursor {
                carriedCursor = cursor
                listeners = on(.inbox)
            } else {
                listeners = on(.conversation(details.conversationId))
            }
        case .ack, .pong:
            listeners = []
        }
        return listeners.map { .tell($0, .received(frame)) }
    }

    /// The subscribers of `topic` on the open socket.
    private func on(_ topic: LiveTopic) -> [Subscriber] {
        onSocket.filter { topics[$0] == topic }.sorted()
    }
}
