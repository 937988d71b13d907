import Foundation
import ScrollbackModels

/// The user's conversation list, most recently active first, as a value that
/// changes only through `apply(_:)`: pages of `GET /v1/conversations`, the
/// frames of the inbox stream, the conversations fetched one by one, and the
/// socket coming and going. It does no I/O; what it needs fetched or sent
/// comes back as effects (`InboxFeed` runs them).
///
/// Frames are states, not deltas, and anything may arrive twice or late: per
/// conversation the line with the higher `version` wins, then the one with
/// the higher `read_seq`. A conversation the user was removed from
/// (`member_removed`) is not shown again, whatever page or fetch still
/// carries it, until `member_added`. After `resync_required` the list is
/// loaded again from the top, and what the new pass does not list is dropped.
public struct Inbox: Sendable, Equatable {
    /// Newest activity first (`Conversation.activity`, larger first).
    public private(set) var conversations: [Conversation] = []
    /// The cursor of the last inbox frame received: where a resubscription resumes.
    public private(set) var cursor: String?
    /// The inbox is subscribed on the current socket (`inbox_subscribed`
    /// received and the socket not lost since).
    public private(set) var isLive = false
    /// Some page of the list has been loaded.
    public private(set) var isLoaded = false

    private var byId: [UUID: Conversation] = [:]
    /// Told removed (`member_removed`) and not added back since.
    private var removedIds: Set<UUID> = []
    /// Lines of conversations not in the list yet: waiting for their page,
    /// or for the fetch that brings their title and members.
    private var waiting: [UUID: InboxActivity] = [:]
    /// Conversations being fetched, with the pass they were asked in.
    private var fetching: [UUID: Int] = [:]
    /// Shown from before a `resync_required` and not confirmed since by a
    /// page or a frame: dropped when the new pass goes past them without
    /// listing them.
    private var stale: Set<UUID> = []
    /// The newest details each conversation was told of
    /// (`conversation_updated`): a page or a fetch read before the frame
    /// does not bring an older title back.
    private var details: [UUID: ConversationDetails] = [:]

    /// A pass over the list pages it from the top. A new pass starts after
    /// `resync_required` (the old one's pages are ignored) and after a page
    /// says `activity_changed`.
    private var pass = 0
    private var pageRequest: InboxPageRequest?
    /// The current pass's cursor for its next page (nil: its first page).
    private var nextPageCursor: String?
    /// The lowest activity the current pass listed.
    private var passMark: Int64?
    private var passComplete = false
    /// Every conversation with a higher activity is in the list (nil:
    /// nothing is known yet; `Int64.min`: the whole list is loaded). A line
    /// above it that is not in the list is fetched at once; one below waits
    /// for its page.
    private var frontier: Int64?
    /// A restarted pass pages on by itself down to here: where the pass
    /// before it had got to.
    private var target: Int64?

    /// The unread counts over every conversation, as `GET /v1/unread`
    /// last answered (nil: not asked, or the whole list is loaded and
    /// counts itself).
    private var counted: UnreadCounts?
    /// Each conversation's unread count as held when that answer came: a
    /// change to one of them since moves the totals by its difference.
    private var countedRows: [UUID: Int64] = [:]
    /// `loadUnreadCounts` is running.
    private var countsRequested = false
    /// Something changed while it ran that its answer may not include, or
    /// a conversation changed whose count the answer did not take: ask again.
    private var countsOutdated = false

    public init() {}

    // MARK: Reading

    /// The conversation with this id, if it is in the list.
    public subscript(id: UUID) -> Conversation? { byId[id] }

    /// More of the list can be loaded (`InboxFeed.loadMore()`).
    public var hasMore: Bool { frontier != .min }

    /// A page of the list is being loaded.
    public var isLoadingPage: Bool { pageRequest != nil }

    /// The user's unread messages over all their conversations (a tab
    /// badge): the list's own sum once every page is loaded; before that,
    /// the server's total (`GET /v1/unread`) moved by every change seen
    /// since, asked again whenever a change may not be in it.
    public var unreadCount: Int64 {
        guard let counted, frontier != .min else { return conversations.reduce(0) { $0 + $1.unreadCount } }
        return countedRows.reduce(counted.unreadMessages) { total, row in total + unread(of: row.key) - row.value }
    }

    /// How many conversations have unread messages, as `unreadCount` counts them.
    public var unreadConversations: Int64 {
        guard let counted, frontier != .min else { return Int64(conversations.count { $0.unreadCount > 0 }) }
        return countedRows.reduce(counted.unreadConversations) { total, row in
            total + (unread(of: row.key) > 0 ? 1 : 0) - (row.value > 0 ? 1 : 0)
        }
    }

    /// A conversation's unread count as held: its row, or a line of it
    /// waiting for its page; 0 once the user was removed from it.
    private func unread(of id: UUID) -> Int64 {
        if let row = byId[id] { return row.unreadCount }
        if let line = waiting[id] { return line.unreadCount }
        if removedIds.contains(id) { return 0 }
        return countedRows[id] ?? 0
    }

    /// The unread mentions of the user in every conversation in the list.
    public var unreadMentions: Int64 { conversations.reduce(0) { $0 + $1.unreadMentions } }

    // MARK: Changing

    /// Applies an action: how the rows changed, and what to fetch or send next.
    @discardableResult
    public mutating func apply(_ action: InboxAction) -> InboxUpdate {
        let before = conversations
        var effects: [InboxEffect] = []
        switch action {
        case .restored(let rows):
            guard !isLoaded, byId.isEmpty else { break }
            for row in rows where !removedIds.contains(row.id) { byId[row.id] = row }
            stale = Set(byId.keys)
        case .connected:
            isLive = false
            effects.append(.subscribe(after: cursor))
        case .connectionDropped:
            isLive = false
        case .frame(let frame):
            effects += take(frame)
        case .pageLoaded(let list, let request):
            effects += load(list, for: request)
        case .pageFailed(let request):
            guard request == pageRequest else { break }
            pageRequest = nil
            // Pages the inbox asked for by itself are asked for again; one
            // the user scrolled to waits for the next `moreRequested`.
            if frontier == nil || needsNextPage { effects += requestPage() }
        case .moreRequested:
            if isLoaded, !passComplete { effects += requestPage() }
        case .conversationFetched(let conversation):
            guard fetching.removeValue(forKey: conversation.id) == pass else { break }
            merge(conversation)
        case .conversationNotVisible(let id):
            guard fetching.removeValue(forKey: id) == pass else { break }
            // No longer a member (its `member_removed` comes too).
            waiting[id] = nil
        case .conversationFetchFailed(let id):
            // Asked for again below.
            fetching[id] = nil
        case .unreadCountsLoaded(let counts):
            countsRequested = false
            counted = counts
            countedRows = [:]
            for (id, line) in waiting { countedRows[id] = line.unreadCount }
            for (id, row) in byId { countedRows[id] = row.unreadCount }
        case .unreadCountsFailed:
            // Asked again (the runner has waited out its retries first).
            countsRequested = false
            countsOutdated = true
        }
        effects += fetchRequests()
        rebuild()
        effects += countRequests(after: action)
        return InboxUpdate(change: InboxChange(from: before, to: conversations), effects: effects)
    }

    // MARK: Counts

    /// Asks the server for the totals while the list is not all loaded:
    /// after the first page, and again when a change came that the last
    /// answer may not include.
    private mutating func countRequests(after action: InboxAction) -> [InboxEffect] {
        guard isLoaded, frontier != .min else {
            counted = nil
            countedRows = [:]
            countsOutdated = false
            return []
        }
        if case .frame(let frame) = action, let id = Self.conversation(countedIn: frame) {
            // A change of a conversation the answer counted moves the
            // totals by itself; any other, or any change while a request
            // runs, needs the server's word.
            if countsRequested || countedRows[id] == nil { countsOutdated = true }
        }
        switch action {
        case .frame(.inboxResyncRequired):
            countsOutdated = true
        case .pageLoaded, .conversationFetched:
            // A page or a fetch that changed a count the answer took (a row
            // restored from disk, out of date): the answer may not agree.
            if byId.contains(where: { id, row in countedRows[id].map { $0 != row.unreadCount } ?? false }),
                counted != nil
            {
                countsOutdated = true
            }
        default:
            break
        }
        if counted != nil {
            // Rows a page or a fetch brought, unchanged since the answer
            // (a change would have come as a frame, and been asked about).
            for (id, line) in waiting where countedRows[id] == nil { countedRows[id] = line.unreadCount }
            for (id, row) in byId where countedRows[id] == nil { countedRows[id] = row.unreadCount }
        }
        guard !countsRequested, counted == nil || countsOutdated else { return [] }
        countsOutdated = false
        countsRequested = true
        return [.loadUnreadCounts]
    }

    /// The conversation whose unread count a frame may change.
    private static func conversation(countedIn frame: ServerFrame) -> UUID? {
        switch frame {
        case .conversationActivity(let line, _): line.conversationId
        case .memberAdded(let conversation, _): conversation.id
        case .inboxRead(let id, _, _, _, _, _), .inboxMemberRemoved(let id, _): id
        default: nil
        }
    }

    // MARK: Frames

    private mutating func take(_ frame: ServerFrame) -> [InboxEffect] {
        switch frame {
        case .inboxSubscribed(let at):
            cursor = at
            isLive = true
            // The list is fetched after the subscription, so that nothing
            // changed in between is missed.
            if !isLoaded { return requestPage() }
        case .conversationActivity(let line, let at):
            cursor = at
            guard !removedIds.contains(line.conversationId) else { break }
            stale.remove(line.conversationId)
            if var known = byId[line.conversationId] {
                if Self.rank(line) > Self.rank(known) { known.take(line) }
                byId[line.conversationId] = known
            } else if let held = waiting[line.conversationId], Self.rank(held) >= Self.rank(line) {
                break
            } else {
                waiting[line.conversationId] = line
            }
        case .memberAdded(let conversation, let at):
            cursor = at
            removedIds.remove(conversation.id)
            if byId[conversation.id] != nil || isAboveFrontier(conversation.activity) {
                merge(conversation)
            } else {
                // Further down than the pages loaded so far (an addition to
                // a quiet conversation, or a repeat of one from before the
                // cursor): it waits for its page, as such a line does.
                let line = InboxActivity(conversation)
                if waiting[conversation.id].map({ Self.rank($0) < Self.rank(line) }) ?? true {
                    waiting[conversation.id] = line
                }
            }
        case .inboxRead(let id, _, let seq, let unreadCount, let unreadMentions, let at):
            cursor = at
            guard !removedIds.contains(id) else { break }
            stale.remove(id)
            // Only a higher marker: a read frame carries no version, and a
            // repeated one must not undo an unread count that grew since.
            if var known = byId[id], seq > known.readSeq {
                known.readSeq = seq
                known.unreadCount = unreadCount
                known.unreadMentions = unreadMentions
                byId[id] = known
            }
            if var line = waiting[id], seq > line.readSeq {
                line.readSeq = seq
                line.unreadCount = unreadCount
                line.unreadMentions = unreadMentions
                waiting[id] = line
            }
        case .inboxMemberRemoved(let id, let at):
            cursor = at
            removedIds.insert(id)
            byId[id] = nil
            waiting[id] = nil
            details[id] = nil
            stale.remove(id)
        case .conversationUpdated(let told, let at?):
            cursor = at
            let id = told.conversationId
            guard !removedIds.contains(id), told.detailsVersion > (details[id]?.detailsVersion ?? -1) else { break }
            details[id] = told
            if let known = byId[id] { byId[id] = told.applied(to: known) }
        case .inboxResyncRequired(let at):
            cursor = at
            return restartAfterResync()
        default:
            break  // frames of conversation subscriptions, errors, pongs
        }
        return []
    }

    /// More changed than the stream replays: the list is loaded again, and
    /// what is shown stays until the new pass confirms it or goes past it.
    private mutating func restartAfterResync() -> [InboxEffect] {
        pass += 1
        pageRequest = nil
        target = frontier
        frontier = nil
        nextPageCursor = nil
        passMark = nil
        passComplete = false
        stale = Set(byId.keys)
        // Removals and lines missed or held may be out of date; the new pass
        // lists what is true now, and frames from here on say what changes.
        removedIds = []
        waiting = [:]
        details = [:]
        return requestPage()
    }

    // MARK: Pages

    private mutating func requestPage() -> [InboxEffect] {
        guard pageRequest == nil, !passComplete else { return [] }
        let request = InboxPageRequest(cursor: nextPageCursor, pass: pass)
        pageRequest = request
        return [.loadPage(request)]
    }

    /// The current pass pages on by itself: it has not yet reached where the
    /// pass before it had got to, or it has conversations to confirm.
    private var needsNextPage: Bool {
        guard !passComplete, isLoaded else { return false }
        if !stale.isEmpty { return true }
        guard let target, let passMark else { return false }
        return passMark > target
    }

    private mutating func load(_ list: ConversationList, for request: InboxPageRequest) -> [InboxEffect] {
        // A page of an abandoned pass may be from before changes the stream
        // did not replay.
        guard request == pageRequest else { return [] }
        pageRequest = nil
        isLoaded = true
        for conversation in list.conversations { merge(conversation) }
        if list.activityChanged {
            // A conversation jumped above the cursor: start again from the
            // top, merging by id, and page on to where this pass had got to.
            target = [target, frontier, passMark, list.conversations.last?.activity].compactMap { $0 }.min()
            nextPageCursor = nil
            passMark = nil
            return requestPage()
        }
        if let last = list.conversations.last?.activity { passMark = min(passMark ?? last, last) }
        let covered: Int64?
        if let next = list.nextCursor {
            nextPageCursor = next
            covered = passMark
        } else {
            passComplete = true
            covered = .min
        }
        if let covered {
            // Shown before a resync, in the range this pass has listed, and
            // not listed: no longer in the list.
            for id in stale where byId[id].map({ $0.activity > covered }) ?? true {
                byId[id] = nil
                stale.remove(id)
            }
            frontier = min(frontier ?? covered, covered)
        }
        if needsNextPage { return requestPage() }
        target = nil
        return []
    }

    // MARK: Merging

    /// Per conversation the higher version wins, then the higher read marker.
    private static func rank(_ conversation: Conversation) -> (Int64, Int64) {
        (conversation.version, conversation.readSeq)
    }

    private static func rank(_ line: InboxActivity) -> (Int64, Int64) {
        (line.version, line.readSeq)
    }

    /// A conversation from a page, a fetch or `member_added`: its title and
    /// members as given, its line the newer of what is known.
    private mutating func merge(_ incoming: Conversation) {
        guard !removedIds.contains(incoming.id) else { return }
        var merged = details[incoming.id]?.applied(to: incoming) ?? incoming
        if let line = waiting.removeValue(forKey: incoming.id), Self.rank(line) > Self.rank(merged) {
            merged.take(line)
        }
        if let known = byId[incoming.id], Self.rank(known) > Self.rank(merged) {
            merged.take(InboxActivity(known))
        }
        byId[incoming.id] = merged
        stale.remove(incoming.id)
    }

    /// Fetches of lines that belong in the loaded part of the list: a
    /// conversation that just became active, not one further down that its
    /// page will bring.
    private mutating func fetchRequests() -> [InboxEffect] {
        guard let frontier else { return [] }
        let due = waiting.values.filter { line in
            byId[line.conversationId] == nil && fetching[line.conversationId] == nil && isAboveFrontier(line.activity)
        }
        return due.sorted { $0.activity > $1.activity }.map { line in
            fetching[line.conversationId] = pass
            return .fetchConversation(line.conversationId)
        }
    }

    /// Whether a conversation with this activity belongs in the part of
    /// the list loaded so far (false before the first page).
    private func isAboveFrontier(_ activity: Int64) -> Bool {
        guard let frontier else { return false }
        return frontier == .min || activity > frontier
    }

    private mutating func rebuild() {
        conversations = byId.values.sorted { lhs, rhs in
            lhs.activity != rhs.activity ? lhs.activity > rhs.activity : lhs.id.uuidString < rhs.id.uuidString
        }
    }
}

extension Conversation {
    /// Takes the line's state (newest message, version, activity, read marker).
    fileprivate mutating func take(_ line: InboxActivity) {
        lastSeq = line.lastSeq
        version = line.version
        activity = line.activity
        readSeq = line.readSeq
        unreadCount = line.unreadCount
        unreadMentions = line.unreadMentions
        lastMessage = line.lastMessage
    }
}
