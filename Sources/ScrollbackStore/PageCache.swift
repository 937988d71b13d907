import Foundation
import Metrics
import NIOConcurrencyHelpers
import ScrollbackModels

/// Newest pages in memory, answered only while they are provably current.
///
/// An entry is one reader's newest page of one conversation (a reader's
/// own: reactions carry `me`), as the page statement read it in one
/// snapshot at the conversation's version `v`, together with the fact that
/// the reader was a member then. It stays only while nothing newer than `v`
/// can have happened without this instance knowing:
///
/// - every change to a conversation's messages takes its next version and
///   sends a notification with it, which PostgreSQL delivers at commit, in
///   commit order; a notification of a version above `v` drops the
///   conversation's entries, and so does any member change;
/// - a write through this instance drops them before it is answered (its
///   notification may arrive later), and so does one whose outcome is
///   unknown;
/// - notifications are only known while the change feed's listener is
///   connected: when it is lost every entry goes, and nothing is kept until
///   LISTEN is in place again;
/// - a read from the database that started before a change it cannot see
///   is not kept: each fill takes a ticket when it starts, and a change to
///   its conversation while it runs (a notification of a version above the
///   one it read, any member change, a lost listener) voids the ticket.
///
/// A request may ask for `min_version`: an entry below it is not used (a
/// client that wrote through another instance reads its write even before
/// that instance's notification arrives here).
///
/// An entry holds the page as the JSON it is answered with (`EncodedPage`):
/// a hit copies bytes written when the page was read, and splices in the
/// reader's `blocked_sender` flags; nothing is encoded again. The reader's
/// `me` on reactions is in the bytes already (an entry is one reader's).
///
/// Bounded in bytes (what the entries hold: their JSON and a span per
/// message): the least recently used entries go first.
final class PageCache: Sendable {
    struct Key: Hashable, Sendable {
        var conversation: UUID
        var user: UserID
    }

    /// A fill in progress: where the cache's state was when it started.
    struct Ticket: Sendable {
        var conversation: UUID
        var epoch: UInt64
        var clock: UInt64
    }

    private struct Entry {
        /// The newest page as read, newest first: at most `fillLimit` messages.
        var page: EncodedPage
        /// The read asked for more than there are: the whole conversation is here.
        var complete: Bool
        var bytes: Int
        var lastUsed: UInt64
    }

    /// What happened to a conversation while fills of it were running.
    private struct Pending {
        var fills = 0
        var maxVersion: Int64 = 0
        /// The clock of the last invalidation of the conversation.
        var invalidatedAt: UInt64 = 0
    }

    private struct State {
        var listening = false
        /// Moves on every `.listening` and `.lost`: a ticket of another epoch is void.
        var epoch: UInt64 = 0
        /// Moves on every fill, use and invalidation.
        var clock: UInt64 = 0
        var entries: [Key: Entry] = [:]
        var readers: [UUID: Set<UserID>] = [:]
        var pending: [UUID: Pending] = [:]
        var bytes = 0
        var hits = 0
        var misses = 0
    }

    /// What the cache did and holds, for tests.
    struct Statistics: Equatable {
        var hits: Int
        var misses: Int
        var entries: Int
        var bytes: Int
        var listening: Bool
        var epoch: UInt64
    }

    var statistics: Statistics {
        state.withLockedValue {
            Statistics(
                hits: $0.hits, misses: $0.misses, entries: $0.entries.count, bytes: $0.bytes, listening: $0.listening,
                epoch: $0.epoch)
        }
    }

    /// The most bytes of entries kept; 0 keeps none.
    let capacity: Int
    /// How many messages a fill reads at least: a later request for a
    /// smaller or equal newest page is answered from it.
    let fillLimit: Int
    private let state = NIOLockedValueBox(State())
    private let hitCounter: Counter
    private let missCounter: Counter
    private let byteGauge: Gauge
    private let entryGauge: Gauge

    init(capacity: Int, fillLimit: Int = APILimits.defaultPageLimit, factory: any MetricsFactory) {
        self.capacity = capacity
        self.fillLimit = fillLimit
        hitCounter = Counter(label: "scrollback_page_cache_requests_total", dimensions: [("result", "hit")], factory: factory)
        missCounter = Counter(
            label: "scrollback_page_cache_requests_total", dimensions: [("result", "miss")], factory: factory)
        byteGauge = Gauge(label: "scrollback_page_cache_bytes", factory: factory)
        entryGauge = Gauge(label: "scrollback_page_cache_entries", factory: factory)
        byteGauge.record(0)
        entryGauge.record(0)
        Gauge(label: "scrollback_page_cache_capacity_bytes", factory: factory).record(capacity)
    }

    var isEnabled: Bool { capacity > 0 }

    // MARK: What the feed and the writes say

    /// The change feed's listener: LISTEN is in place, or the connection is gone.
    func handle(_ signal: FeedSignal) {
        switch signal {
        case .listening, .lost:
            update { state in
                state.listening = signal == .listening
                state.epoch &+= 1
                state.entries.removeAll()
                state.readers.removeAll()
                state.bytes = 0
            }
        case .event(.changed(let conversation, _, let version)):
            changed(conversation, to: version)
        case .event(.memberAdded(let conversation, _)), .event(.memberRemoved(let conversation, _)):
            invalidate(conversation)
        case .event(.read), .event(.typing), .event(.presence), .event(.memberUpdated), .event(.blocks), .event(.erased),
            .event(.revoked), .event(.profile), .event(.conversationUpdated):
            break  // nothing a page holds
        }
    }

    /// A message of `conversation` changed (sent, edited, deleted, reacted
    /// to): its version is now at least `version`.
    func changed(_ conversation: UUID, to version: Int64) {
        update { state in
            if var pending = state.pending[conversation] {
                pending.maxVersion = max(pending.maxVersion, version)
                state.pending[conversation] = pending
            }
            for user in state.readers[conversation] ?? [] {
                let key = Key(conversation: conversation, user: user)
                if let entry = state.entries[key], entry.page.version < version { Self.drop(key, from: &state) }
            }
        }
    }

    /// Something about `conversation` changed, at a version not known: a
    /// member was added or removed, or a write through this instance ended
    /// (with or without an answer from the database). Its entries go, and
    /// the fills running now are not kept.
    func invalidate(_ conversation: UUID) {
        update { state in
            state.clock &+= 1
            if var pending = state.pending[conversation] {
                pending.invalidatedAt = state.clock
                state.pending[conversation] = pending
            }
            for user in state.readers[conversation] ?? [] {
                Self.drop(Key(conversation: conversation, user: user), from: &state)
            }
        }
    }

    // MARK: Pages

    /// The page for `anchor` and `limit` from `user`'s entry of
    /// `conversation`, when there is one at `minVersion` or above that holds
    /// it: the newest page, or one `after` a seq within the entry.
    func page(
        of conversation: UUID, for user: UserID, anchor: PageAnchor, limit: Int, minVersion: Int64
    ) -> EncodedPage? {
        guard isEnabled, Self.answers(anchor) else { return nil }
        let page: EncodedPage? = state.withLockedValue { state in
            let key = Key(conversation: conversation, user: user)
            guard state.listening, var entry = state.entries[key], entry.page.version >= minVersion,
                let page = Self.slice(entry.page, complete: entry.complete, anchor: anchor, limit: limit)
            else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            state.clock &+= 1
            entry.lastUsed = state.clock
            state.entries[key] = entry
            return page
        }
        if page == nil { missCounter.increment() } else { hitCounter.increment() }
        return page
    }

    /// Whether a page with this anchor may come from the cache.
    static func answers(_ anchor: PageAnchor) -> Bool {
        switch anchor {
        case .newest, .after: true
        case .before, .around: false
        }
    }

    /// Starts a fill of `conversation`; nil when nothing may be kept now
    /// (the cache is off, or the listener is not in place).
    func beginFill(of conversation: UUID) -> Ticket? {
        guard isEnabled else { return nil }
        return state.withLockedValue { state in
            guard state.listening else { return nil }
            state.pending[conversation, default: Pending()].fills += 1
            return Ticket(conversation: conversation, epoch: state.epoch, clock: state.clock)
        }
    }

    /// Ends a fill: `page` (the newest page read with `limit`, nil when the
    /// read failed) is kept for `user` unless something voided the ticket.
    func finishFill(_ ticket: Ticket, for user: UserID, page: EncodedPage?, limit: Int) {
        update { state in
            let conversation = ticket.conversation
            guard var pending = state.pending[conversation] else { return }
            pending.fills -= 1
            state.pending[conversation] = pending.fills > 0 ? pending : nil
            guard let page, state.listening, ticket.epoch == state.epoch, pending.maxVersion <= page.version,
                pending.invalidatedAt <= ticket.clock
            else { return }
            let key = Key(conversation: conversation, user: user)
            // Fills still running of this conversation started before this
            // one ended: none of them may be kept below this version (an
            // instance that has answered a version never answers an older one).
            if var others = state.pending[conversation] {
                others.maxVersion = max(others.maxVersion, page.version)
                state.pending[conversation] = others
            }
            if let kept = state.entries[key], kept.page.version > page.version { return }
            let bytes = page.memoryBytes
            guard bytes <= capacity else { return }
            Self.drop(key, from: &state)
            state.clock &+= 1
            state.entries[key] = Entry(
                page: page, complete: page.messages.count < limit, bytes: bytes, lastUsed: state.clock)
            state.readers[conversation, default: []].insert(user)
            state.bytes += bytes
            if state.bytes > capacity { Self.evict(from: &state, toAtMost: capacity - capacity / 8) }
        }
    }

    // MARK: Pieces

    /// The page a read of `anchor` and `limit` would return, cut from a
    /// newest page `page` (newest first), or nil when `page` does not hold
    /// it. The same assembly as a read from the database, so the same page.
    static func slice(_ page: EncodedPage, complete: Bool, anchor: PageAnchor, limit: Int) -> EncodedPage? {
        let messages = page.messages
        let older: [EncodedPage.Span]
        let newer: [EncodedPage.Span]
        switch anchor {
        case .newest where limit == messages.count || (complete && limit > messages.count):
            // The page as read: the same rows and flags as assembling it again.
            return page
        case .newest:
            guard limit <= messages.count || complete else { return nil }
            older = Array(messages.prefix(limit))
            newer = []
        case .after(let seq):
            // Every message after `seq` is here when the oldest one held is at most `seq + 1`.
            guard complete || (messages.last.map { $0.seq <= seq &+ 1 } ?? false) else { return nil }
            older = []
            newer = Array(messages.reversed().lazy.filter { $0.seq > seq }.prefix(limit))
        case .before, .around:
            return nil
        }
        let assembled = PageAssembly.assemble(
            anchor: anchor, limit: limit, firstSeq: page.firstSeq, lastSeq: page.lastSeq, older: older, newer: newer,
            seq: \.seq)
        return page.cut(assembled.rows, hasOlder: assembled.hasOlder, hasNewer: assembled.hasNewer)
    }

    private static func drop(_ key: Key, from state: inout State) {
        guard let entry = state.entries.removeValue(forKey: key) else { return }
        state.bytes -= entry.bytes
        state.readers[key.conversation]?.remove(key.user)
        if state.readers[key.conversation]?.isEmpty == true { state.readers[key.conversation] = nil }
    }

    /// Drops the least recently used entries until at most `bytes` remain.
    private static func evict(from state: inout State, toAtMost bytes: Int) {
        let byAge = state.entries.sorted { $0.value.lastUsed < $1.value.lastUsed }
        for (key, _) in byAge where state.bytes > bytes {
            drop(key, from: &state)
        }
    }

    /// Changes the state, and the gauges with it (under the lock, so they
    /// never show an older state after a newer one).
    private func update(_ body: (inout State) -> Void) {
        state.withLockedValue { state in
            body(&state)
            byteGauge.record(state.bytes)
            entryGauge.record(state.entries.count)
        }
    }
}
