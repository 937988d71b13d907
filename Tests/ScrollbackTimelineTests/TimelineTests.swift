import Foundation
import PropertyBased
import ScrollbackLayout
import ScrollbackModels
import ScrollbackTimeline
import Testing

/// A conversation's history as the server would serve it.
struct History {
    static let id = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!
    var messages: [Message]

    init(count: Int) {
        messages = (1...max(count, 1)).prefix(count).map { History.message(seq: Int64($0)) }
    }

    static func message(seq: Int64, version: Int64? = nil, body: String? = nil, clientId: String? = nil, sender: String = "bob")
        -> Message
    {
        Message(
            conversationId: id, seq: seq, sender: sender, body: body ?? "message \(seq)", clientId: clientId,
            createdAt: Date(timeIntervalSince1970: 1_795_325_799 + Double(seq)), version: version ?? seq)
    }

    var version: Int64 { messages.map(\.version).max() ?? 0 }

    /// The page `GET .../messages?before=` would return, newest first.
    func page(before: Int64? = nil, limit: Int) -> MessagePage {
        let older = messages.filter { before == nil || $0.seq < before! }.sorted { $0.seq > $1.seq }
        let rows = Array(older.prefix(limit))
        return MessagePage(
            messages: rows, hasOlder: older.count > limit, hasNewer: before != nil && before! <= messages.count,
            lastSeq: Int64(messages.count), version: version)
    }

    /// `?after=`, newest first as every page.
    func page(after: Int64, limit: Int) -> MessagePage {
        let newer = messages.filter { $0.seq > after }.sorted { $0.seq < $1.seq }
        let rows = Array(newer.prefix(limit))
        return MessagePage(
            messages: rows.reversed(), hasOlder: after > 0, hasNewer: newer.count > limit,
            lastSeq: Int64(messages.count), version: version)
    }

    /// `?around=`: the message, the older half of the limit and the newer rest.
    func page(around seq: Int64, limit: Int) -> MessagePage {
        let older = messages.filter { $0.seq < seq }.sorted { $0.seq > $1.seq }.prefix(limit / 2)
        let newer = messages.filter { $0.seq >= seq }.sorted { $0.seq < $1.seq }
        let rows = Array(newer.prefix(limit - older.count).reversed()) + older
        return MessagePage(
            messages: rows, hasOlder: Int64(older.count) < seq - 1, hasNewer: newer.count > limit - older.count,
            lastSeq: Int64(messages.count), version: version)
    }

    /// `GET .../changes?since_version=`.
    func changes(since: Int64) -> ChangeSet {
        ChangeSet(messages: messages.filter { $0.version > since }.sorted { $0.version < $1.version }, hasMore: false, version: version)
    }
}

@Suite struct TimelineTests {
    @Test func theNewestPageIsNewestFirstAndAShortListGetsBottomPadding() throws {
        var timeline = Timeline(conversationId: History.id)
        let update = timeline.apply(.pageLoaded(History(count: 3).page(limit: 50)))
        #expect(timeline.items.map(\.seq) == [3, 2, 1])
        #expect(update.diff == TimelineDiff(inserted: [0, 1, 2]))
        #expect(update.effects.isEmpty, "no older history, nothing missing")
        let layout = try #require(timeline.layout)
        #expect(!layout.isScrollable)
        #expect(layout.bottomPadding == timeline.settings.viewportHeight - layout.contentHeight)
        #expect(layout.bottomPadding > 0)
    }

    @Test func aLiveMessageSeenTwiceIsOneRowAndTheNewerVersionWins() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 2).page(limit: 50)))
        timeline.apply(.liveMessage(History.message(seq: 3)))
        let again = timeline.apply(.liveMessage(History.message(seq: 3)))
        #expect(again.diff.isEmpty)
        let edited = History.message(seq: 3, version: 5, body: "edited")
        let update = timeline.apply(.messageUpdated(edited))
        #expect(update.diff == TimelineDiff(updated: [0]))
        timeline.apply(.liveMessage(History.message(seq: 3)))  // a stale copy arriving late
        #expect(timeline.messages.map(\.body) == ["edited", "message 2", "message 1"])
    }

    /// A reply shows its parent as it is now: an edit or a deletion of the
    /// parent, live or through `changes`, and also of a parent outside the
    /// window, changes the preview of every reply held; a reaction is an
    /// update like an edit.
    @Test func repliesShowTheirParentAsItIsNowAndReactionsAreUpdates() {
        var timeline = Timeline(conversationId: History.id)
        var parent = History.message(seq: 1, body: "where?")
        var reply = History.message(seq: 2, body: "here", sender: "carol")
        reply.replyTo = ReplyPreview(of: parent)
        reply.threadRoot = 1
        timeline.apply(.pageLoaded(MessagePage(messages: [reply, parent], hasOlder: false, hasNewer: false, lastSeq: 2, version: 2)))
        parent.body = "where exactly?"
        parent.version = 4
        timeline.apply(.messageUpdated(parent))
        #expect(timeline.messages.first?.replyTo?.excerpt == "where exactly?")
        // A stale copy of the reply (read before the edit) does not bring the old preview back.
        timeline.apply(.liveMessage(reply))
        #expect(timeline.messages.first?.replyTo?.excerpt == "where exactly?")
        parent.deleted = true
        parent.body = ""
        parent.version = 5
        timeline.apply(.changesApplied(ChangeSet(messages: [parent], hasMore: false, version: 5)))
        #expect(timeline.messages.first?.replyTo == ReplyPreview(seq: 1, sender: "bob", excerpt: nil, deleted: true))

        var reacted = timeline.messages.first!
        reacted.version = 6
        reacted.reactions = [ReactionSummary(emoji: "👍", count: 1, me: true)]
        let update = timeline.apply(.messageUpdated(reacted))
        #expect(update.diff == TimelineDiff(updated: [0]))
        #expect(timeline.messages.first?.reactions == reacted.reactions)
    }

    @Test func aLocalEchoShowsUntilTheAckReplacesItInPlace() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 2).page(limit: 50)))
        let started = timeline.apply(.sendStarted(PendingSend(clientId: "c1", body: "hi", sender: "alice")))
        #expect(started.diff == TimelineDiff(inserted: [0]))
        #expect(timeline.items[0].isPending && timeline.items[0].id == .local(clientId: "c1"))
        let acked = timeline.apply(
            .sendAcknowledged(clientId: "c1", message: History.message(seq: 3, body: "hi", clientId: "c1", sender: "alice")))
        #expect(acked.diff == TimelineDiff(updated: [0]))
        #expect(timeline.items[0].id == .local(clientId: "c1") && timeline.items[0].seq == 3)
        // Its live message, after the ack, changes nothing.
        #expect(timeline.apply(.liveMessage(History.message(seq: 3, body: "hi", clientId: "c1", sender: "alice"))).diff.isEmpty)
    }

    @Test func theLiveMessageOfOurOwnSendBeforeItsAckAlsoReplacesTheEcho() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 1).page(limit: 50)))
        timeline.apply(.sendStarted(PendingSend(clientId: "c1", body: "hi", sender: "alice")))
        let live = timeline.apply(.liveMessage(History.message(seq: 2, body: "hi", clientId: "c1", sender: "alice")))
        #expect(live.diff == TimelineDiff(updated: [0]))
        timeline.apply(.sendAcknowledged(clientId: "c1", message: History.message(seq: 2, body: "hi", clientId: "c1", sender: "alice")))
        #expect(timeline.items.map(\.id) == [.local(clientId: "c1"), .seq(1)])
    }

    @Test func aFailedSendStaysMarkedAndCanBeRetried() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.sendStarted(PendingSend(clientId: "c1", body: "hi", sender: "alice")))
        timeline.apply(.sendFailed(clientId: "c1", reason: "offline"))
        #expect(timeline.items.first?.state == .failed(PendingSend(clientId: "c1", body: "hi", sender: "alice"), reason: "offline"))
        timeline.apply(.sendRetried(clientId: "c1"))
        #expect(timeline.items.first?.state == .sending(PendingSend(clientId: "c1", body: "hi", sender: "alice")))
    }

    @Test func aLiveMessageAfterAGapAsksToFillIt() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 5).page(limit: 50)))
        let update = timeline.apply(.liveMessage(History.message(seq: 9)))
        #expect(update.effects == [.fillGap(after: 5, through: 8)])
        #expect(timeline.gaps == [6...8])
        // Asked once: a further live message does not ask again for the same gap.
        #expect(timeline.apply(.liveMessage(History.message(seq: 10))).effects.isEmpty)
        timeline.apply(.pageLoaded(History(count: 10).page(after: 5, limit: 50)))
        #expect(timeline.gaps.isEmpty)
        #expect(timeline.items.map(\.seq) == (1...10).reversed().map { Int64($0) })
    }

    @Test func subscribedAheadOfThePageAsksForTheMissingMessagesAndTheEdits() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 5).page(limit: 50)))
        let update = timeline.apply(.subscribed(lastSeq: 8, version: 10))
        #expect(update.effects == [.catchUp(sinceVersion: 5), .fillGap(after: 5, through: 8)])
    }

    @Test func aResumedBacklogDoesNotHideAnEditMadeWhileAway() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 8).page(limit: 50)))
        #expect(timeline.apply(.subscribed(lastSeq: 8, version: 8)).effects.isEmpty)
        timeline.apply(.liveMessage(History.message(seq: 9)))
        #expect(timeline.version == 9)
        // The socket drops; meanwhile 4 is edited (version 10) and 10 is sent (version 11).
        timeline.apply(.unsubscribed)
        timeline.apply(.liveMessage(History.message(seq: 10, version: 11)))
        #expect(timeline.version == 9, "the backlog says nothing of version 10")
        let resumed = timeline.apply(.subscribed(lastSeq: 10, version: 11))
        #expect(resumed.effects == [.catchUp(sinceVersion: 9)])
    }

    @Test func scrollingNearTheTopAsksForTheOlderPageOnce() {
        var timeline = Timeline(conversationId: History.id, settings: TimelineLayoutSettings(viewportHeight: 300, prefetchThreshold: 100))
        let history = History(count: 200)
        let first = timeline.apply(.pageLoaded(history.page(limit: 50)))
        #expect(first.effects.isEmpty, "the newest page fills the screen; the reader is at the bottom")
        let top = timeline.layout!.maxScrollOffset
        let near = timeline.apply(.scrolled(offsetFromBottom: top - 50))
        #expect(near.effects == [.loadOlder(before: 151)])
        #expect(timeline.apply(.scrolled(offsetFromBottom: top - 40)).effects.isEmpty)
        let older = timeline.apply(.pageLoaded(history.page(before: 151, limit: 50)))
        #expect(older.diff.inserted == Array(50..<100), "older rows append at the end: nothing on screen moves")
        #expect(older.scrollOffset == top - 40)
    }

    @Test func aReaderScrolledUpKeepsTheSameRowsInViewWhenMessagesArrive() throws {
        var timeline = Timeline(conversationId: History.id, settings: TimelineLayoutSettings(viewportHeight: 300))
        timeline.apply(.pageLoaded(History(count: 60).page(limit: 60)))
        timeline.apply(.scrolled(offsetFromBottom: 500))
        let before = try #require(timeline.layout)
        let anchorIndex = try #require(before.visible?.first)
        let anchorSeq = timeline.items[anchorIndex].seq
        let distance = before.items[anchorIndex].offsetFromBottom - 500
        let update = timeline.apply(.liveMessage(History.message(seq: 61, body: "a long new message " + String(repeating: "word ", count: 40))))
        let after = try #require(timeline.layout)
        let newIndex = try #require(timeline.items.firstIndex { $0.seq == anchorSeq })
        #expect(after.items[newIndex].offsetFromBottom - update.scrollOffset == distance)
        #expect(update.scrollOffset > 500)
        // A reader at the bottom stays there and sees the new message.
        timeline.apply(.scrolled(offsetFromBottom: 0))
        #expect(timeline.apply(.liveMessage(History.message(seq: 62))).scrollOffset == 0)
    }

    @Test func aDeletionIsAHeightChangeNotARemoval() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 3).page(limit: 50)))
        var tombstone = History.message(seq: 2, version: 4, body: "")
        tombstone.deleted = true
        let update = timeline.apply(.messageUpdated(tombstone))
        #expect(update.diff == TimelineDiff(updated: [1]))
        #expect(timeline.items.count == 3 && timeline.items[1].message?.deleted == true)
    }

    @Test func measuredHeightsReplaceEstimates() throws {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 2).page(limit: 50)))
        let update = timeline.apply(.heightMeasured(.seq(2), 123))
        #expect(update.diff == TimelineDiff(updated: [0]))
        #expect(try #require(timeline.layout).items[0].height == 123)
    }

    static func picture(_ width: Int, _ height: Int) -> ScrollbackModels.Attachment {
        ScrollbackModels.Attachment(
            id: UUID(), kind: .image, contentType: "image/png", size: 1_000, filename: "p.png", width: width, height: height,
            url: "/p")
    }

    /// Rows with pictures are as tall as their pictures will be, before any
    /// byte of them is loaded: the default settings' 292.5 pt column and
    /// 320 pt maximum, 56 pt file rows, 4 pt between attachments.
    @Test func rowsWithAttachmentsAreEstimatedWithTheirBoxes() throws {
        var timeline = Timeline(conversationId: History.id)
        var wide = History.message(seq: 1, body: "look")
        wide.attachments = [Self.picture(1200, 900)]  // scaled down to 292.5 x 219.375
        var small = History.message(seq: 2, body: "")
        small.attachments = [Self.picture(100, 80)]  // kept at 100 x 80, never scaled up
        var several = History.message(seq: 3, body: "")
        several.attachments = [
            Self.picture(600, 1600),  // 120 x 320
            ScrollbackModels.Attachment(id: UUID(), kind: .file, contentType: "application/pdf", size: 9, filename: "a.pdf", url: "/a"),
        ]
        timeline.apply(.pageLoaded(MessagePage(messages: [several, small, wide], hasOlder: false, hasNewer: false, lastSeq: 3, version: 3)))
        let oneLine = 22.0 + 16
        let rows = timeline.items
        #expect(rows.map { timeline.height(of: $0) } == [320 + 4 + 56, 80, oneLine + 219.375])
        #expect(timeline.estimate(of: rows[2]).attachmentBoxes == [.init(shape: .media, width: 292.5, height: 219.375)])
        #expect(timeline.estimate(of: rows[1]).attachmentBoxes == [.init(shape: .media, width: 100, height: 80)])
        #expect(timeline.estimate(of: rows[1]).textHeight == 0, "a message of a picture alone has no text line")
        #expect(timeline.estimate(of: rows[0]).attachmentBoxes.map(\.shape) == [.media, .row])
        // The same rule as the library's (and so as the server's page hints).
        let settings = timeline.settings
        for row in rows {
            #expect(
                timeline.estimate(of: row)
                    == (try settings.metrics.estimate(
                        text: row.body, attachments: row.attachments.map {
                            LayoutAttachment(kindName: $0.kind.rawValue, pixelWidth: $0.width, pixelHeight: $0.height)
                        }, viewportWidth: settings.viewportWidth)))
        }
        #expect(try #require(timeline.layout).contentHeight == 380 + 80 + oneLine + 219.375 + 2 * settings.spacing)
        // A wider screen: the wide picture grows with the column, the small one stays as it is.
        timeline.settings.viewportWidth = 1024
        #expect(timeline.estimate(of: timeline.items[2]).attachmentBoxes == [.init(shape: .media, width: 1200.0 * 320 / 900, height: 320)])
        #expect(timeline.height(of: timeline.items[1]) == 80)
        // A deleted message is a one-line tombstone, whatever it carried.
        var deleted = wide
        deleted.deleted = true
        deleted.version = 4
        timeline.apply(.messageUpdated(deleted))
        #expect(timeline.height(of: timeline.items[2]) == oneLine)
    }

    /// The echo of a send with a picture is as tall as the stored message
    /// that replaces it: nothing moves when the acknowledgement arrives.
    @Test func anEchoWithAPictureKeepsItsHeightWhenStored() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 1).page(limit: 50)))
        let picture = Self.picture(2000, 1000)
        timeline.apply(.sendStarted(PendingSend(clientId: "c1", body: "sunset", sender: "alice", attachments: [picture])))
        let echo = timeline.height(of: timeline.items[0])
        #expect(echo == 38 + 146.25)  // 1000 * 292.5 / 2000
        var stored = History.message(seq: 2, body: "sunset", clientId: "c1", sender: "alice")
        stored.attachments = [picture]
        timeline.apply(.sendAcknowledged(clientId: "c1", message: stored))
        #expect(!timeline.items[0].isPending && timeline.height(of: timeline.items[0]) == echo)
    }

    @Test func afterRemovalNothingIsAskedForAndPendingSendsFail() {
        var timeline = Timeline(conversationId: History.id)
        timeline.apply(.pageLoaded(History(count: 2).page(limit: 50)))
        timeline.apply(.sendStarted(PendingSend(clientId: "c1", body: "hi", sender: "alice")))
        timeline.apply(.memberRemoved)
        #expect(timeline.isRemoved)
        if case .failed = timeline.items[0].state {} else { Issue.record("the pending send did not fail") }
        #expect(timeline.apply(.liveMessage(History.message(seq: 9))).effects.isEmpty)
    }

    /// Pages, live messages (duplicated), edits, scrolling, dropped and
    /// resumed subscriptions, and the catch-ups and gap fills the timeline
    /// asks for (answered at once or after later changes), interleaved at
    /// random: the timeline ends with exactly what a fresh fetch of its
    /// window gives. The socket delivers its frames in order; reads
    /// (pages, change sets) arrive in any order, read at one time and
    /// delivered after what changed since.
    @Test(arguments: 0..<60)
    func anyInterleavingEndsAsAFreshFetch(seed: UInt64) throws {
        var rng = Xoshiro(seed: (seed, 7, 11, 13))
        for _ in 0..<8 { _ = rng.next() }  // away from the seed's small first words
        let before = Int.random(in: 0...100, using: &rng)
        let total = before + Int.random(in: 20...120, using: &rng)
        var history = History(count: before)
        var timeline = Timeline(conversationId: History.id)
        var pendingEffects: [TimelineEffect] = []
        var socket: [TimelineAction] = []
        var reads: [TimelineAction] = []
        var connected = true
        func deliver(_ action: TimelineAction) {
            pendingEffects += timeline.apply(action).effects
        }
        deliver(.pageLoaded(history.page(limit: 20)))  // the screen opens
        deliver(.subscribed(lastSeq: Int64(before), version: history.version))
        // The server's history grows while the client loads and listens.
        for step in 0..<(total * 3) {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...3 where history.messages.count < total:
                let message = History.message(seq: Int64(history.messages.count + 1), version: history.version + 1)
                history.messages.append(message)
                if connected {
                    socket.append(.liveMessage(message))
                    if Bool.random(using: &rng) { socket.append(.liveMessage(message)) }  // duplicated
                }
            case 4 where !history.messages.isEmpty:
                let index = Int.random(in: 0..<history.messages.count, using: &rng)
                history.messages[index].body = "edited at \(step)"
                history.messages[index].version = history.version + 1
                if connected { socket.append(.messageUpdated(history.messages[index])) }
            case 5:
                reads.append(.pageLoaded(history.page(limit: 20)))
            case 6 where connected:
                // The connection drops: the frames not delivered are lost.
                socket.removeAll()
                deliver(.unsubscribed)
                connected = false
            case 7:
                // The reader scrolls to the top: older pages load.
                if let top = timeline.layout?.maxScrollOffset { deliver(.scrolled(offsetFromBottom: top)) }
            case 8 where !connected:
                deliver(.subscribed(lastSeq: Int64(history.messages.count), version: history.version))
                connected = true
            default:
                break
            }
            if !socket.isEmpty, Bool.random(using: &rng) { deliver(socket.removeFirst()) }
            // Answer one requested effect from the history as it is now:
            // delivered at once, or later.
            if !pendingEffects.isEmpty, Bool.random(using: &rng) {
                let answer = Self.answer(pendingEffects.removeFirst(), from: history)
                if Bool.random(using: &rng) { deliver(answer) } else { reads.append(answer) }
            }
            if !reads.isEmpty, Bool.random(using: &rng) {
                deliver(reads.remove(at: Int.random(in: 0..<reads.count, using: &rng)))
            }
        }
        for action in socket + reads { deliver(action) }
        // Reconnect: resubscribe, and do what the timeline asks until it asks nothing.
        deliver(.unsubscribed)
        deliver(.subscribed(lastSeq: Int64(history.messages.count), version: history.version))
        var rounds = 0
        while !pendingEffects.isEmpty, rounds < 1_000 {
            deliver(Self.answer(pendingEffects.removeFirst(), from: history))
            rounds += 1
        }
        let range = try #require(timeline.seqRange, "seed \(seed): nothing loaded")
        let fresh = history.messages.filter { range.contains($0.seq) }.sorted { $0.seq > $1.seq }
        #expect(timeline.messages == fresh, "seed \(seed)")
        #expect(timeline.gaps.isEmpty)
        #expect(range.upperBound == Int64(history.messages.count))
        #expect(timeline.version == history.version, "seed \(seed): current as of the newest change")
    }

    static func answer(_ effect: TimelineEffect, from history: History) -> TimelineAction {
        switch effect {
        case .loadOlder(let before): .pageLoaded(history.page(before: before, limit: 20))
        case .loadNewer(let after), .fillGap(let after, _): .pageLoaded(history.page(after: after, limit: 20))
        case .catchUp(let since): .changesApplied(history.changes(since: since))
        }
    }
}

@Suite struct TimelineRetentionTests {
    static func message(_ seq: Int64) -> Message {
        Message(conversationId: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!, seq: seq, sender: "a", body: "m\(seq)",
                clientId: nil, createdAt: Date(timeIntervalSince1970: Double(seq)), version: seq)
    }

    /// A page or a change set whose `firstSeq` passed messages the window
    /// holds: they go, and nothing older is left to load.
    @Test func messagesBelowFirstSeqLeaveTheWindow() {
        var timeline = Timeline(conversationId: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)
        timeline.apply(.pageLoaded(MessagePage(messages: (1...20).reversed().map(Self.message), hasOlder: false, hasNewer: false, lastSeq: 20, version: 20)))
        #expect(timeline.messages.count == 20)
        timeline.apply(.changesApplied(ChangeSet(messages: [], hasMore: false, version: 21, firstSeq: 11)))
        #expect(timeline.messages.map(\.seq).sorted() == Array(11...20) && !timeline.hasOlder)
        timeline.apply(.pageLoaded(MessagePage(messages: (16...20).reversed().map(Self.message), hasOlder: false, hasNewer: false, lastSeq: 20, version: 22, firstSeq: 16)))
        #expect(timeline.messages.map(\.seq).sorted() == Array(16...20) && !timeline.hasOlder)
    }
}
