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
/// Its behaviour is a value: a `FeedState` changed only by `FeedReducer`,
/// whose effects (every request, socket message, timer and storage write)
/// are values that an `EffectRunner` performs, handing their answers back
/// as events. The state changes under the runner's one lock, and each
/// change is handed to every subscriber under it, so every subscriber sees
/// the updates in the order they were applied.
public final class ConversationFeed: Sendable {
    /// A state and the update that led to it: the rows removed, inserted
    /// and updated, and the scroll offset that keeps the reader's place.
    public typealias Update = (state: State, update: TimelineUpdate)

    public let conversationId: UUID
    /// The user this feed sends as: the sender of its local echoes.
    public let userId: String
    /// How many messages each page fetch asks for.
    public let pageSize: Int
    let client: ScrollbackClient
    /// The profiles of the client's users, which name the senders of the
    /// rows (the client's `profiles`).
    public var profiles: ProfileCache { client.profiles }
    /// Where the window and the outbox are kept between launches; nil keeps them in memory.
    public let storage: (any FeedStorage)?
    /// The most messages of the window kept in the storage (the newest).
    public let storedMessageLimit: Int
    private let runner: FeedEffects.Runner

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
        let state = FeedState(
            conversationId: id, userId: userId, storedMessageLimit: self.storedMessageLimit,
            hasStorage: storage != nil, settings: settings, retry: client.retry, subscribeTimeout: client.subscribeTimeout)
        let effects = FeedEffects(client: client, storage: storage, conversationId: id, pageSize: self.pageSize)
        self.runner = FeedEffects.Runner(
            state: state, context: FeedEffects.Context(), reduce: FeedReducer.reduce, perform: effects.perform)
    }

    deinit {
        runner.send(.stop)
    }

    /// The state now.
    public var state: State { runner.state.visible }

    /// The current state (with an empty diff: show its rows as they are),
    /// then every update, in order, until the feed ends. Each access is a
    /// stream of its own.
    public var updates: AsyncStream<Update> {
        let (stream, continuation) = AsyncStream<Update>.makeStream()
        let id = runner.withCore { state, context -> Int? in
            continuation.yield((state.visible, FeedStep.quiet(state.visible)))
            guard state.phase != .stopped else { return nil }
            defer { context.nextSubscriber += 1 }
            context.subscribers[context.nextSubscriber] = continuation
            return context.nextSubscriber
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
        continuation.onTermination = { [weak runner] _ in
            Task { [weak runner] in runner?.withCore { _, context in _ = context.subscribers.removeValue(forKey: id) } }
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
        runner.send(.start(opening))
    }

    /// Moves the window to message `seq` (a search hit, a reply's parent):
    /// the page around it replaces what is shown, its row in the middle of
    /// the screen; newer pages load as the reader scrolls down, until the
    /// window reaches the newest message and follows the live edge again.
    public func jump(to seq: Int64) {
        runner.send(.jump(.message(seq)))
    }

    /// Moves the window back to the newest message, the reader at the bottom.
    public func jumpToLatest() {
        runner.send(.jump(.newest))
    }

    /// Ends the live stream, the fetches under way and the update streams.
    /// Sends under way still finish; their results no longer change the state.
    public func stop() {
        runner.send(.stop)
    }

    // MARK: What the list and the user do

    /// Tells the timeline what the list did; the update says how the rows
    /// changed and where to scroll. Older history is fetched when the reader
    /// nears the top.
    @discardableResult
    public func apply(_ action: ViewAction) -> TimelineUpdate {
        for case .answer(.update(let update)) in runner.send(.view(action)) { return update }
        return FeedStep.quiet(state)
    }

    /// Fetches the page newer than the newest loaded message now, in a
    /// window detached from the live edge, as a scroll near the bottom
    /// would; nothing when the window follows the live edge.
    public func loadNewer() {
        runner.send(.loadNewer)
    }

    /// Fetches the page older than the oldest loaded message now, as a
    /// scroll near the top would; nothing when there is none or it is
    /// already under way.
    public func loadOlder() {
        runner.send(.loadOlder)
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
        let found = runner.send(.discard(clientId: clientId)) { state, _ in
            state.visible.outbox.contains { $0.clientId == clientId && $0.failure != nil }
        }.value
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
        runner.send(.markedRead(marker))
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
        let clientId = UUID().uuidString.lowercased()
        return runner.send(.change(change, clientId: clientId)) { _, context in context.promise(for: clientId) }.value
    }

    /// Adds a send to the outbox (written to the storage before anything
    /// is sent) and shows its echo.
    func begin(_ body: String, attachments: [Attachment], clientId: String?) -> SendPromise {
        let send = PendingSend(
            clientId: clientId ?? UUID().uuidString.lowercased(), body: body, sender: userId, attachments: attachments)
        return runner.send(.send(send)) { _, context in context.promise(for: send.clientId) }.value
    }

    /// Puts a refused send back in the outbox.
    func beginRetry(_ clientId: String) throws(ScrollbackError) -> SendPromise {
        let found = runner.send(.retry(clientId: clientId)) { state, context in
            state.visible.outbox.contains { $0.clientId == clientId } ? context.promise(for: clientId) : nil
        }.value
        guard let found else {
            throw .notFound(code: .notFound, message: "This feed has no unacknowledged send with client id \(clientId).")
        }
        return found
    }
}
