import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// A conversation feed's behaviour as a pure function: an event in, the
/// state changed and the effects to perform out. `ConversationFeed` runs it
/// (an `EffectRunner`) and performs the effects; the conformance traces
/// replay it.
enum FeedReducer {
    static func reduce(_ state: inout FeedState, _ event: FeedEvent) -> [FeedEffect] {
        var step = FeedStep()
        step.handle(event, &state)
        return step.effects
    }
}

/// One event's reduction: the effects it answers with, in order.
struct FeedStep {
    var effects: [FeedEffect] = []

    mutating func emit(_ effect: FeedEffect) { effects.append(effect) }

    mutating func handle(_ event: FeedEvent, _ s: inout FeedState) {
        switch event {
        case .start(let opening):
            guard s.phase == .idle else { return }
            s.phase = .running
            s.visible.connection = .connecting
            if s.hasStorage {
                emit(.restore(opening))
            } else {
                open(opening, from: nil, outbox: [], &s)
            }
        case .restored(let opening, let window, let outbox, let failure):
            guard s.isRunning else { return }
            if let failure { s.visible.storageFailure = failure }
            open(opening, from: window, outbox: outbox, &s)
        case .jump(let opening):
            jump(opening, &s)
        case .opened(let opening, let jump, let initial, let answer):
            opened(opening, jump: jump, initial: initial, answer, &s)
        case .markerRead(let conversation, let opening):
            markerRead(conversation, opening, &s)
        case .view(let action):
            emit(.answer(.update(apply(action.timelineAction, &s))))
        case .loadOlder:
            guard s.isRunning, s.visible.timeline.hasOlder, let oldest = s.visible.timeline.seqRange?.lowerBound
            else { return }
            run(.loadOlder(before: oldest), &s)
            publishQuiet(&s)
        case .loadNewer:
            guard s.isRunning, !s.visible.timeline.isAttached, let newest = s.visible.timeline.seqRange?.upperBound
            else { return }
            run(.loadNewer(after: newest), &s)
            publishQuiet(&s)
        case .fetched(let effect, let window, let answer):
            fetched(effect, window: window, answer, &s)
        case .filled(let fill, let after, let window, let answer):
            filled(fill, after: after, window: window, answer, &s)
        case .presenceRead(let read, let answer):
            presenceRead(read, answer, &s)
        case .live(let input):
            guard s.phase != .stopped else { return emit(.answer(.steps([.finish(nil)]))) }
            let (actions, steps) = LiveWindow.handle(input, timeline: s.visible.timeline, live: &s.live)
            for action in actions { apply(action, &s) }
            // What the subscription delivers is this feed's to take in, in order.
            for case .emit(let event) in steps { receive(event, &s) }
            emit(.answer(.steps(steps)))
        case .subscriptionEnded(let failure):
            end(failure, &s)
        case .stop:
            end(nil, &s)
        case .markedRead(let marker):
            guard s.phase != .stopped else { return }
            s.visible.noteRead(s.userId, through: marker.readSeq)
            persist(&s)
            publishQuiet(&s)
        case .send(let send):
            begin(send, &s)
        case .change(let change, let clientId):
            queue(change, clientId: clientId, &s)
        case .retry(let clientId):
            retry(clientId, &s)
        case .discard(let clientId):
            discard(clientId, &s)
        case .sent(let entry, let answer):
            sent(entry, answer, &s)
        case .stored(let write, let failure):
            stored(write, failure: failure, &s)
        }
    }

    // MARK: Opening

    /// Opens the window: at once from what the storage holds, when it can
    /// show `opening`, or from the server's page; the outbox's sends as
    /// echoes, sent again.
    private mutating func open(
        _ opening: ConversationFeed.Opening, from stored: StoredWindow?, outbox: [OutboxEntry], _ s: inout FeedState
    ) {
        restore(stored, outbox: outbox, &s)
        if let readSeq = stored?.readSeqs[s.userId] { s.visible.readSeqAtOpen = readSeq }
        publishQuiet(&s)
        if let stored, let shown = Self.storedOpening(stored, opening, userId: s.userId) {
            // What the storage holds shows at once; the live stream and the
            // catch-up from its version correct it, and the server's read
            // marker the first unread.
            s.visible.readSeqs.merge(stored.readSeqs, uniquingKeysWith: max)
            s.visible.firstUnreadSeq = shown.firstUnread
            if let focus = shown.focus {
                apply(.jumped(stored.page, focus: focus), &s)
            } else {
                apply(.pageLoaded(stored.page), &s)
            }
            emit(.subscribe)
            emit(.readMarker(opening))
        } else {
            s.jumps += 1
            emit(.open(opening, jump: s.jumps, initial: true))
            // The first page at the first unread reads the marker itself.
            if opening != .firstUnread { emit(.readMarker(opening)) }
        }
        pumpOutbox(&s)
    }

    /// The first message after a read marker; nil when everything is read.
    static func firstUnread(readSeq: Int64, lastSeq: Int64) -> Int64? {
        readSeq < lastSeq ? readSeq + 1 : nil
    }

    /// How a window held by the storage opens at `opening`: the row to put
    /// in the middle of the screen and the first unread message; nil when
    /// the window cannot show it (a message it does not hold), for the
    /// server to answer.
    static func storedOpening(_ window: StoredWindow, _ opening: ConversationFeed.Opening, userId: String)
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

    /// The server's read marker as the feed opens: the marker the screen
    /// opened with, and, at the first unread, where that is (the window
    /// moves there when it does not hold it).
    private mutating func markerRead(_ conversation: Conversation, _ opening: ConversationFeed.Opening, _ s: inout FeedState) {
        guard s.phase != .stopped else { return }
        s.visible.readSeqAtOpen = conversation.readSeq
        s.visible.noteRead(s.userId, through: conversation.readSeq)
        if opening == .firstUnread {
            let first = Self.firstUnread(readSeq: conversation.readSeq, lastSeq: conversation.lastSeq)
            s.visible.firstUnreadSeq = first
            let timeline = s.visible.timeline
            if let first, timeline.hasOlder, let oldest = timeline.seqRange?.lowerBound, first < oldest {
                jump(.message(first), &s)
            }
        }
        persist(&s)
        publishQuiet(&s)
    }

    mutating func jump(_ opening: ConversationFeed.Opening, _ s: inout FeedState) {
        guard s.isRunning else { return }
        s.jumps += 1
        emit(.open(opening, jump: s.jumps, initial: false))
    }

    /// The page of an opening (the first: a refusal ends the feed) or of a
    /// jump (the last asked for: it replaces the window).
    private mutating func opened(
        _ opening: ConversationFeed.Opening, jump: Int, initial: Bool, _ answer: Result<FirstPage, ScrollbackError>?,
        _ s: inout FeedState
    ) {
        guard s.phase != .stopped, let answer else { return }
        guard initial else {
            guard jump == s.jumps, case .success(let first) = answer else { return }
            s.windows += 1
            s.fills = [:]
            s.fetching.removeAll { if case .catchUp = $0 { false } else { true } }
            apply(.jumped(first.page, focus: first.focus), &s)
            return
        }
        switch answer {
        case .failure(let error):
            end(error, &s)
        case .success(let first):
            s.visible.firstUnreadSeq = first.firstUnread
            if let readSeq = first.readSeq {
                s.visible.readSeqAtOpen = readSeq
                s.visible.noteRead(s.userId, through: readSeq)
            }
            if first.focus == nil {
                apply(.pageLoaded(first.page), &s)
            } else {
                apply(.jumped(first.page, focus: first.focus), &s)
            }
            emit(.subscribe)
        }
    }

    // MARK: The live stream

    /// The subscription's events that are not the timeline's: how the
    /// connection stands, how far members have read, who is online.
    private mutating func receive(_ event: LiveEvent, _ s: inout FeedState) {
        guard s.phase != .stopped else { return }
        switch event {
        case .connected:
            s.visible.connection = .live
            publishQuiet(&s)
            readPresence(&s)
        case .disconnected(let reason):
            s.visible.connection = .reconnecting(reason: reason)
            publishQuiet(&s)
        case .read(let user, let seq):
            s.visible.noteRead(user, through: seq)
            persist(&s)
            publishQuiet(&s)
        case .presence(let presence):
            s.presenceFramed.insert(presence.userId)
            s.visible.presence[presence.userId] = presence
            publishQuiet(&s)
        case .memberRemoved:
            // Nothing held of it can be shown or sent any more.
            forget(&s)
        case .message, .updated, .typing, .memberUpdated, .conversationUpdated:
            break  // the timeline's, or nothing to show
        }
    }

    /// Reads the members' presence, the stream being live: its frames keep
    /// it current from then on, and one that arrives while the read is
    /// under way is newer than what the read answers.
    private mutating func readPresence(_ s: inout FeedState) {
        s.presenceFramed = []
        s.presenceReads += 1
        emit(.readPresence(read: s.presenceReads))
    }

    /// A read of presence answered: a refusal leaves presence as the frames
    /// tell it (the stream reports why it ends, if it does).
    private mutating func presenceRead(
        _ read: Int, _ answer: Result<[MemberPresence], ScrollbackError>?, _ s: inout FeedState
    ) {
        guard case .success(let members)? = answer, s.phase != .stopped, read == s.presenceReads else { return }
        var presence = s.visible.presence.filter { s.presenceFramed.contains($0.key) }
        for member in members where !s.presenceFramed.contains(member.userId) {
            presence[member.userId] = member
        }
        s.visible.presence = presence
        publishQuiet(&s)
    }

    /// Stops the feed: for good, with why when it failed. Sends under way
    /// stay in the storage's outbox, for the next feed.
    private mutating func end(_ failure: ScrollbackError?, _ s: inout FeedState) {
        guard s.phase != .stopped else { return }
        s.phase = .stopped
        s.visible.connection = .ended
        if let failure { s.visible.failure = failure }
        // The conversation is gone, or the user is not a member.
        if case .notFound = failure { forget(&s) }
        s.fetching = []
        s.fills = [:]
        publishQuiet(&s)
        emit(.end)
    }

    // MARK: The timeline and its effects

    @discardableResult
    mutating func apply(_ action: TimelineAction, _ s: inout FeedState) -> TimelineUpdate {
        guard s.phase != .stopped else { return Self.quiet(s.visible) }
        let update = s.visible.timeline.apply(action)
        for effect in update.effects { run(effect, &s) }
        switch action {
        case .scrolled, .heightMeasured, .viewportResized, .unsubscribed:
            break  // what the list does, or a lost socket, changes nothing the storage holds
        default:
            persist(&s)
        }
        publish(update, &s)
        return update
    }

    /// Asks for what the timeline asked for, unless it is under way.
    private mutating func run(_ effect: TimelineEffect, _ s: inout FeedState) {
        if case .fillGap(let after, let through) = effect { return fill(after: after, through: through, &s) }
        guard !s.fetching.contains(effect) else { return }
        s.fetching.append(effect)
        emit(.fetch(effect, window: s.windows))
    }

    private mutating func fetched(
        _ effect: TimelineEffect, window: Int, _ answer: Result<TimelineAction, ScrollbackError>?, _ s: inout FeedState
    ) {
        guard s.phase != .stopped, let answer else { return }
        s.fetching.removeAll { $0 == effect }
        switch answer {
        case .success(.pageLoaded) where window != s.windows:
            // A page of the window before a jump: not this window's.
            publishQuiet(&s)
        case .success(let action):
            apply(action, &s)
        case .failure(let error):
            s.visible.failure = error
            publishQuiet(&s)
        }
    }

    /// Fetches the messages after `after` through `through`, page after
    /// page, each applied as it arrives, until none of them is missing (the
    /// live stream may bring them first). The timeline asks again for what
    /// is still missing after each page; a fill under way that covers it is
    /// not started twice.
    private mutating func fill(after: Int64, through: Int64, _ s: inout FeedState) {
        guard !s.fills.values.contains(where: { $0.covers(after: after, through: through) }) else { return }
        let fill = s.nextFill
        s.nextFill += 1
        s.fills[fill] = GapFill(after: after, through: through)
        emit(.fillPage(fill: fill, after: after, window: s.windows))
    }

    /// One page of a gap fill: applied, and the next asked for while a
    /// message it covers is still missing.
    private mutating func filled(
        _ fill: Int, after: Int64, window: Int, _ answer: Result<MessagePage, ScrollbackError>?, _ s: inout FeedState
    ) {
        // A fill of the window before a jump ends: not this window's.
        guard s.phase != .stopped, let through = s.fills[fill]?.through else { return }
        var gap = GapFill(after: after, through: through)
        guard window == s.windows, let answer else {
            s.fills[fill] = nil
            return
        }
        switch answer {
        case .failure(let error):
            s.fills[fill] = nil
            s.visible.failure = error
            publishQuiet(&s)
        case .success(let page):
            _ = gap.take(page)
            // Before applying: the timeline's request for the rest is covered by this fill.
            s.fills[fill] = gap
            apply(.pageLoaded(page), &s)
            // The live stream may have brought the rest meanwhile.
            if gap.isOpen, s.phase != .stopped, Self.isMissing(after: gap.after, through: through, in: s.visible.timeline) {
                emit(.fillPage(fill: fill, after: gap.after, window: window))
            } else {
                s.fills[fill] = nil
            }
        }
    }

    /// Whether a message after `seq`, up to `through`, is not in the window.
    static func isMissing(after seq: Int64, through: Int64, in timeline: Timeline) -> Bool {
        guard let window = timeline.seqRange, window.upperBound >= through else { return true }
        return timeline.gaps.contains { $0.upperBound > seq && $0.lowerBound <= through }
    }

    // MARK: Publishing

    mutating func publish(_ update: TimelineUpdate, _ s: inout FeedState) {
        s.visible.isLoadingOlder = s.fetching.contains { if case .loadOlder = $0 { true } else { false } }
        s.visible.isLoadingNewer = s.fetching.contains { if case .loadNewer = $0 { true } else { false } }
        emit(.publish(s.visible, update))
    }

    /// Publishes a state whose rows did not change.
    mutating func publishQuiet(_ s: inout FeedState) {
        publish(Self.quiet(s.visible), &s)
    }

    static func quiet(_ state: ConversationFeed.State) -> TimelineUpdate {
        TimelineUpdate(scrollOffset: state.timeline.scrollOffset)
    }
}
