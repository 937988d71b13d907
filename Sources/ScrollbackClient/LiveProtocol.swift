import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// The live stream of one conversation as a value: every decision of the
/// resume, gap and catch-up protocol, and none of its I/O.
///
/// It is fed what happened (``Input``: the socket opened, a frame came, a
/// page came back, the socket closed, a timer fired) and answers with what
/// to do (``Step``: ask for the socket, send a frame, fetch a page, deliver
/// an event, wait, finish). `ScrollbackClient.live(conversation:after:)`
/// runs these steps over the client's shared WebSocket and HTTP (a
/// `connect` asks for the shared socket, a `disconnect` gives up this
/// subscription on it); an app with a socket of its own can run them just
/// as well.
///
/// The subscription's lifecycle (asking for the socket, the subscribe
/// deadline, backoff with jitter, the background, refused tokens) is a
/// `Subscription` it holds as a child, the one the inbox holds too; this
/// value adds only the conversation's rules: where to resume, gaps and
/// catch-up.
///
/// What it guarantees, across any number of disconnects: every message is
/// delivered once, in seq order, with no gap. It resumes each subscription
/// with `after_seq` = the last seq delivered, drops a message it has
/// delivered before, pages over HTTP what a gap or `resync_required` left
/// out (before anything that arrived after it), and after a reconnect
/// fetches the edits and deletions it missed while away.
///
/// Socket inputs are about the socket of the latest ``Step/connect``; the
/// runner drops what an older socket still reports. At most one fetch
/// (``Step/fetchPage(after:limit:)``, ``Step/fetchChanges(since:limit:)``)
/// is outstanding, and each gets one answer, which may come at any time: the
/// frames that arrive meanwhile are held and handled after it, and a page
/// that was asked for on a socket lost since is still used.
public struct LiveProtocol: Sendable, Equatable {
    /// What happened.
    public enum Input: Sendable, Equatable {
        /// Begin: the first socket is opened at once.
        case start
        /// The socket asked for has been upgraded and has sent its `auth` frame.
        case opened
        /// A frame arrived on the socket.
        case received(ServerFrame)
        /// The answer to ``Step/fetchPage(after:limit:)``.
        case pageReceived(MessagePage)
        /// The answer to ``Step/fetchChanges(since:limit:)``.
        case changesReceived(ChangeSet)
        /// A fetch failed for good (after the HTTP client's own retries).
        case fetchFailed(ScrollbackError)
        /// The socket was closed, with the close frame's code and reason when
        /// one came.
        case closed(code: Int?, reason: String?)
        /// The socket could not be opened or broke: no answer, a refused
        /// upgrade, a reset connection.
        case failed(reason: String)
        /// The app's token provider failed, so no socket could be opened.
        case tokenUnavailable(reason: String)
        /// A timer of ``Step/startTimer(_:after:)`` went off.
        case timerFired(Timer)
        /// The device's network came back (a path monitor said so): a
        /// connection waiting out its backoff is tried at once, and the
        /// backoff starts over.
        case networkAvailable
        /// The app went to the background: the socket is given up, and
        /// nothing reconnects until ``foregrounded``.
        case backgrounded
        /// The app came back to the foreground: connect at once, the
        /// backoff starts over.
        case foregrounded
        /// The consumer stopped listening.
        case cancel
    }

    /// A timer, named by the connection attempt it belongs to: one that goes
    /// off after its attempt was superseded is ignored.
    public enum Timer: Sendable, Hashable {
        /// The attempt must be subscribed by now, or it is given up.
        case subscribeDeadline(attempt: Int)
        /// The wait after the attempt failed is over: connect again.
        case reconnect(attempt: Int)
    }

    /// What to do, in order.
    public enum Step: Sendable, Equatable {
        /// Get a socket, authenticated with a token from the provider (its
        /// first frame), and feed ``Input/opened`` once it is. On a socket
        /// shared by many subscriptions, an open one is handed out at once.
        case connect
        /// Send a frame on the current socket.
        case send(ClientFrame)
        /// Give up the current socket and ignore whatever it still reports
        /// (on a shared socket: give up this subscription on it, and the
        /// socket itself only while it has not opened).
        case disconnect
        /// `GET .../messages?after=` and answer with ``Input/pageReceived(_:)``.
        case fetchPage(after: Int64, limit: Int)
        /// `GET .../changes?since_version=` and answer with ``Input/changesReceived(_:)``.
        case fetchChanges(since: Int64, limit: Int)
        /// Deliver an event to the consumer.
        case emit(LiveEvent)
        /// Feed ``Input/timerFired(_:)`` after `after`.
        case startTimer(Timer, after: Duration)
        /// The stream is over: close everything and end it, with the error
        /// when there is one.
        case finish(ScrollbackError?)
    }

    /// Where the stream stands.
    public enum Phase: Sendable, Equatable {
        /// Not started.
        case idle
        /// A socket was asked for and has not opened yet.
        case connecting
        /// The socket is open and `subscribe` was sent; not caught up yet.
        case subscribing
        /// Subscribed and caught up: ``LiveEvent/connected(lastSeq:version:)`` was delivered.
        case live
        /// Waiting to reconnect after a failure.
        case waiting
        /// The app is in the background: no socket until it comes back.
        case suspended
        /// Ended; every input is ignored.
        case finished
    }

    /// HTTP work that holds the frames arriving meanwhile.
    private enum Work: Sendable, Equatable {
        /// Paging from the last delivered seq through `through`, then
        /// delivering `then` (the live message that showed the gap).
        case filling(through: Int64, then: Message?)
        /// Fetching the changes after `since` to messages up to `through`,
        /// then going live with the `subscribed` frame's seq and version.
        case catchingUp(since: Int64, through: Int64, subscribedSeq: Int64, subscribedVersion: Int64)
        /// A catch-up for a socket given up since: its answer is awaited and ignored.
        case abandoned
    }

    /// Who decides whether the messages held are complete: what is
    /// missing and what to fetch. Exactly one value does, so no rule of it
    /// is written twice.
    public enum Completeness: Sendable, Equatable {
        /// The protocol itself, for a stream with nothing behind it: it
        /// delivers every message once and in seq order, pages what a gap
        /// or `resync_required` left out, and fetches the edits missed
        /// while away.
        case ordered
        /// The window the stream feeds (a `Timeline`), which asks for what
        /// is missing itself: the protocol owns only the subscription
        /// (connecting, resuming, backoff, refusals). `subscribed` goes live
        /// at once; messages, edits and `resync_required` are the window's
        /// (its runner hands it the frames); each subscription resumes
        /// after the seq the window last gave with ``resume(after:)``.
        case window
    }

    public let conversationId: UUID
    /// Who decides what is missing.
    public let completeness: Completeness
    /// The backoff between failed connections.
    public var retry: RetryPolicy {
        get { subscription.retry }
        set { subscription.retry = newValue }
    }
    /// How long a new connection may take to be subscribed.
    public var subscribeTimeout: Duration {
        get { subscription.subscribeTimeout }
        set { subscription.subscribeTimeout = newValue }
    }
    /// The last message delivered; nil before the first subscription of a
    /// stream started "from now".
    public private(set) var lastSeq: Int64?
    public var phase: Phase { subscription.phase }
    /// Connections that failed since the last subscription: the backoff grows with it.
    public var failures: Int { subscription.failures }
    /// The subscription's lifecycle (connecting, subscribing, backoff,
    /// refusals), a child this protocol scopes into: it keeps only the
    /// conversation's rules.
    private var subscription: Subscription
    /// How new what was delivered is: current as of the last subscription
    /// that went live (changes after it that were not seen live are
    /// fetched after a reconnect), and the highest version delivered.
    private var versions = KnownVersion()
    private var work: Work?
    private var held: [ServerFrame] = []

    /// A stream of `conversationId` from after `seq` (nil: from now on).
    /// `seed` makes the backoff's jitter repeatable.
    public init(
        conversationId: UUID, after seq: Int64?, retry: RetryPolicy = RetryPolicy(),
        subscribeTimeout: Duration = .seconds(10), seed: UInt64 = .random(in: .min ... .max),
        completeness: Completeness = .ordered
    ) {
        self.conversationId = conversationId
        self.completeness = completeness
        self.lastSeq = seq
        self.subscription = Subscription(
            topic: .conversation(conversationId, afterSeq: seq), retry: retry, subscribeTimeout: subscribeTimeout,
            seed: seed)
    }

    /// Where the next subscription resumes, as the window that owns
    /// completeness says (`.window`): the newest seq it holds.
    public mutating func resume(after seq: Int64?) {
        lastSeq = seq
    }

    /// Takes in what happened and says what to do next.
    public mutating func handle(_ input: Input) -> [Step] {
        guard phase != .finished else { return [] }
        switch input {
        case .received(let frame) where subscription.isSubscribing:
            guard work == nil else {
                held.append(frame)
                return []
            }
            return receive(frame) + resume()
        case .pageReceived(let page):
            guard case .filling(let through, let then) = work else { return [] }
            return pageReceived(page, through: through, then: then) + resume()
        case .changesReceived(let changes):
            switch work {
            case .catchingUp(let since, let through, let seq, let version):
                return changesReceived(changes, since: since, through: through, subscribedSeq: seq, version: version)
                    + resume()
            case .abandoned:
                work = nil
                return resume()
            default:
                return []
            }
        case .fetchFailed(let error):
            guard let failed = work else { return [] }
            work = nil
            switch error {
            case .notFound, .forbidden: return following(subscription.finish(error))
            default: break
            }
            // Only a fetch for the current socket costs it: what was missed
            // comes with the next subscription from the last delivered seq.
            guard failed != .abandoned, subscription.isSubscribing else { return resume() }
            return following(subscription.drop(error.localizedDescription))
        default:
            if case .opened = input { subscription.topic = .conversation(conversationId, afterSeq: lastSeq) }
            return following(subscription.handle(input))
        }
    }

    /// The subscription's steps, and what they end of the conversation's
    /// work: the frames held go with the socket given up, and a catch-up
    /// that would make it live is abandoned (a page goes on being useful
    /// without the socket).
    private mutating func following(_ steps: [Step]) -> [Step] {
        for step in steps {
            switch step {
            case .disconnect:
                if case .catchingUp = work { work = .abandoned }
                held = []
            case .finish:
                work = nil
                held = []
            default:
                break
            }
        }
        return steps
    }

    // MARK: Frames

    private mutating func receive(_ frame: ServerFrame) -> [Step] {
        if completeness == .window {
            switch frame {
            case .message, .messageUpdated, .resyncRequired: return []  // the window's
            default: break
            }
        }
        switch frame {
        case .subscribed(_, let seq, let version):
            _ = subscription.receive(frame)
            if completeness == .window { return goLive(subscribedSeq: seq, version: version) }
            // Missed messages come from the backlog (or resync_required);
            // missed edits of messages held before come from the change log.
            let resumed = versions.liveFrom != nil
            if let since = versions.subscribed(at: version), resumed {
                work = .catchingUp(since: since, through: lastSeq ?? seq, subscribedSeq: seq, subscribedVersion: version)
                return [.fetchChanges(since: since, limit: APILimits.changesLimit.upperBound)]
            }
            return goLive(subscribedSeq: seq, version: version)
        case .message(let message):
            versions.saw(message.version)
            if let last = lastSeq {
                guard message.seq > last else { return [] }
                if message.seq > last + 1 { return fill(through: message.seq - 1, then: message) }
            }
            return deliver(message)
        case .messageUpdated(let message):
            versions.saw(message.version)
            guard let last = lastSeq, message.seq <= last else { return [] }
            return [.emit(.updated(message))]
        case .read(_, let user, let seq):
            return [.emit(.read(userId: user, seq: seq))]
        case .typing(_, let user):
            return [.emit(.typing(userId: user))]
        case .presence(_, let presence):
            return [.emit(.presence(presence))]
        case .memberUpdated(_, let user, let role):
            return [.emit(.memberUpdated(userId: user, role: role))]
        case .conversationUpdated(let details, nil):
            return [.emit(.conversationUpdated(details))]
        case .conversationUpdated:
            return []  // the inbox's
        case .memberRemoved:
            return [.emit(.memberRemoved)] + following(subscription.finish(nil))
        case .resyncRequired(_, let seq):
            return fill(through: seq, then: nil)
        case .error(let code, let message, _, _):
            if code == .conversationNotFound {
                return following(subscription.finish(.notFound(code: code, message: message)))
            }
            return following(subscription.receive(frame))
        case .ack, .pong, .userUpdated, .inboxSubscribed, .conversationActivity, .memberAdded, .inboxRead,
            .inboxMemberRemoved,
            .inboxResyncRequired:
            return []  // not about this conversation's subscription
        }
    }

    private mutating func goLive(subscribedSeq seq: Int64, version: Int64) -> [Step] {
        _ = versions.subscribed(at: version)
        versions.caughtUp(to: version)
        if lastSeq == nil { lastSeq = seq }
        subscription.goLive()
        return [.emit(.connected(lastSeq: seq, version: version))]
    }

    private mutating func deliver(_ message: Message?) -> [Step] {
        guard let message else { return [] }
        lastSeq = message.seq
        versions.saw(message.version)
        return [.emit(.message(message))]
    }

    /// Pages over HTTP from the last delivered seq through `through`, then delivers `then`.
    private mutating func fill(through: Int64, then: Message?) -> [Step] {
        guard let last = lastSeq, last < through else { return deliver(then) }
        work = .filling(through: through, then: then)
        return [.fetchPage(after: last, limit: APILimits.pageLimit.upperBound)]
    }

    private mutating func pageReceived(_ page: MessagePage, through: Int64, then: Message?) -> [Step] {
        work = nil
        guard let last = lastSeq else { return [] }
        // The timeline's rule of a fill: an empty page means the server has
        // nothing more up to `through`.
        var gap = GapFill(after: last, through: through)
        var steps: [Step] = []
        for message in gap.take(page) { steps += deliver(message) }
        return steps + (gap.isOpen ? fill(through: through, then: then) : deliver(then))
    }

    private mutating func changesReceived(
        _ changes: ChangeSet, since: Int64, through: Int64, subscribedSeq: Int64, version: Int64
    ) -> [Step] {
        var steps: [Step] = []
        for message in changes.messages where message.seq <= through && message.version > versions.seen {
            steps.append(.emit(.updated(message)))
        }
        versions.saw(changes.version)
        if changes.hasMore, changes.version > since {
            work = .catchingUp(
                since: changes.version, through: through, subscribedSeq: subscribedSeq, subscribedVersion: version)
            return steps + [.fetchChanges(since: changes.version, limit: APILimits.changesLimit.upperBound)]
        }
        work = nil
        return steps + goLive(subscribedSeq: subscribedSeq, version: version)
    }

    /// Handles the frames held during HTTP work, until one starts more work.
    private mutating func resume() -> [Step] {
        var steps: [Step] = []
        while work == nil, subscription.isSubscribing, !held.isEmpty {
            steps += receive(held.removeFirst())
        }
        return steps
    }
}
