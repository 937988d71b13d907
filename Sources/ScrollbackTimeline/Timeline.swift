import Foundation
import ScrollbackLayout
import ScrollbackModels

/// The loaded window of one conversation, newest first (index 0 is the
/// newest row: the order of an inverted list), as a value that changes only
/// through `apply(_:)`.
///
/// It merges whatever arrives, in whatever order: pages, live messages,
/// acknowledgements, edits. Rows are deduplicated by seq (a message seen
/// twice keeps its latest version), a local echo shows until the server's
/// acknowledgement or the live message with its `client_id` replaces it in
/// place, and stored messages are always in seq order. Seqs are dense, so a
/// missing one is a gap the timeline asks to fill; versions are dense, so
/// the timeline knows when it must catch up on edits. It also lays the rows
/// out (`ScrollbackLayout`): bottom padding for a short list, the visible
/// range, when to load older history, and the scroll offset that keeps what
/// the reader looks at in place when rows are inserted above or below it.
public struct Timeline: Sendable, Equatable {
    public let conversationId: UUID
    /// Newest first.
    public private(set) var items: [TimelineItem] = []
    /// Older history exists beyond the oldest loaded message.
    public private(set) var hasOlder = false
    /// The window holds the conversation's newest messages and follows the
    /// live edge (new messages join it as they come). False after a jump to
    /// an older message, until a newer page reaches the newest: live
    /// messages meanwhile only move `lastSeq`, and newer pages load as the
    /// reader nears the bottom.
    public private(set) var isAttached = true
    /// Newer history exists beyond the newest loaded message.
    public var hasNewer: Bool { !isAttached }
    /// Whether any page has been loaded.
    public private(set) var isLoaded = false
    /// The newest seq the conversation is known to have.
    public private(set) var lastSeq: Int64 = 0
    /// How new the loaded messages are: the one record of it, whose rules
    /// say when a catch-up is due.
    public private(set) var versions = KnownVersion()
    /// Every loaded message is current as of this version (edits and
    /// deletions up to it are applied).
    public var version: Int64 { versions.current }
    /// The user was removed from the conversation.
    public private(set) var isRemoved = false
    /// The scroll offset, from the bottom of the content.
    public private(set) var scrollOffset: Double = 0
    public var settings: TimelineLayoutSettings

    private var stored: [Int64: Message] = [:]
    /// Sends not stored yet, oldest first.
    private var pending: [TimelineItem] = []
    /// Rows that began as local echoes keep their ids: seq to client id.
    private var localIDs: [Int64: String] = [:]
    private var heights: [TimelineItem.ID: Double] = [:]
    /// The `before` of a `loadOlder` not answered yet.
    private var olderRequested: Int64?
    /// The `after` of a `loadNewer` not answered yet.
    private var newerRequested: Int64?
    /// The `after` of each `fillGap` not answered yet.
    private var gapsRequested: Set<Int64> = []
    /// The highest version of a change let go because its row was not held
    /// (an edit of a message outside the window, a message beyond a
    /// detached window): a page read before it may bring the row without it.
    private var droppedVersion: Int64 = 0
    private var catchUpRequested = false
    /// The version the catch-up in flight fetches changes after.
    private var catchUpSince: Int64?

    public init(conversationId: UUID, settings: TimelineLayoutSettings = TimelineLayoutSettings()) {
        self.conversationId = conversationId
        self.settings = settings
    }

    // MARK: Reading

    /// The stored messages, newest first.
    public var messages: [Message] { items.compactMap(\.message) }

    /// The oldest and newest stored seqs.
    public var seqRange: ClosedRange<Int64>? {
        guard let oldest = stored.keys.min(), let newest = stored.keys.max() else { return nil }
        return oldest...newest
    }

    /// The seqs missing between the oldest and newest loaded messages.
    public var gaps: [ClosedRange<Int64>] {
        let seqs = stored.keys.sorted()
        var gaps: [ClosedRange<Int64>] = []
        for (older, newer) in zip(seqs, seqs.dropFirst()) where newer > older + 1 {
            gaps.append((older + 1)...(newer - 1))
        }
        return gaps
    }

    /// Where a live subscription resumes: after the newest message held,
    /// or, in a window detached from the live edge, after the newest the
    /// conversation is known to have (what lies between comes by pages).
    public var resumeAfter: Int64 {
        isAttached ? seqRange?.upperBound ?? lastSeq : lastSeq
    }

    /// The height each row is laid out with: measured, or estimated.
    public func height(of item: TimelineItem) -> Double {
        heights[item.id] ?? settings.estimatedHeight(item)
    }

    /// A row's estimate: its text's height and its attachments' boxes, known
    /// from the pictures' pixel sizes before any of them is downloaded.
    public func estimate(of item: TimelineItem) -> MessageEstimate {
        settings.estimate(item)
    }

    /// The rows laid out in the viewport at the current scroll offset; nil
    /// only when the heights add up beyond what a Double holds.
    public var layout: ChatLayout? {
        try? ChatLayout(layoutInput(scrollOffset: scrollOffset))
    }

    // MARK: Changing

    /// Applies an action and says how the rows changed, where to scroll, and
    /// what to fetch next.
    @discardableResult
    public mutating func apply(_ action: TimelineAction) -> TimelineUpdate {
        let before = items
        let anchor = self.anchor
        var effects: [TimelineEffect] = []
        switch action {
        case .pageLoaded(let page):
            effects += load(page)
        case .jumped(let page, let focus):
            effects += jump(to: page)
            rebuild()
            scrollOffset = offsetCentering(focus)
        case .liveMessage(let message):
            guard belongs(message) else { break }
            // A detached window does not hold what is newer than its newest
            // row; the message comes with the pages that reach it.
            if isAttached || isInWindow(message.seq) { store(message) } else { dropped(message) }
            lastSeq = max(lastSeq, message.seq)
            versions.sawLive(message.version)
        case .messageUpdated(let message):
            guard belongs(message) else { break }
            // Only rows in the window: an edit of an unloaded message is
            // fetched with its page.
            if isInWindow(message.seq) { store(message) } else { dropped(message) }
            versions.sawLive(message.version)
        case .subscribed(let last, let subscribedVersion):
            let behind = versions.subscribed(at: subscribedVersion) != nil
            lastSeq = max(lastSeq, last)
            if isLoaded, behind { effects += requestCatchUp() }
        case .unsubscribed:
            versions.unsubscribed()
        case .resyncRequired(let last):
            lastSeq = max(lastSeq, last)
            effects += requestCatchUp()
        case .sendStarted(let send):
            guard !isRemoved, !pending.contains(where: { $0.clientId == send.clientId }) else { break }
            pending.append(TimelineItem(id: .local(clientId: send.clientId), state: .sending(send)))
        case .sendAcknowledged(let clientID, let message):
            lastSeq = max(lastSeq, message.seq)
            // In a window detached from the live edge, the echo stays until
            // the pages that reach the message bring it.
            guard isAttached || isInWindow(message.seq) else { break }
            resolveEcho(clientID, sender: nil, seq: message.seq)
            store(message)
        case .sendFailed(let clientID, let reason):
            if let index = pending.firstIndex(where: { $0.clientId == clientID }),
                case .sending(let send) = pending[index].state
            {
                pending[index].state = .failed(send, reason: reason)
            }
        case .sendRetried(let clientID):
            if let index = pending.firstIndex(where: { $0.clientId == clientID }),
                case .failed(let send, _) = pending[index].state
            {
                pending[index].state = .sending(send)
            }
        case .sendDiscarded(let clientID):
            pending.removeAll { $0.clientId == clientID }
        case .changesApplied(let changes):
            dropBefore(changes.firstSeq)
            for message in changes.messages where belongs(message) {
                if isInWindow(message.seq) { store(message) } else { dropped(message) }
            }
            catchUpRequested = false
            if let since = catchUpSince, since > versions.current {
                // A jump replaced the window with an older page while these
                // were fetched: the changes between that page and `since`
                // are still to be applied.
                catchUpSince = nil
                versions.saw(changes.version)
                effects += requestCatchUp()
            } else {
                catchUpSince = nil
                versions.caughtUp(to: changes.version)
                if changes.hasMore { effects += requestCatchUp() }
            }
        case .memberRemoved:
            isRemoved = true
            for index in pending.indices {
                if case .sending(let send) = pending[index].state {
                    pending[index].state = .failed(send, reason: "You are no longer a member of this conversation.")
                }
            }
        case .heightMeasured(let id, let height):
            if height.isFinite, height >= 0 { heights[id] = height }
        case .scrolled(let offset):
            if offset.isFinite { scrollOffset = max(offset, 0) }
        case .viewportResized(let height):
            if height.isFinite, height >= 0 { settings.viewportHeight = height }
        }
        rebuild()
        let keepsOffset: Bool =
            switch action {
            case .scrolled, .jumped: true
            default: false
            }
        if !keepsOffset { scrollOffset = offsetKeeping(anchor) }
        effects += gapRequests()
        effects += olderRequest()
        effects += newerRequest()
        return TimelineUpdate(diff: Self.diff(from: before, to: items, after: action), scrollOffset: scrollOffset, effects: effects)
    }

    // MARK: Merging

    private func belongs(_ message: Message) -> Bool {
        message.conversationId == conversationId
    }

    /// Whether a message belongs in the window: inside it, or newer than
    /// its newest row while it follows the live edge.
    private func isInWindow(_ seq: Int64) -> Bool {
        guard let range = seqRange else { return false }
        return range.contains(seq) || (isAttached && seq > range.upperBound)
    }

    /// Keeps the newer state of a message seen twice. The live message of
    /// our own send, arriving before its ack, replaces the echo.
    private mutating func store(_ message: Message) {
        if let held = stored[message.seq], held.version > message.version { return }
        var message = message
        // A preview is the parent as it is now: the one held is as new as any.
        if let parent = message.replyTo.flatMap({ stored[$0.seq] }) { message.replyTo = ReplyPreview(of: parent) }
        stored[message.seq] = message
        showInReplies(message)
        if let clientID = message.clientId { resolveEcho(clientID, sender: message.sender, seq: message.seq) }
    }

    /// The replies held to `parent` show it as it is now (an edit or a
    /// deletion of a message changes the preview in every reply to it).
    private mutating func showInReplies(_ parent: Message) {
        let preview = ReplyPreview(of: parent)
        for (seq, held) in stored where held.replyTo?.seq == parent.seq && held.replyTo != preview {
            stored[seq]?.replyTo = preview
        }
    }

    /// A change of a row not held: only the replies held to it show it.
    private mutating func dropped(_ message: Message) {
        droppedVersion = max(droppedVersion, message.version)
        showInReplies(message)
    }

    /// The local echo of `clientID` (sent by `sender`, when given) becomes
    /// the stored message `seq`, keeping its row id.
    private mutating func resolveEcho(_ clientID: String, sender: String?, seq: Int64) {
        guard
            let index = pending.firstIndex(where: { item in
                item.pendingSend.map { $0.clientId == clientID && (sender == nil || $0.sender == sender) } ?? false
            })
        else { return }
        pending.remove(at: index)
        localIDs[seq] = clientID
    }

    /// Retention removed the conversation's messages below `firstSeq`:
    /// the window lets them go, and has nothing older than `firstSeq`.
    private mutating func dropBefore(_ firstSeq: Int64) {
        guard firstSeq > 1, let oldest = stored.keys.min(), oldest < firstSeq else { return }
        stored = stored.filter { $0.key >= firstSeq }
        localIDs = localIDs.filter { $0.key >= firstSeq }
        if stored.keys.min().map({ $0 <= firstSeq }) ?? true { hasOlder = false }
    }

    private mutating func load(_ page: MessagePage) -> [TimelineEffect] {
        dropBefore(page.firstSeq)
        var effects: [TimelineEffect] = []
        let pageMessages = page.messages.filter(belongs)
        let pageSeqs = Set(pageMessages.map(\.seq))
        let outside = stored.keys.filter { !pageSeqs.contains($0) }
        let brings = pageSeqs.contains { stored[$0] == nil }
        let (oldestBefore, newestBefore) = (stored.keys.min(), stored.keys.max())
        for message in pageMessages { store(message) }
        lastSeq = max(lastSeq, page.lastSeq)
        let pageOldest = pageSeqs.min()
        if let pageOldest {
            if oldestBefore == nil || pageOldest <= oldestBefore! { hasOlder = page.hasOlder }
            if let requested = olderRequested, pageOldest < requested { olderRequested = nil }
        } else if olderRequested != nil {
            // An empty older page: nothing older.
            hasOlder = false
            olderRequested = nil
        }
        let answersNewer = newerRequested.map { pageSeqs.isEmpty || (pageSeqs.max() ?? 0) > $0 } ?? false
        if answersNewer { newerRequested = nil }
        // A page that reaches the newest message joins the live edge.
        if !isAttached, !page.hasNewer,
            pageSeqs.isEmpty ? answersNewer : (pageSeqs.max() ?? 0) >= (newestBefore ?? 0)
        {
            isAttached = true
        }
        if pageMessages.isEmpty, !isLoaded { hasOlder = false }
        for after in gapsRequested where stored[after + 1] != nil { gapsRequested.remove(after) }
        if isLoaded, brings, page.version < droppedVersion {
            // Read before a change let go since: it may be a change to a
            // row the page brought, which was not held then.
            versions.joined(readAt: page.version)
            effects += requestCatchUp()
        } else if !isLoaded || outside.isEmpty {
            versions.caughtUp(to: page.version)
        } else if !versions.isCurrent(asOf: page.version) {
            // The page's rows are current as of its version, the others only
            // as of ours: catch them up.
            effects += requestCatchUp()
        }
        isLoaded = true
        return effects
    }

    /// Replaces the window with `page`: what was held goes (local echoes
    /// stay), and the page's rows are current as of its version.
    private mutating func jump(to page: MessagePage) -> [TimelineEffect] {
        stored = [:]
        localIDs = [:]
        olderRequested = nil
        newerRequested = nil
        gapsRequested = []
        isLoaded = false
        isAttached = true
        hasOlder = false
        var page = page
        page.messages = page.messages.filter(belongs)
        // The rows are current as of the page's version, not of changes
        // applied to the rows it replaces: a live edit that arrived before
        // a page read earlier would otherwise be lost with them.
        versions.replaced(at: page.version)
        var effects = load(page)
        isAttached = !page.hasNewer
        if versions.seen > page.version { effects += requestCatchUp() }
        return effects
    }

    /// The scroll offset that puts row `focus` in the middle of the
    /// viewport (as far as the content allows); 0 (the bottom) for nil or a
    /// row not held.
    private func offsetCentering(_ focus: Int64?) -> Double {
        guard let focus, let layout = try? ChatLayout(layoutInput(scrollOffset: nil)),
            let index = items.firstIndex(where: { $0.seq == focus })
        else { return 0 }
        let frame = layout.items[index]
        let centered = frame.offsetFromBottom + frame.height / 2 - settings.viewportHeight / 2
        return min(max(centered, 0), layout.maxScrollOffset)
    }

    private mutating func requestCatchUp() -> [TimelineEffect] {
        guard !catchUpRequested, !isRemoved else { return [] }
        catchUpRequested = true
        catchUpSince = versions.current
        return [.catchUp(sinceVersion: versions.current)]
    }

    /// A gap inside the window, or between the newest loaded message and
    /// the newest the conversation is known to have.
    private mutating func gapRequests() -> [TimelineEffect] {
        guard !isRemoved, let newest = stored.keys.max() else { return [] }
        var effects: [TimelineEffect] = []
        var missing = gaps
        if isAttached, lastSeq > newest { missing.append((newest + 1)...lastSeq) }
        for gap in missing where !gapsRequested.contains(gap.lowerBound - 1) {
            gapsRequested.insert(gap.lowerBound - 1)
            effects.append(.fillGap(after: gap.lowerBound - 1, through: gap.upperBound))
        }
        return effects
    }

    /// Older history when the reader nears the top of what is loaded.
    private mutating func olderRequest() -> [TimelineEffect] {
        guard !isRemoved, hasOlder, olderRequested == nil, let oldest = stored.keys.min(),
            let layout, layout.loadOlder || !layout.isScrollable
        else { return [] }
        olderRequested = oldest
        return [.loadOlder(before: oldest)]
    }

    /// Newer history when the reader nears the bottom of a window detached
    /// from the live edge.
    private mutating func newerRequest() -> [TimelineEffect] {
        guard !isRemoved, !isAttached, newerRequested == nil, let newest = stored.keys.max(), let layout,
            scrollOffset <= settings.prefetchThreshold || !layout.isScrollable
        else { return [] }
        newerRequested = newest
        return [.loadNewer(after: newest)]
    }

    private mutating func rebuild() {
        let storedItems = stored.keys.sorted(by: >).map { seq in
            TimelineItem(id: localIDs[seq].map { .local(clientId: $0) } ?? .seq(seq), state: .stored(stored[seq]!))
        }
        items = pending.reversed() + storedItems
    }

    // MARK: Layout

    private func layoutInput(scrollOffset: Double?) -> LayoutInput {
        LayoutInput(
            viewportHeight: settings.viewportHeight, itemHeights: items.map(height(of:)), spacing: settings.spacing,
            topInset: settings.topInset, bottomInset: settings.bottomInset, scrollOffset: scrollOffset,
            prefetchThreshold: settings.prefetchThreshold)
    }

    /// The row at the bottom edge of the viewport at the current scroll
    /// offset, and how far its bottom is from that edge (negative: below
    /// it): what stays put when rows are inserted, and what a list restores
    /// (`scrollPosition(id:anchor:)`). Nil when the reader is at the bottom
    /// (pinned: new rows push history up).
    public var anchor: TimelineAnchor? {
        // At the bottom of a window that follows the live edge, the reader
        // is pinned (new rows push history up); at the bottom of a detached
        // one, the bottom row stays put as newer pages load below it.
        guard scrollOffset > 0 || !isAttached, let layout else { return nil }
        guard let index = layout.items.firstIndex(where: { $0.topEdgeFromBottom > scrollOffset }) ?? layout.items.indices.last
        else { return nil }
        return TimelineAnchor(id: items[index].id, distanceFromBottom: layout.items[index].offsetFromBottom - scrollOffset)
    }

    /// The offset that puts the anchor row where it was.
    private func offsetKeeping(_ anchor: TimelineAnchor?) -> Double {
        guard let layout = try? ChatLayout(layoutInput(scrollOffset: nil)) else { return scrollOffset }
        guard let anchor, let index = items.firstIndex(where: { $0.id == anchor.id }) else {
            return min(scrollOffset, layout.maxScrollOffset)
        }
        return min(max(layout.items[index].offsetFromBottom - anchor.distanceFromBottom, 0), layout.maxScrollOffset)
    }

    // MARK: Diffing

    static func diff(from old: [TimelineItem], to new: [TimelineItem], after action: TimelineAction)
        -> TimelineDiff
    {
        let oldIndex = Dictionary(old.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        let newIDs = Set(new.map(\.id))
        var diff = TimelineDiff()
        diff.removed = old.indices.filter { !newIDs.contains(old[$0].id) }
        var lastOld = -1
        var moved: Set<TimelineItem.ID> = []
        for item in new {
            guard let index = oldIndex[item.id] else { continue }
            if index < lastOld { moved.insert(item.id) } else { lastOld = index }
        }
        diff.removed += moved.compactMap { oldIndex[$0] }
        diff.removed.sort()
        let measured: TimelineItem.ID? = if case .heightMeasured(let id, _) = action { id } else { nil }
        for (index, item) in new.enumerated() {
            guard let previous = oldIndex[item.id], !moved.contains(item.id) else {
                diff.inserted.append(index)
                continue
            }
            if old[previous] != item || item.id == measured { diff.updated.append(index) }
        }
        return diff
    }
}

/// Where the reader is, as a row and an offset rather than a number of
/// points: the row at the bottom edge of the viewport, and the distance of
/// its bottom from that edge.
public struct TimelineAnchor: Sendable, Equatable {
    public var id: TimelineItem.ID
    public var distanceFromBottom: Double

    public init(id: TimelineItem.ID, distanceFromBottom: Double) {
        self.id = id
        self.distanceFromBottom = distanceFromBottom
    }
}

/// The list's geometry, and the height a row gets before it is measured.
public struct TimelineLayoutSettings: Sendable, Equatable {
    public var viewportHeight: Double
    public var spacing: Double
    public var topInset: Double
    public var bottomInset: Double
    /// How close to the top of the loaded rows (in points) older history is asked for.
    public var prefetchThreshold: Double
    /// The estimate for a row not measured yet, from its text and attachments.
    public var metrics: TextMetrics
    /// The width a row's text is laid out in.
    public var viewportWidth: Double

    public init(
        viewportHeight: Double = 640, viewportWidth: Double = 390, spacing: Double = 8, topInset: Double = 0,
        bottomInset: Double = 0, prefetchThreshold: Double = 800, metrics: TextMetrics = TextMetrics()
    ) {
        self.viewportHeight = viewportHeight
        self.viewportWidth = viewportWidth
        self.spacing = spacing
        self.topInset = topInset
        self.bottomInset = bottomInset
        self.prefetchThreshold = prefetchThreshold
        self.metrics = metrics
    }

    /// A row's estimate, by the metrics' one rule
    /// (``TextMetrics/estimate(text:attachments:viewportWidth:)``): its text,
    /// and the boxes of its attachments (a tombstone is one line).
    public func estimate(_ item: TimelineItem) -> MessageEstimate {
        if let estimate = try? metrics.estimate(item.layoutMessage, viewportWidth: viewportWidth) {
            return estimate
        }
        // Metrics that cannot lay anything out (out of their ranges) give one line.
        let oneLine = metrics.lineHeight + 2 * metrics.verticalPadding
        return MessageEstimate(textHeight: oneLine, attachmentBoxes: [], height: oneLine)
    }

    /// A row's estimated height: ``estimate(_:)``'s.
    public func estimatedHeight(_ item: TimelineItem) -> Double {
        estimate(item).height
    }
}
