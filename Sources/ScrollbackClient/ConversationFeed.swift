import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackTimeline

/// One conversation kept on screen by itself: a `Timeline` fed with the
/// newest page, every live event, and every page, gap fill and catch-up the
/// timeline asks for, plus this user's sends with their local echoes.
///
/// The timeline is the one owner of completeness: its live subscription
/// (a `LiveProtocol` in `.window` mode, on the client's shared socket)
/// hands it every frame and resumes after the newest message it holds,
/// and whatever is missing (a gap, a `resync_required`, the edits made
/// while away) the timeline alone asks for, once (see `LiveWindow`).
///
/// An app binds a screen to `state` (`state.timeline.items`, newest first:
/// the order of an inverted list) and applies each update's diff and scroll
/// offset (`updates`, `observe(onUpdate:onEnd:)`, or the state publisher of
/// ScrollbackClientCombine). It tells the feed what the list does
/// (`apply(_:)`: scrolls, measured heights, resizes) and what the user does
/// (`send(_:clientId:)`, `retry(clientId:)`, `markRead()`, `loadOlder()`).
///
/// Nothing is fetched until `start()`. The fetches the timeline asks for are
/// retried with the client's backoff for as long as the feed runs, so a cut
/// connection or a restarting server delays the window but never leaves it
/// short or stale; a refusal that retrying cannot get past (the conversation
/// is no longer visible, the token is refused) is `state.failure`. `stop()`,
/// or releasing the feed, ends the live stream, the fetches under way and
/// every update stream.
///
/// The timeline changes under one lock, and each change is handed to every
/// subscriber under it, so every subscriber sees the updates in the order
/// they were applied.
public final class ConversationFeed: Sendable {
    /// A state and the update that led to it: the rows removed, inserted
    /// and updated, and the scroll offset that keeps the reader's place.
    public typealias Update = (state: State, update: TimelineUpdate)

    /// Everything a screen shows of the conversation.
    public struct State: Sendable, Equatable {
        /// The loaded window: rows newest first, their layout and the scroll offset.
        public internal(set) var timeline: Timeline
        public internal(set) var connection: Connection = .idle
        /// An older page is being fetched (for a spinner above the oldest row).
        public internal(set) var isLoadingOlder = false
        /// A newer page is being fetched (for a spinner below the newest row
        /// of a window detached from the live edge).
        public internal(set) var isLoadingNewer = false
        /// The first message that was unread when the feed opened at
        /// `.firstUnread` (the "new messages" divider goes above it): from
        /// the storage's read marker at once, then from the server's.
        public internal(set) var firstUnreadSeq: Int64?
        /// This user's read marker as the feed opened: the storage's at
        /// once (when it holds one), then the server's once it answers. It
        /// does not move as the user reads (`readSeqs` does).
        public internal(set) var readSeqAtOpen: Int64?
        /// How far each member has read, as far as this feed has seen: from
        /// the live stream, and this user's from `markRead()` too.
        public internal(set) var readSeqs: [String: Int64] = [:]
        /// The last refusal the feed could not retry past: a fetch that
        /// failed for good, or why the live stream ended.
        public internal(set) var failure: ScrollbackError?
        /// Who of the members is online, and when the others were last
        /// seen, by user id: read each time the stream is live (after every
        /// reconnect), then kept current by the stream's `presence` frames.
        public internal(set) var presence: [String: MemberPresence] = [:]
        /// The last error of the feed's storage, if it has one: the feed then
        /// goes on from memory, and what it could not write is written with
        /// the next change that succeeds.
        public internal(set) var storageFailure: String?
        /// The sends waiting in the outbox or refused, oldest first, by
        /// client id (their echoes are the timeline's pending rows).
        public internal(set) var outbox: [OutboxEntry] = []

        mutating func noteRead(_ user: String, through seq: Int64) {
            readSeqs[user] = max(readSeqs[user] ?? 0, seq)
        }
    }

    /// Where a feed opens the conversation.
    public enum Opening: Sendable, Equatable {
        /// At the newest message (from the storage's window, when it holds one).
        case newest
        /// Around a message (a search hit, a reply's parent, a mention),
        /// its row in the middle of the screen.
        case message(Int64)
        /// At the first message the user has not read, in the middle of the
        /// screen; at the newest when everything is read.
        case firstUnread
    }

    public enum Connection: Sendable, Equatable {
        /// Not started.
        case idle
        /// Loading the newest page and subscribing.
        case connecting
        /// Subscribed and caught up: changes arrive as they happen.
        case live
        /// The live stream was lost; it reconnects by itself and catches up.
        case reconnecting(reason: String)
        /// Stopped, or the live stream ended for good (the user was removed
        /// from the conversation, or `failure` says why).
        case ended
    }

    /// What the list on screen tells the feed.
    public enum ViewAction: Sendable, Equatable {
        /// The reader scrolled: the distance from the bottom of the content.
        case scrolled(offsetFromBottom: Double)
        /// A row was measured on screen.
        case heightMeasured(TimelineItem.ID, Double)
        /// The list's viewport changed size.
        case viewportResized(height: Double)

        var timelineAction: TimelineAction {
            switch self {
            case .scrolled(let offset): .scrolled(offsetFromBottom: offset)
            case .heightMeasured(let id, let height): .heightMeasured(id, height)
            case .viewportResized(let height): .viewportResized(height: height)
            }
        }
    }

    public let conversationId: UUID
    /// The user this feed sends as: the sender of its local echoes.
    public let userId: String
    /// How many messages each page fetch asks for.
    public let pageSize: Int
    let client: ScrollbackClient
    /// Where the window and the outbox are kept between launches; nil keeps them in memory.
    public let storage: (any FeedStorage)?
    /// The most messages of the window kept in the storage (the newest).
    public let storedMessageLimit: Int
    private let core: NIOLockedValueBox<Core>

    /// The feed's mutable state, all under one lock.
    private struct Core: Sendable {
        var state: State
        /// The live subscription, a child of the timeline: the timeline
        /// decides what is missing, the subscription where to resume.
        var live: LiveProtocol
        var isStarted = false
        var isStopped = false
        var nextId = 0
        var subscribers: [Int: AsyncStream<Update>.Continuation] = [:]
        /// Every task the feed runs (the first page, the live stream,
        /// fetches), to cancel when it ends.
        var tasks: [Int: Task<Void, Never>] = [:]
        /// Older pages and catch-ups under way: asked for again, they are
        /// not fetched twice.
        var fetching: [TimelineEffect] = []
        /// Gap fills under way: the seq each has fetched up to, and the seq it goes to.
        var fills: [Int: (reached: Int64, through: Int64)] = [:]
        /// The send of the outbox under way (one at a time, oldest first).
        var inFlight: String?
        /// Entries the server acknowledged that the storage still holds:
        /// changes of messages (edits, deletions, reactions), which leave it
        /// in the write that saves the changed message, and any entry whose
        /// write failed, which leaves it with the next write.
        var acknowledgedChanges: [String] = []
        /// Callers waiting for a send's outcome, by client id.
        var promises: [String: SendPromise] = [:]
        /// What the storage holds: each message's version, the ranges, the
        /// rest of the window's record; nil until it is read or written.
        var saved: SavedWindow?
        /// The storage was told to drop the conversation: nothing more is written.
        var forgotten = false
        /// Numbers the jumps asked for: the answer of one superseded by another is dropped.
        var jumps = 0
        /// Numbers the windows a jump put in place: a page or a fill asked
        /// for by an earlier window is dropped when it answers.
        var windows = 0
        /// The users a `presence` frame told of since the last read of
        /// presence began (newer than that read), and which read is the last.
        var presenceFramed: Set<String> = []
        var presenceReads = 0

        mutating func takeId() -> Int {
            defer { nextId += 1 }
            return nextId
        }
    }

    /// A feed of conversation `id` for the user the client's tokens are
    /// for (`userId`); `pageSize` messages per fetch (clamped to the
    /// server's page limit), `settings` the list's geometry.
    ///
    /// With a `storage`, `start()` shows the window it holds at once, then
    /// goes live from its newest message and catches up from its version,
    /// so exactly what was missed arrives; sends wait in its outbox until
    /// the server has them, across restarts of the app. It keeps the newest
    /// `storedMessageLimit` messages of the window.
    public init(
        client: ScrollbackClient, conversation id: UUID, userId: String, pageSize: Int = 50,
        settings: TimelineLayoutSettings = TimelineLayoutSettings(), storage: (any FeedStorage)? = nil,
        storedMessageLimit: Int = 1_000
    ) {
        self.client = client
        self.storage = storage
        self.storedMessageLimit = max(storedMessageLimit, 1)
        self.conversationId = id
        self.userId = userId
        self.pageSize = min(max(pageSize, APILimits.pageLimit.lowerBound), APILimits.pageLimit.upperBound)
        self.core = NIOLockedValueBox(
            Core(
                state: State(timeline: Timeline(conversationId: id, settings: settings)),
                live: LiveProtocol(
                    conversationId: id, after: nil, retry: client.retry, subscribeTimeout: client.subscribeTimeout,
                    completeness: .window)))
    }

    deinit {
        end(failure: nil)
    }

    /// The state now.
    public var state: State { core.withLockedValue { $0.state } }

    /// The current state (with an empty diff: show its rows as they are),
    /// then every update, in order, until the feed ends. Each access is a
    /// stream of its own.
    public var updates: AsyncStream<Update> {
        let (stream, continuation) = AsyncStream<Update>.makeStream()
        let id = core.withLockedValue { core -> Int? in
            continuation.yield((core.state, Self.quiet(core.state)))
            guard !core.isStopped else { return nil }
            let id = core.takeId()
            core.subscribers[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        // Not under the lock here: a consumer's task being cancelled calls
        // this while it holds that task's own lock, and a publish (which
        // yields under the feed's lock) waits for the task's lock to resume
        // it. Taking the feed's lock here deadlocked both; the subscriber
        // leaves a moment later instead (what is yielded to it meanwhile is
        // dropped: its stream has ended).
        continuation.onTermination = { [weak self] _ in
            Task { [weak self] in self?.core.withLockedValue { _ = $0.subscribers.removeValue(forKey: id) } }
        }
        return stream
    }

    // MARK: Running

    /// Loads the newest page, then subscribes live from it; with a storage
    /// that holds a window of the conversation, shows that window at once
    /// and subscribes live from its newest message instead. Sends left in
    /// the storage's outbox show as echoes and are sent again. Once only; a
    /// stopped feed does not start again.
    public func start(at opening: Opening = .newest) {
        let (client, id, limit) = (self.client, conversationId, pageSize)
        core.withLockedValue { core in
            guard !core.isStarted, !core.isStopped else { return }
            core.isStarted = true
            core.state.connection = .connecting
            let stored = restore(in: &core)
            if let readSeq = stored?.readSeqs[userId] { core.state.readSeqAtOpen = readSeq }
            publishQuiet(in: &core)
            if let stored, let shown = Self.storedOpening(stored, opening, userId: userId) {
                // What the storage holds shows at once; the live stream and
                // the catch-up from its version correct it, and the server's
                // read marker the first unread.
                core.state.readSeqs.merge(stored.readSeqs, uniquingKeysWith: max)
                core.state.firstUnreadSeq = shown.firstUnread
                if let focus = shown.focus {
                    apply(.jumped(stored.page, focus: focus), in: &core)
                } else {
                    apply(.pageLoaded(stored.page), in: &core)
                }
                subscribe(in: &core)
                readOpeningMarker(opening, in: &core)
            } else {
                core.jumps += 1
                spawn(in: &core) { [weak self] in
                    let first = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                        try await Self.firstPage(client, id, opening, limit: limit)
                    }
                    self?.opened(first)
                }
                // The first page at the first unread reads the marker itself.
                if opening != .firstUnread { readOpeningMarker(opening, in: &core) }
            }
            pumpOutbox(in: &core)
        }
    }

    /// The page a feed opens with, the row to put in the middle of the
    /// screen, the first unread message when it opens there, and the read
    /// marker that says so.
    typealias FirstPage = (page: MessagePage, focus: Int64?, firstUnread: Int64?, readSeq: Int64?)

    static func firstPage(_ client: ScrollbackClient, _ id: UUID, _ opening: Opening, limit: Int)
        async throws(ScrollbackError) -> FirstPage
    {
        switch opening {
        case .newest:
            return (try await client.page(of: id, .newest, limit: limit), nil, nil, nil)
        case .message(let seq):
            return (try await client.page(of: id, .around(seq), limit: limit), seq, nil, nil)
        case .firstUnread:
            let conversation = try await client.conversation(id)
            guard let first = firstUnread(readSeq: conversation.readSeq, lastSeq: conversation.lastSeq) else {
                return (try await client.page(of: id, .newest, limit: limit), nil, nil, conversation.readSeq)
            }
            return (try await client.page(of: id, .around(first), limit: limit), first, first, conversation.readSeq)
        }
    }

    /// The first message after a read marker; nil when everything is read.
    static func firstUnread(readSeq: Int64, lastSeq: Int64) -> Int64? {
        readSeq < lastSeq ? readSeq + 1 : nil
    }

    /// How a window held by the storage opens at `opening`: the row to put
    /// in the middle of the screen and the first unread message; nil when
    /// the window cannot show it (a message it does not hold), for the
    /// server to answer.
    static func storedOpening(_ window: StoredWindow, _ opening: Opening, userId: String)
        -> (focus: Int64?, firstUnread: Int64?)?
    {
        switch opening {
        case .newest:
            return (nil, nil)
        case .message(let seq):
            guard window.messages.contains(where: { $0.seq == seq }) else { return nil }
            return (seq, nil)
        case .firstUnread:
            // No marker held: the newest, until the server's marker answers.
            guard let readSeq = window.readSeqs[userId],
                let first = firstUnread(readSeq: readSeq, lastSeq: window.lastSeq)
            else { return (nil, nil) }
            // The oldest row held from the first unread on (the window may
            // begin after it: its top row then).
            return (window.messages.map(\.seq).filter { $0 >= first }.min(), first)
        }
    }

    /// Reads this user's read marker from the server as the feed opens:
    /// the marker the screen opened with (`readSeqAtOpen`), and, at the
    /// first unread, where that is (the window moves there when it does
    /// not hold it).
    private func readOpeningMarker(_ opening: Opening, in core: inout Core) {
        let (client, id) = (self.client, conversationId)
        spawn(in: &core) { [weak self] in
            let answer = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                try await client.conversation(id)
            }
            // A refusal ends the live stream, which says why.
            guard case .success(let conversation)? = answer else { return }
            self?.openingMarkerRead(conversation, opening)
        }
    }

    private func openingMarkerRead(_ conversation: Conversation, _ opening: Opening) {
        core.withLockedValue { core in
            guard !core.isStopped else { return }
            core.state.readSeqAtOpen = conversation.readSeq
            core.state.noteRead(userId, through: conversation.readSeq)
            if opening == .firstUnread {
                let first = Self.firstUnread(readSeq: conversation.readSeq, lastSeq: conversation.lastSeq)
                core.state.firstUnreadSeq = first
                let timeline = core.state.timeline
                if let first, timeline.hasOlder, let oldest = timeline.seqRange?.lowerBound, first < oldest {
                    jump(.message(first), in: &core)
                }
            }
            persist(in: &core)
            publishQuiet(in: &core)
        }
    }

    /// Moves the window to message `seq` (a search hit, a reply's parent):
    /// the page around it replaces what is shown, its row in the middle of
    /// the screen; newer pages load as the reader scrolls down, until the
    /// window reaches the newest message and follows the live edge again.
    public func jump(to seq: Int64) {
        jump(.message(seq))
    }

    /// Moves the window back to the newest message, the reader at the bottom.
    public func jumpToLatest() {
        jump(.newest)
    }

    private func jump(_ opening: Opening) {
        core.withLockedValue { jump(opening, in: &$0) }
    }

    private func jump(_ opening: Opening, in core: inout Core) {
        guard core.isStarted, !core.isStopped else { return }
        core.jumps += 1
        let (client, id, limit, jump) = (self.client, conversationId, pageSize, core.jumps)
        spawn(in: &core) { [weak self] in
            let first = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                try await Self.firstPage(client, id, opening, limit: limit)
            }
            self?.core.withLockedValue { core in
                guard !core.isStopped, jump == core.jumps, case .success(let first)? = first else { return }
                core.windows += 1
                core.fills = [:]
                core.fetching.removeAll { if case .catchUp = $0 { false } else { true } }
                self?.apply(.jumped(first.page, focus: first.focus), in: &core)
            }
        }
    }

    /// Ends the live stream, the fetches under way and the update streams.
    /// Sends under way still finish; their results no longer change the state.
    public func stop() {
        end(failure: nil)
    }

    private func opened(_ first: Result<FirstPage, ScrollbackError>?) {
        switch first {
        case nil:
            return
        case .failure(let error):
            end(failure: error)
        case .success(let first):
            core.withLockedValue { core in
                guard !core.isStopped else { return }
                core.state.firstUnreadSeq = first.firstUnread
                if let readSeq = first.readSeq {
                    core.state.readSeqAtOpen = readSeq
                    core.state.noteRead(userId, through: readSeq)
                }
                if first.focus == nil {
                    apply(.pageLoaded(first.page), in: &core)
                } else {
                    apply(.jumped(first.page, focus: first.focus), in: &core)
                }
                subscribe(in: &core)
            }
        }
    }

    /// Every message after the window arrives live, and what the socket
    /// cannot bring the timeline fetches, across reconnects.
    private func subscribe(in core: inout Core) {
        let (client, id) = (self.client, conversationId)
        spawn(in: &core) { [weak self] in
            do {
                try await client.subscribe(
                    to: id, handle: { [weak self] input in self?.live(input) ?? [.finish(nil)] },
                    emit: { [weak self] event in self?.receive(event) })
                self?.end(failure: nil)
            } catch {
                self?.end(failure: error as? ScrollbackError ?? .transport(message: "\(error)"))
            }
        }
    }

    /// Hands an input of the socket to the timeline and its subscription;
    /// the subscription's steps, for the runner.
    private func live(_ input: LiveProtocol.Input) -> [LiveProtocol.Step] {
        core.withLockedValue { core in
            guard !core.isStopped else { return [.finish(nil)] }
            let (actions, steps) = LiveWindow.handle(input, timeline: core.state.timeline, live: &core.live)
            for action in actions { apply(action, in: &core) }
            return steps
        }
    }

    /// The subscription's events that are not the timeline's: how the
    /// connection stands, and how far members have read.
    private func receive(_ event: LiveEvent) {
        core.withLockedValue { core in
            guard !core.isStopped else { return }
            switch event {
            case .connected:
                core.state.connection = .live
                publishQuiet(in: &core)
                readPresence(in: &core)
            case .disconnected(let reason):
                core.state.connection = .reconnecting(reason: reason)
                publishQuiet(in: &core)
            case .read(let user, let seq):
                core.state.noteRead(user, through: seq)
                persist(in: &core)
                publishQuiet(in: &core)
            case .presence(let presence):
                core.presenceFramed.insert(presence.userId)
                core.state.presence[presence.userId] = presence
                publishQuiet(in: &core)
            case .memberRemoved:
                // Nothing held of it can be shown or sent any more.
                write(in: &core) { try $0.forget(self.conversationId) }
                core.forgotten = true
            case .message, .updated, .typing, .memberUpdated:
                break  // the timeline's, or nothing to show
            }
        }
    }

    private func end(failure: ScrollbackError?) {
        let (tasks, subscribers, promises) = core.withLockedValue {
            core -> ([Task<Void, Never>], [AsyncStream<Update>.Continuation], [SendPromise]) in
            guard !core.isStopped else { return ([], [], []) }
            core.isStopped = true
            core.state.connection = .ended
            if let failure { core.state.failure = failure }
            if case .notFound = failure {
                // The conversation is gone, or the user is not a member.
                write(in: &core) { try $0.forget(self.conversationId) }
                core.forgotten = true
            }
            core.fetching = []
            core.fills = [:]
            publishQuiet(in: &core)
            defer {
                core.tasks = [:]
                core.subscribers = [:]
                core.promises = [:]
            }
            return (Array(core.tasks.values), Array(core.subscribers.values), Array(core.promises.values))
        }
        for task in tasks { task.cancel() }
        // Sends not answered stay in the storage's outbox, for the next feed.
        for promise in promises { promise.settle(.failure(.cancelled)) }
        // Outside the lock: finishing runs each stream's termination handler,
        // which takes the lock.
        for subscriber in subscribers { subscriber.finish() }
    }

    /// Runs `work` as one of the feed's tasks. Its closure holds the feed
    /// weakly, so a feed the app lets go of ends (and cancels it).
    /// Reads the members' presence, the stream being live: its frames keep
    /// it current from then on, and one that arrives while the read is under
    /// way is newer than what the read answers.
    private func readPresence(in core: inout Core) {
        core.presenceFramed = []
        core.presenceReads += 1
        let (client, id, read) = (self.client, conversationId, core.presenceReads)
        spawn(in: &core) { [weak self] in
            let members = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                try await client.presence(of: id)
            }
            self?.presenceRead(members, read: read)
        }
    }

    /// A read of presence answered: a refusal leaves presence as the
    /// frames tell it (the stream reports why it ends, if it does).
    private func presenceRead(_ members: Result<[MemberPresence], ScrollbackError>?, read: Int) {
        guard case .success(let members)? = members else { return }
        core.withLockedValue { core in
            guard !core.isStopped, read == core.presenceReads else { return }
            var presence = core.state.presence.filter { core.presenceFramed.contains($0.key) }
            for member in members where !core.presenceFramed.contains(member.userId) {
                presence[member.userId] = member
            }
            core.state.presence = presence
            publishQuiet(in: &core)
        }
    }

    private func spawn(in core: inout Core, _ work: @escaping @Sendable () async -> Void) {
        let id = core.takeId()
        core.tasks[id] = Task { [weak self] in
            await work()
            self?.core.withLockedValue { _ = $0.tasks.removeValue(forKey: id) }
        }
    }

    // MARK: The timeline and its effects

    @discardableResult
    private func apply(_ action: TimelineAction, in core: inout Core) -> TimelineUpdate {
        guard !core.isStopped else { return Self.quiet(core.state) }
        let update = core.state.timeline.apply(action)
        for effect in update.effects { run(effect, in: &core) }
        switch action {
        case .scrolled, .heightMeasured, .viewportResized:
            break  // what the list does changes nothing the storage holds
        default:
            persist(in: &core)
        }
        publish(update, in: &core)
        return update
    }

    private func run(_ effect: TimelineEffect, in core: inout Core) {
        let (client, id, limit) = (self.client, conversationId, pageSize)
        switch effect {
        case .loadOlder(let before):
            fetch(effect, in: &core) { () async throws(ScrollbackError) in
                .pageLoaded(try await client.page(of: id, .before(before), limit: limit))
            }
        case .loadNewer(let after):
            fetch(effect, in: &core) { () async throws(ScrollbackError) in
                .pageLoaded(try await client.page(of: id, .after(after), limit: limit))
            }
        case .catchUp(let version):
            // A change set with `has_more` makes the timeline ask for the next.
            fetch(effect, in: &core) { () async throws(ScrollbackError) in
                .changesApplied(try await client.changes(in: id, since: version))
            }
        case .fillGap(let after, let through):
            fill(after: after, through: through, in: &core)
        }
    }

    /// Fetches what `effect` asks for, unless it is already under way, and
    /// applies the answer.
    private func fetch(
        _ effect: TimelineEffect, in core: inout Core,
        _ read: @escaping @Sendable () async throws(ScrollbackError) -> TimelineAction
    ) {
        guard !core.fetching.contains(effect) else { return }
        core.fetching.append(effect)
        let (client, window) = (self.client, core.windows)
        spawn(in: &core) { [weak self] in
            let answer = await Self.untilAnswered(client, read)
            self?.fetched(effect, answer, window: window)
        }
    }

    private func fetched(_ effect: TimelineEffect, _ answer: Result<TimelineAction, ScrollbackError>?, window: Int) {
        core.withLockedValue { core in
            guard !core.isStopped, let answer else { return }
            core.fetching.removeAll { $0 == effect }
            switch answer {
            case .success(.pageLoaded) where window != core.windows:
                // A page of the window before a jump: not this window's.
                publishQuiet(in: &core)
            case .success(let action):
                apply(action, in: &core)
            case .failure(let error):
                core.state.failure = error
                publishQuiet(in: &core)
            }
        }
    }

    /// Fetches the messages after `after` through `through`, page after
    /// page, each applied as it arrives, until none of them is missing (the
    /// live stream may bring them first). The timeline asks again for what
    /// is still missing after each page; a fill already under way that
    /// covers it is not started twice.
    private func fill(after: Int64, through: Int64, in core: inout Core) {
        guard !core.fills.values.contains(where: { $0.reached <= after && $0.through >= through }) else { return }
        let fill = core.takeId()
        core.fills[fill] = (after, through)
        let (client, id, limit, window) = (self.client, conversationId, pageSize, core.windows)
        spawn(in: &core) { [weak self] in
            var next: Int64? = after
            while let from = next, from < through {
                let answer = await Self.untilAnswered(client) { () async throws(ScrollbackError) in
                    try await client.page(of: id, .after(from), limit: limit)
                }
                next = self?.filled(fill, after: from, through: through, answer, window: window)
            }
            self?.core.withLockedValue { _ = $0.fills.removeValue(forKey: fill) }
        }
    }

    /// Applies one page of a gap fill; the seq to fetch after next, or nil
    /// when the fill is over.
    private func filled(
        _ fill: Int, after from: Int64, through: Int64, _ answer: Result<MessagePage, ScrollbackError>?, window: Int
    ) -> Int64? {
        core.withLockedValue { core in
            // A fill of the window before a jump ends: not this window's.
            guard !core.isStopped, window == core.windows, let answer else { return nil }
            switch answer {
            case .failure(let error):
                core.state.failure = error
                publishQuiet(in: &core)
                return nil
            case .success(let page):
                let newest = page.messages.map(\.seq).max().flatMap { $0 > from ? $0 : nil }
                // Before applying: the timeline's request for the rest is covered by this fill.
                if let newest { core.fills[fill]?.reached = newest }
                apply(.pageLoaded(page), in: &core)
                guard let newest, Self.isMissing(after: newest, through: through, in: core.state.timeline) else { return nil }
                return newest
            }
        }
    }

    /// Whether a message after `seq`, up to `through`, is not in the window.
    private static func isMissing(after seq: Int64, through: Int64, in timeline: Timeline) -> Bool {
        guard let window = timeline.seqRange, window.upperBound >= through else { return true }
        return timeline.gaps.contains { $0.upperBound > seq && $0.lowerBound <= through }
    }

    /// A read retried until it is answered: by the client's retry policy,
    /// then again after its longest wait, for as long as the task runs (a
    /// server restarting, a connection cut). Nil once cancelled; a refusal
    /// is returned as the failure.
    static func untilAnswered<Value: Sendable>(
        _ client: ScrollbackClient, _ read: @Sendable () async throws(ScrollbackError) -> Value
    ) async -> Result<Value, ScrollbackError>? {
        while !Task.isCancelled {
            do throws(ScrollbackError) {
                return .success(try await client.retrying(read))
            } catch {
                guard error.isRetryable else { return .failure(error) }
                try? await client.waitToRetry(client.retry.delay(afterFailure: client.retry.maxAttempts))
            }
        }
        return nil
    }

    private func publish(_ update: TimelineUpdate, in core: inout Core) {
        core.state.isLoadingOlder = core.fetching.contains { if case .loadOlder = $0 { true } else { false } }
        core.state.isLoadingNewer = core.fetching.contains { if case .loadNewer = $0 { true } else { false } }
        for subscriber in core.subscribers.values { subscriber.yield((core.state, update)) }
    }

    /// Publishes a state whose rows did not change.
    private func publishQuiet(in core: inout Core) {
        publish(Self.quiet(core.state), in: &core)
    }

    private static func quiet(_ state: State) -> TimelineUpdate {
        TimelineUpdate(scrollOffset: state.timeline.scrollOffset)
    }

    // MARK: What the list and the user do

    /// Tells the timeline what the list did; the update says how the rows
    /// changed and where to scroll. Older history is fetched when the reader
    /// nears the top.
    @discardableResult
    public func apply(_ action: ViewAction) -> TimelineUpdate {
        core.withLockedValue { apply(action.timelineAction, in: &$0) }
    }

    /// Fetches the page newer than the newest loaded message now, in a
    /// window detached from the live edge, as a scroll near the bottom
    /// would; nothing when the window follows the live edge.
    public func loadNewer() {
        core.withLockedValue { core in
            guard core.isStarted, !core.isStopped, !core.state.timeline.isAttached,
                let newest = core.state.timeline.seqRange?.upperBound
            else { return }
            run(.loadNewer(after: newest), in: &core)
            publishQuiet(in: &core)
        }
    }

    /// Fetches the page older than the oldest loaded message now, as a
    /// scroll near the top would; nothing when there is none or it is
    /// already under way.
    public func loadOlder() {
        core.withLockedValue { core in
            guard core.isStarted, !core.isStopped, core.state.timeline.hasOlder,
                let oldest = core.state.timeline.seqRange?.lowerBound
            else { return }
            run(.loadOlder(before: oldest), in: &core)
            publishQuiet(in: &core)
        }
    }

    /// Sends a message. Its echo shows at once (`sending`) and the send
    /// joins the feed's outbox (its storage's, when it has one), which sends
    /// one message at a time, oldest first, each with its `clientId` (made
    /// when nil), so messages are stored once and in the order they were
    /// written. A send the server did not answer, or answered "later"
    /// (offline, a cut connection, 503 `outcome_unknown`, 429) waits and is
    /// sent again, however long that takes: its echo never shows failed for
    /// it. Only a refusal (not a member any more, a body refused) marks the
    /// echo `failed`, for `retry(clientId:)` or `discard(clientId:)`.
    /// `attachments` are complete uploads (`ScrollbackClient.upload`): the
    /// echo has their boxes, so it is as tall as the message that replaces
    /// it, and `body` may then be empty.
    ///
    /// Returns once the server has stored the message; throws the refusal,
    /// or `cancelled` when the feed stops first (the send then stays in the
    /// storage's outbox, and a feed started on that storage sends it).
    @discardableResult
    public func send(_ body: String, attachments: [Attachment] = [], clientId: String? = nil)
        async throws(ScrollbackError) -> ScrollbackClient.SendResult
    {
        try await begin(body, attachments: attachments, clientId: clientId).outcome()
    }

    /// Sends again a send the server refused (its echo shows `sending`
    /// again), with its client id, at its place in the outbox: if it had
    /// been stored after all, this answers with that message (`replayed`).
    @discardableResult
    public func retry(clientId: String) async throws(ScrollbackError) -> ScrollbackClient.SendResult {
        try await beginRetry(clientId).outcome()
    }

    /// Gives up a send the server refused: its echo and its outbox entry go.
    /// A send still waiting to be sent cannot be discarded (it may be
    /// stored already).
    public func discard(clientId: String) throws(ScrollbackError) {
        let found = core.withLockedValue { core -> Bool in
            guard let index = core.state.outbox.firstIndex(where: { $0.clientId == clientId }),
                core.state.outbox[index].failure != nil
            else { return false }
            core.state.outbox.remove(at: index)
            write(in: &core) { try $0.removeOutboxEntry(clientId: clientId, in: self.conversationId) }
            apply(.sendDiscarded(clientId: clientId), in: &core)
            return true
        }
        guard found else {
            throw .notFound(code: .notFound, message: "This feed has no refused send with client id \(clientId).")
        }
    }

    /// Moves this user's read marker to the newest loaded message; nil when
    /// nothing is loaded.
    @discardableResult
    public func markRead() async throws(ScrollbackError) -> ReadMarker? {
        guard let newest = state.timeline.seqRange?.upperBound else { return nil }
        let (client, id) = (self.client, conversationId)
        let marker = try await client.retrying { () async throws(ScrollbackError) in try await client.markRead(newest, in: id) }
        core.withLockedValue { core in
            guard !core.isStopped else { return }
            core.state.noteRead(userId, through: marker.readSeq)
            persist(in: &core)
            publishQuiet(in: &core)
        }
        return marker
    }

    /// Edits this user's message `seq`, through the outbox: after the sends
    /// written before it, kept across restarts, sent again until the server
    /// answers. Returns the message as edited; throws a refusal (not the
    /// sender, a deleted message) or `cancelled` when the feed stops first.
    @discardableResult
    public func edit(_ seq: Int64, body: String) async throws(ScrollbackError) -> Message {
        try await queue(.edit(seq: seq, body: body)).outcome().message
    }

    /// Deletes message `seq`, through the outbox (see `edit`). A deletion
    /// sent again (its answer was lost) finds the message deleted: done.
    @discardableResult
    public func delete(_ seq: Int64) async throws(ScrollbackError) -> Message {
        try await queue(.delete(seq: seq)).outcome().message
    }

    /// Adds this user's `emoji` reaction to message `seq`, through the outbox.
    @discardableResult
    public func react(_ emoji: String, to seq: Int64) async throws(ScrollbackError) -> Message {
        try await queue(.react(seq: seq, emoji: emoji)).outcome().message
    }

    /// Removes this user's `emoji` reaction from message `seq`, through the outbox.
    @discardableResult
    public func unreact(_ emoji: String, from seq: Int64) async throws(ScrollbackError) -> Message {
        try await queue(.unreact(seq: seq, emoji: emoji)).outcome().message
    }

    /// Adds a change of a stored message to the outbox.
    func queue(_ change: MessageChange) -> SendPromise {
        core.withLockedValue { core in
            let entry = OutboxEntry(
                conversationId: conversationId, clientId: UUID().uuidString.lowercased(), sender: userId, body: "",
                change: change)
            let promise = promise(for: entry.clientId, in: &core)
            guard !core.isStopped else {
                promise.settle(.failure(.cancelled))
                return promise
            }
            write(in: &core) { try $0.put(entry) }
            core.state.outbox.append(entry)
            pumpOutbox(in: &core)
            publishQuiet(in: &core)
            return promise
        }
    }

    /// Adds a send to the outbox (written to the storage before anything
    /// is sent) and shows its echo.
    func begin(_ body: String, attachments: [Attachment], clientId: String?) -> SendPromise {
        let send = PendingSend(
            clientId: clientId ?? UUID().uuidString.lowercased(), body: body, sender: userId, attachments: attachments)
        return core.withLockedValue { core in
            let promise = promise(for: send.clientId, in: &core)
            guard !core.isStopped else {
                promise.settle(.failure(.cancelled))
                return promise
            }
            guard !core.state.outbox.contains(where: { $0.clientId == send.clientId }) else { return promise }
            let entry = OutboxEntry(send, in: conversationId)
            write(in: &core) { try $0.put(entry) }
            core.state.outbox.append(entry)
            // A message goes at the bottom of the conversation: a window
            // away from the newest goes back there.
            if !core.state.timeline.isAttached { jump(.newest, in: &core) }
            apply(.sendStarted(send), in: &core)
            pumpOutbox(in: &core)
            return promise
        }
    }

    /// Puts a refused send back in the outbox.
    func beginRetry(_ clientId: String) throws(ScrollbackError) -> SendPromise {
        let found = core.withLockedValue { core -> SendPromise? in
            guard let index = core.state.outbox.firstIndex(where: { $0.clientId == clientId }) else { return nil }
            let promise = promise(for: clientId, in: &core)
            if core.state.outbox[index].failure != nil {
                core.state.outbox[index].failure = nil
                let entry = core.state.outbox[index]
                write(in: &core) { try $0.put(entry) }
                apply(.sendRetried(clientId: clientId), in: &core)
                pumpOutbox(in: &core)
            }
            return promise
        }
        guard let found else {
            throw .notFound(code: .notFound, message: "This feed has no unacknowledged send with client id \(clientId).")
        }
        return found
    }

    private func promise(for clientId: String, in core: inout Core) -> SendPromise {
        if let promise = core.promises[clientId] { return promise }
        let promise = SendPromise()
        core.promises[clientId] = promise
        return promise
    }

    /// Sends the oldest send of the outbox that waits, unless one is under
    /// way: one at a time, so the server stores them in order (and, through
    /// the outbox's lane, never while another sender of the process, such as
    /// `ScrollbackClient.sendWaiting(from:)`, sends from the same outbox).
    private func pumpOutbox(in core: inout Core) {
        guard !core.isStopped, core.inFlight == nil, let entry = OutboxDelivery.next(in: core.state.outbox)
        else { return }
        core.inFlight = entry.clientId
        let client = self.client
        spawn(in: &core) { [weak self] in
            await OutboxDelivery.holding(entry.conversationId, sender: entry.sender) {
                let answer = await OutboxDelivery.send(entry, client)
                self?.sent(entry, answer)
            }
        }
    }

    /// A send of the outbox answered: stored, or refused.
    private func sent(_ entry: OutboxEntry, _ answer: Result<ScrollbackClient.SendResult, ScrollbackError>?) {
        let clientId = entry.clientId
        let promise = core.withLockedValue { core -> SendPromise? in
            guard core.inFlight == clientId else { return nil }
            core.inFlight = nil
            guard let answer, !core.isStopped else { return nil }
            switch answer {
            case .success(let sent) where entry.change == nil:
                // Saving the message takes the entry out of the outbox, in one write.
                apply(.sendAcknowledged(clientId: clientId, message: sent.message), in: &core)
                // A window away from the newest does not take the message (the
                // pages that reach it bring it): the entry leaves the outbox all
                // the same, or it would be sent again and again.
                if core.state.outbox.contains(where: { $0.clientId == clientId }) {
                    core.state.outbox.removeAll { $0.clientId == clientId }
                    write(in: &core) { try $0.removeOutboxEntry(clientId: clientId, in: self.conversationId) }
                    publishQuiet(in: &core)
                }
            case .success(let changed):
                core.state.outbox.removeAll { $0.clientId == clientId }
                // The message as changed, when the window holds it (its live
                // frame brings it too); the window's version is not moved.
                // The entry leaves the outbox in the write that saves it.
                if core.state.timeline.seqRange?.contains(changed.message.seq) == true {
                    core.acknowledgedChanges.append(clientId)
                    apply(.sendAcknowledged(clientId: clientId, message: changed.message), in: &core)
                    // Nothing of the window changed to write (or no window is kept): the entry alone.
                    if core.acknowledgedChanges.contains(clientId) { removeAcknowledgedChanges(in: &core) }
                } else {
                    write(in: &core) { try $0.removeOutboxEntry(clientId: clientId, in: self.conversationId) }
                    publishQuiet(in: &core)
                }
            case .failure(let error):
                if let index = core.state.outbox.firstIndex(where: { $0.clientId == clientId }) {
                    core.state.outbox[index] = OutboxDelivery.refused(core.state.outbox[index], error)
                    let entry = core.state.outbox[index]
                    write(in: &core) { try $0.put(entry) }
                }
                apply(.sendFailed(clientId: clientId, reason: error.localizedDescription), in: &core)
            }
            pumpOutbox(in: &core)
            return core.promises.removeValue(forKey: clientId)
        }
        if let promise, let answer { promise.settle(answer) }
    }

    // MARK: The storage

    /// What the storage holds of the window, as the feed last read or wrote it.
    struct SavedWindow: Sendable {
        var versions: [Int64: Int64] = [:]
        /// Each reply's preview of its parent as written: an edit or a
        /// deletion of the parent changes it, not the reply's version.
        var previews: [Int64: ReplyPreview] = [:]
        var segments: [ClosedRange<Int64>] = []
        var version: Int64 = -1
        var lastSeq: Int64 = -1
        var hasOlder = false
        var readSeqs: [String: Int64] = [:]
    }

    /// Reads the storage's window and outbox into the feed: the window to
    /// show at once (nil when none is held), the outbox's sends as echoes.
    private func restore(in core: inout Core) -> StoredWindow? {
        guard let storage else { return nil }
        var window: StoredWindow?
        var entries: [OutboxEntry] = []
        do {
            window = try storage.openWindow(of: conversationId)
            entries = try storage.outbox(of: conversationId)
        } catch {
            core.state.storageFailure = "\(error)"
        }
        if let window {
            var saved = SavedWindow()
            for message in window.messages {
                saved.versions[message.seq] = message.version
                saved.previews[message.seq] = message.replyTo
            }
            saved.segments = WindowChanges.segments(of: saved.versions.keys)
            (saved.version, saved.lastSeq, saved.hasOlder, saved.readSeqs) =
                (window.version, window.lastSeq, window.hasOlder, window.readSeqs)
            core.saved = saved
        }
        // A send whose message the window holds was stored: the write that
        // saved the message was cut short before it removed the entry.
        let stored = Set((window?.messages ?? []).filter { $0.sender == userId }.compactMap(\.clientId))
        let storedEntries = entries.map(\.clientId).filter(stored.contains)
        if !storedEntries.isEmpty {
            write(in: &core) { try $0.removeOutboxEntries(clientIds: storedEntries, in: self.conversationId) }
        }
        for entry in entries {
            if stored.contains(entry.clientId) { continue }
            guard !core.state.outbox.contains(where: { $0.clientId == entry.clientId }) else { continue }
            core.state.outbox.append(entry)
            // A change of a stored message has no row of its own.
            guard entry.change == nil else { continue }
            apply(.sendStarted(entry.send), in: &core)
            if let reason = entry.failure { apply(.sendFailed(clientId: entry.clientId, reason: reason), in: &core) }
        }
        return window
    }

    /// Writes what changed in the window since the storage last had it, in
    /// one transaction with the outbox entries whose messages arrived: the
    /// newest `storedMessageLimit` messages, the ranges they make, the
    /// version they are current as of, the read markers.
    private func persist(in core: inout Core) {
        let timeline = core.state.timeline
        guard timeline.isLoaded, !core.forgotten else { return }
        let kept = timeline.messages.prefix(storedMessageLimit)
        // The outbox's sends whose messages are stored now, live or acknowledged.
        let sentHere = Set(kept.filter { $0.sender == userId }.compactMap(\.clientId))
        var acknowledged = core.state.outbox.filter { sentHere.contains($0.clientId) }.map(\.clientId)
        if !acknowledged.isEmpty { core.state.outbox.removeAll { sentHere.contains($0.clientId) } }
        guard storage != nil else {
            core.acknowledgedChanges = []
            return
        }
        guard timeline.isAttached else {
            // The storage keeps the newest window: a jump away leaves it as
            // it was, but what the server has stored leaves the outbox, in one write.
            let entries = acknowledged + core.acknowledgedChanges
            guard !entries.isEmpty else { return }
            // A write that fails is tried again with the next one.
            let written = write(in: &core) { try $0.removeOutboxEntries(clientIds: entries, in: self.conversationId) }
            core.acknowledgedChanges = written ? [] : entries
            return
        }
        acknowledged += core.acknowledgedChanges
        let saved = core.saved ?? SavedWindow()
        let changed = kept.filter { saved.versions[$0.seq] != $0.version || saved.previews[$0.seq] != $0.replyTo }
        let segments = WindowChanges.segments(of: kept.map(\.seq))
        let hasOlder = timeline.hasOlder || kept.count < timeline.messages.count
        let readSeqs = core.state.readSeqs
        guard
            !changed.isEmpty || !acknowledged.isEmpty || segments != saved.segments || timeline.version != saved.version
                || timeline.lastSeq != saved.lastSeq || hasOlder != saved.hasOlder || readSeqs != saved.readSeqs
        else { return }
        let changes = WindowChanges(
            conversationId: conversationId, messages: Array(changed), segments: segments, version: timeline.version,
            lastSeq: timeline.lastSeq, hasOlder: hasOlder, readSeqs: readSeqs == saved.readSeqs ? nil : readSeqs,
            acknowledged: acknowledged)
        let written = write(in: &core) { try $0.save(changes) }
        guard written else {
            // Out of the outbox in memory already: their entries leave the
            // storage with the next write that succeeds.
            core.acknowledgedChanges = acknowledged
            return
        }
        core.acknowledgedChanges = []
        var next = SavedWindow(
            segments: segments, version: timeline.version, lastSeq: timeline.lastSeq, hasOlder: hasOlder,
            readSeqs: readSeqs)
        for message in kept {
            next.versions[message.seq] = message.version
            next.previews[message.seq] = message.replyTo
        }
        core.saved = next
    }

    /// The acknowledged changes' entries, out of the outbox in one write.
    private func removeAcknowledgedChanges(in core: inout Core) {
        let entries = core.acknowledgedChanges
        guard !entries.isEmpty else { return }
        if write(in: &core, { try $0.removeOutboxEntries(clientIds: entries, in: self.conversationId) }) {
            core.acknowledgedChanges = []
        }
    }

    /// One call of the storage; false, with `storageFailure` set, when it threw.
    @discardableResult
    private func write(in core: inout Core, _ call: (any FeedStorage) throws -> Void) -> Bool {
        guard let storage else { return true }
        do {
            try call(storage)
            if core.state.storageFailure != nil { core.state.storageFailure = nil }
            return true
        } catch {
            core.state.storageFailure = "\(error)"
            return false
        }
    }
}

/// The outcome of one send of the outbox, for the callers waiting for it.
final class SendPromise: Sendable {
    private let state = NIOLockedValueBox<(Result<ScrollbackClient.SendResult, ScrollbackError>?, [CheckedContinuation<Result<ScrollbackClient.SendResult, ScrollbackError>, Never>])>((nil, []))

    func settle(_ result: Result<ScrollbackClient.SendResult, ScrollbackError>) {
        let waiting = state.withLockedValue { state -> [CheckedContinuation<Result<ScrollbackClient.SendResult, ScrollbackError>, Never>] in
            guard state.0 == nil else { return [] }
            state.0 = result
            defer { state.1 = [] }
            return state.1
        }
        for continuation in waiting { continuation.resume(returning: result) }
    }

    func outcome() async throws(ScrollbackError) -> ScrollbackClient.SendResult {
        let result = await withCheckedContinuation { continuation in
            let settled = state.withLockedValue { state in
                if state.0 == nil { state.1.append(continuation) }
                return state.0
            }
            if let settled { continuation.resume(returning: settled) }
        }
        return try result.get()
    }
}
