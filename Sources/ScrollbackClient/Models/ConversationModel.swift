import Foundation
import Observation
import ScrollbackModels
import ScrollbackTimeline

/// A conversation screen's model for SwiftUI: it owns a `ConversationFeed`
/// and mirrors its state on the main actor, as `@Observable` properties a
/// view reads directly, with the actions a screen calls. Every property
/// changes on the main actor only, in the order the feed's updates came.
///
/// ```swift
/// @State var model = ConversationModel(feed: ConversationFeed(client: client, conversation: id, userId: me, storage: store))
/// ScrollView { LazyVStack { ForEach(model.items) { row in RowView(row) } } }
///     .task { model.start() }
/// ```
@MainActor @Observable
public final class ConversationModel {
    /// Rows newest first (an inverted list), local echoes included.
    public private(set) var items: [TimelineItem] = []
    public private(set) var connection: ConversationFeed.Connection = .idle
    /// An older page is being fetched (a spinner above the oldest row).
    public private(set) var isLoadingOlder = false
    /// A newer page is being fetched (a spinner below the newest row of a
    /// window away from the newest messages).
    public private(set) var isLoadingNewer = false
    /// Newer messages exist below the newest row: the window was moved to
    /// an older message (`jump(to:)`) and has not reached the newest yet (a
    /// "jump to latest" button).
    public private(set) var hasNewer = false
    /// The padding below the rows that keeps a short conversation at the
    /// top of the screen while its newest message anchors the bottom.
    public private(set) var bottomPadding: Double = 0
    /// The scroll offset from the bottom that keeps what the reader looks
    /// at in place, after the last update.
    public private(set) var scrollOffset: Double = 0
    /// The row at the bottom edge of the viewport and its distance from that
    /// edge, for `scrollPosition(id:anchor:)`; nil when the reader is at the
    /// bottom (pinned to the newest message).
    public private(set) var anchor: TimelineAnchor?
    /// The first message that was unread when the screen opened: the
    /// "new messages" divider goes above it. It comes from the feed's read
    /// marker as it opened (`ConversationFeed.State.readSeqAtOpen`): the
    /// stored one at once, offline too, then the server's once it answers
    /// (the divider moves if the user read on another device meanwhile). It
    /// does not move as the reader reads; nil when nothing was unread.
    public private(set) var firstUnreadSeq: Int64?
    /// How the rows changed in the last update, for a UIKit list.
    public private(set) var lastDiff = TimelineDiff()
    /// Sends waiting for the server, or refused (retry or discard them).
    public private(set) var outbox: [OutboxEntry] = []
    public private(set) var readSeqs: [String: Int64] = [:]
    public private(set) var presence: [String: MemberPresence] = [:]
    /// Why the feed gave up, if it did.
    public private(set) var failure: ScrollbackError?
    /// The last error of a call made through the model (a send refused, a
    /// read marker that could not move).
    public private(set) var lastError: ScrollbackError?
    /// The profiles of the users the rows name (each sender, each sender of
    /// a message replied to), by id, as the client's `ProfileCache` has
    /// them: a rename or a new avatar (`user_updated`) changes them, and
    /// `lastDiff` then lists the rows of that user as updated. Read a row's
    /// with `sender(of:)`.
    public var profiles: [String: UserProfile] { shown.profiles }

    public let feed: ConversationFeed
    private var shown = ShownProfiles()
    @ObservationIgnored private var reading: Task<Void, Never>?
    @ObservationIgnored private var following: Task<Void, Never>?
    /// The feed's read marker as it opened, as the divider was last placed by.
    @ObservationIgnored private var readSeqAtOpen: Int64?

    public init(feed: ConversationFeed) {
        self.feed = feed
        show(feed.state, TimelineUpdate(scrollOffset: feed.state.timeline.scrollOffset))
    }

    /// The profile of `userId`: as the rows show it, else the client's
    /// cache's, else the bare one (the id: show it, and its initials).
    public func profile(of userId: String) -> UserProfile {
        shown.profiles[userId] ?? feed.profiles.profile(of: userId)
    }

    /// The profile of the row's sender; nil for a message of the system.
    public func sender(of item: TimelineItem) -> UserProfile? {
        item.senderId.isEmpty ? nil : profile(of: item.senderId)
    }

    /// Starts the feed at `opening` and follows it. Once only; `stop()` ends both.
    public func start(at opening: ConversationFeed.Opening = .newest) {
        guard reading == nil else { return }
        let profileUpdates = feed.profiles.updates
        following = Task { [weak self] in
            for await batch in profileUpdates {
                guard let self else { return }
                self.profilesChanged(batch)
            }
        }
        let updates = feed.updates
        reading = Task { [weak self] in
            for await (state, update) in updates {
                guard let self else { return }
                self.show(state, update)
            }
        }
        feed.start(at: opening)
    }

    public func stop() {
        reading?.cancel()
        following?.cancel()
        feed.stop()
    }

    /// The cache took in profiles: those of users the rows name show, and
    /// their rows are listed as updated.
    private func profilesChanged(_ batch: [UserProfile]) {
        let changed = shown.take(batch, named: TimelineItem.namedUsers(items))
        guard !changed.isEmpty else { return }
        let rows = items.indices.filter { index in
            changed.contains(items[index].senderId) || items[index].message?.replyTo.map { changed.contains($0.sender) } == true
        }
        lastDiff = TimelineDiff(updated: rows)
    }

    /// Places the divider by the feed's knowledge: where the feed opened at
    /// the first unread, or else above the oldest loaded message after the
    /// marker the feed opened with that someone else wrote. A new marker
    /// (the server's after the stored one) places it again.
    private func placeDivider(_ state: ConversationFeed.State) {
        var divider = firstUnreadSeq
        if let marker = state.readSeqAtOpen, marker != readSeqAtOpen {
            readSeqAtOpen = marker
            divider = nil
        }
        if let first = state.firstUnreadSeq {
            divider = first
        } else if divider == nil, let readSeq = readSeqAtOpen {
            divider = items.reversed().compactMap(\.message).first {
                $0.seq > readSeq && $0.sender != feed.userId
            }?.seq
        }
        if firstUnreadSeq != divider { firstUnreadSeq = divider }
    }

    private func show(_ state: ConversationFeed.State, _ update: TimelineUpdate) {
        let timeline = state.timeline
        if items != timeline.items {
            items = timeline.items
            _ = shown.show(TimelineItem.namedUsers(items), from: feed.profiles)
        }
        if connection != state.connection { connection = state.connection }
        if isLoadingOlder != state.isLoadingOlder { isLoadingOlder = state.isLoadingOlder }
        if isLoadingNewer != state.isLoadingNewer { isLoadingNewer = state.isLoadingNewer }
        if hasNewer != timeline.hasNewer { hasNewer = timeline.hasNewer }
        let layout = timeline.layout
        let padding = layout?.bottomPadding ?? 0
        if bottomPadding != padding { bottomPadding = padding }
        if scrollOffset != update.scrollOffset { scrollOffset = update.scrollOffset }
        if anchor != timeline.anchor { anchor = timeline.anchor }
        if !update.diff.isEmpty || !lastDiff.isEmpty { lastDiff = update.diff }
        if outbox != state.outbox { outbox = state.outbox }
        if readSeqs != state.readSeqs { readSeqs = state.readSeqs }
        if presence != state.presence { presence = state.presence }
        if failure != state.failure { failure = state.failure }
        placeDivider(state)
    }

    // MARK: Actions

    /// Sends a message through the feed's outbox: its echo shows at once.
    public func send(_ text: String, attachments: [Attachment] = []) {
        let feed = self.feed
        Task { [weak self] in
            do throws(ScrollbackError) {
                try await feed.send(text, attachments: attachments)
            } catch {
                if error != .cancelled { self?.lastError = error }
            }
        }
    }

    /// Sends a refused send again.
    public func retry(_ clientId: String) {
        let feed = self.feed
        Task { [weak self] in
            do throws(ScrollbackError) {
                try await feed.retry(clientId: clientId)
            } catch {
                if error != .cancelled { self?.lastError = error }
            }
        }
    }

    /// Edits, deletes or reacts to a message, through the feed's outbox
    /// (after the sends before it, kept when offline).
    public func edit(_ seq: Int64, body: String) { run { feed throws(ScrollbackError) in try await feed.edit(seq, body: body) } }

    public func delete(_ seq: Int64) { run { feed throws(ScrollbackError) in try await feed.delete(seq) } }

    public func react(_ emoji: String, to seq: Int64) { run { feed throws(ScrollbackError) in try await feed.react(emoji, to: seq) } }

    public func unreact(_ emoji: String, from seq: Int64) { run { feed throws(ScrollbackError) in try await feed.unreact(emoji, from: seq) } }

    /// Runs a call of the feed, keeping its refusal in `lastError`.
    private func run(_ call: @escaping @Sendable (ConversationFeed) async throws(ScrollbackError) -> Message) {
        let feed = self.feed
        Task { [weak self] in
            do throws(ScrollbackError) {
                _ = try await call(feed)
            } catch {
                if error != .cancelled { self?.lastError = error }
            }
        }
    }

    /// Gives up a refused send: its row goes.
    public func discard(_ clientId: String) {
        do throws(ScrollbackError) {
            try feed.discard(clientId: clientId)
        } catch {
            lastError = error
        }
    }

    public func loadOlder() { feed.loadOlder() }

    public func loadNewer() { feed.loadNewer() }

    /// Moves the window to message `seq`, its row in the middle of the screen.
    public func jump(to seq: Int64) { feed.jump(to: seq) }

    /// Moves the window back to the newest message.
    public func jumpToLatest() { feed.jumpToLatest() }

    /// Moves the read marker to the newest loaded message.
    public func markRead() {
        let feed = self.feed
        Task { [weak self] in
            do throws(ScrollbackError) {
                try await feed.markRead()
            } catch {
                self?.lastError = error
            }
        }
    }

    /// The reader scrolled to `offset` from the bottom (older pages load near the top).
    public func scrolled(offsetFromBottom offset: Double) {
        show(feed.state, feed.apply(.scrolled(offsetFromBottom: offset)))
    }

    /// A row was measured on screen.
    public func measured(_ id: TimelineItem.ID, height: Double) {
        show(feed.state, feed.apply(.heightMeasured(id, height)))
    }

    public func viewportResized(height: Double) {
        show(feed.state, feed.apply(.viewportResized(height: height)))
    }
}
