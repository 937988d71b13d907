import Foundation
import ScrollbackModels
@testable import ScrollbackTimeline
import Testing

/// Windows away from the newest messages: a jump opens around a message,
/// detached from the live edge; newer pages load as the reader nears the
/// bottom, with the row the reader looks at kept in place; the window joins
/// the live edge when a page reaches the newest message, and every seq is
/// held once.
@Suite struct TimelineJumpTests {
    static func settings() -> TimelineLayoutSettings {
        TimelineLayoutSettings(viewportHeight: 600, prefetchThreshold: 300)
    }

    @Test func aJumpOpensAroundTheMessageDetachedFromTheLiveEdge() throws {
        var history = History(count: 500)
        var timeline = Timeline(conversationId: History.id, settings: Self.settings())
        timeline.apply(.pageLoaded(history.page(limit: 20)))
        let update = timeline.apply(.jumped(history.page(around: 100, limit: 20), focus: 100))
        #expect(!timeline.isAttached && timeline.hasNewer)
        #expect(timeline.seqRange == 90...109, "the newest page's rows are gone")
        #expect(!update.diff.removed.isEmpty && !update.diff.inserted.isEmpty)
        // Message 100 sits in the middle of the viewport.
        let layout = try #require(timeline.layout)
        let row = try #require(timeline.items.firstIndex { $0.seq == 100 })
        let middle = layout.items[row].offsetFromBottom + layout.items[row].height / 2 - timeline.scrollOffset
        #expect(abs(middle - 300) < 1)

        // A live message beyond the window moves only the newest known seq.
        history.messages.append(History.message(seq: 501))
        timeline.apply(.liveMessage(history.messages.last!))
        #expect(timeline.seqRange == 90...109)
        #expect(timeline.lastSeq == 501)
        #expect(timeline.resumeAfter == 501, "a subscription resumes after the newest known, not the window's")
        // An edit inside the window is applied; one beyond it waits for its page.
        history.messages[99].body = "edited"
        history.messages[99].version = 502
        timeline.apply(.messageUpdated(history.messages[99]))
        #expect(timeline.messages.first { $0.seq == 100 }?.body == "edited")
    }

    /// A jump's page read before a live edit arrives after it: the window
    /// it replaces had the edit, the page does not. The rows are current as
    /// of the page, so the changes since it are fetched and the edit is
    /// shown again (it was lost, and the window said it was current).
    @Test func aJumpToAPageOlderThanALiveEditFetchesTheChangesSinceThePage() {
        var history = History(count: 50)
        var timeline = Timeline(conversationId: History.id, settings: Self.settings())
        timeline.apply(.pageLoaded(history.page(limit: 20)))
        #expect(timeline.apply(.subscribed(lastSeq: 50, version: 50)).effects.isEmpty)
        let read = history.page(limit: 20)  // the jump's page, read now, answered later
        history.messages[39].body = "edited"
        history.messages[39].version = 51
        timeline.apply(.messageUpdated(history.messages[39]))
        let effects = timeline.apply(.jumped(read, focus: nil)).effects
        #expect(effects == [.catchUp(sinceVersion: 50)])
        #expect(timeline.apply(.changesApplied(history.changes(since: 50))).effects.isEmpty)
        #expect(timeline.messages.first { $0.seq == 40 }?.body == "edited")
        #expect(timeline.version == 51)
    }

    /// An older page read before a live edit of one of its rows arrives
    /// after it: the edit came while the row was not in the window, so it
    /// was not kept, and the page does not have it. The window is current
    /// only as of the page, so the changes since it are fetched.
    @Test func anOlderPageReadBeforeALiveEditOfItsRowsFetchesTheChangesSinceThePage() {
        var history = History(count: 50)
        var timeline = Timeline(conversationId: History.id, settings: Self.settings())
        timeline.apply(.pageLoaded(history.page(limit: 20)))
        #expect(timeline.apply(.subscribed(lastSeq: 50, version: 50)).effects.isEmpty)
        let read = history.page(before: 31, limit: 20)  // read now, answered later
        history.messages[24].body = "edited"
        history.messages[24].version = 51
        timeline.apply(.messageUpdated(history.messages[24]))
        #expect(timeline.version == 51)
        let effects = timeline.apply(.pageLoaded(read)).effects
        #expect(effects.contains(.catchUp(sinceVersion: 50)))
        #expect(timeline.version == 50, "the rows the page brought are current as of the page only")
        timeline.apply(.changesApplied(history.changes(since: 50)))
        #expect(timeline.messages.first { $0.seq == 25 }?.body == "edited")
        #expect(timeline.version == 51)
        // A page that brings no row new to the window asks for nothing.
        let again = timeline.apply(.pageLoaded(read)).effects
        #expect(!again.contains { if case .catchUp = $0 { true } else { false } })
        #expect(timeline.version == 51)
    }

    /// The same with a catch-up in flight from a version above the jump's
    /// page: its answer leaves out what lies between, which is fetched next.
    @Test func aCatchUpInFlightPastAJumpsPageIsFollowedByOneFromThePage() {
        var history = History(count: 48)
        var timeline = Timeline(conversationId: History.id, settings: Self.settings())
        let read = history.page(limit: 20)  // version 48
        history.messages[39].body = "edit 49"
        history.messages[39].version = 49
        timeline.apply(.pageLoaded(history.page(limit: 20)))
        history.messages[40].body = "edit 50"
        history.messages[40].version = 50
        history.messages[41].body = "edit 51"
        history.messages[41].version = 51
        #expect(timeline.apply(.subscribed(lastSeq: 48, version: 51)).effects == [.catchUp(sinceVersion: 49)])
        #expect(timeline.apply(.jumped(read, focus: nil)).effects.isEmpty, "one catch-up at a time")
        let next = timeline.apply(.changesApplied(history.changes(since: 49))).effects
        #expect(next == [.catchUp(sinceVersion: 48)])
        #expect(timeline.apply(.changesApplied(history.changes(since: 48))).effects.isEmpty)
        #expect(timeline.messages.filter { (40...42).contains($0.seq) }.map(\.body).sorted() == ["edit 49", "edit 50", "edit 51"])
        #expect(timeline.version == 51)
    }

    /// From a jump to message 20 of 1,000, the reader scrolls down again and
    /// again while messages keep arriving live: each newer page keeps the
    /// bottom row in place, the window reaches the newest message, joins the
    /// live edge (the live messages dropped meanwhile come by the gap fill),
    /// and holds every seq once.
    @Test func newerPagesKeepTheReadersRowAndJoinTheLiveEdge() throws {
        var history = History(count: 1_000)
        var timeline = Timeline(conversationId: History.id, settings: Self.settings())
        var effects = timeline.apply(.jumped(history.page(around: 20, limit: 20), focus: 20)).effects
        var rounds = 0
        while !timeline.isAttached || !effects.isEmpty {
            rounds += 1
            try #require(rounds < 500, "the window never reached the live edge")
            if rounds % 3 == 0 {
                history.messages.append(History.message(seq: Int64(history.messages.count + 1)))
                effects += timeline.apply(.liveMessage(history.messages.last!)).effects
            }
            guard !effects.isEmpty else {
                // The reader scrolls to the bottom of what is loaded.
                effects += timeline.apply(.scrolled(offsetFromBottom: 0)).effects
                continue
            }
            let effect = effects.removeFirst()
            let anchor = timeline.anchor
            let update = timeline.apply(TimelineTests.answer(effect, from: history))
            effects += update.effects
            if case .loadNewer = effect, let anchor, let layout = timeline.layout,
                let row = timeline.items.firstIndex(where: { $0.id == anchor.id })
            {
                // The row that was at the bottom edge is still there.
                #expect(abs(layout.items[row].offsetFromBottom - update.scrollOffset - anchor.distanceFromBottom) < 0.001)
            }
        }
        let range = try #require(timeline.seqRange)
        #expect(range.upperBound == Int64(history.messages.count))
        #expect(timeline.gaps.isEmpty)
        let seqs = timeline.messages.map(\.seq)
        #expect(Set(seqs).count == seqs.count && seqs == Array(range.reversed()), "every seq once, in order")
        #expect(timeline.messages == history.messages.filter { range.contains($0.seq) }.reversed())

        // Followed live from now on.
        history.messages.append(History.message(seq: Int64(history.messages.count + 1)))
        timeline.apply(.liveMessage(history.messages.last!))
        #expect(timeline.seqRange?.upperBound == Int64(history.messages.count))
    }

    /// A send from a detached window: its echo stays until the page that
    /// reaches its message brings it, and the acknowledgement stores nothing
    /// outside the window.
    @Test func anAcknowledgedSendBeyondADetachedWindowWaitsForItsPage() {
        var history = History(count: 300)
        var timeline = Timeline(conversationId: History.id, settings: Self.settings())
        timeline.apply(.jumped(history.page(around: 50, limit: 20), focus: 50))
        timeline.apply(.sendStarted(PendingSend(clientId: "c1", body: "hi", sender: "bob")))
        let stored = History.message(seq: 301, clientId: "c1")
        history.messages.append(stored)
        timeline.apply(.sendAcknowledged(clientId: "c1", message: stored))
        #expect(timeline.seqRange == 40...59)
        #expect(timeline.items.first?.isPending == true)
        timeline.apply(.jumped(history.page(limit: 20), focus: nil))
        #expect(timeline.isAttached)
        #expect(timeline.items.first?.message?.seq == 301)
        #expect(timeline.items.filter { $0.clientId == "c1" }.count == 1)
        #expect(timeline.scrollOffset == 0, "back at the bottom")
    }
}
