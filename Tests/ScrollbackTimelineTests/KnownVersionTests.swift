import ScrollbackTimeline
import Testing

/// The one record of how new what is held is: what a window is current as
/// of, where its subscription carries every change from, the highest
/// version seen.
@Suite struct KnownVersionTests {
    @Test func aChangeSeenLiveCountsOnlyOnceWhatIsHeldIsCaughtUpToTheSubscription() {
        var versions = KnownVersion()
        versions.caughtUp(to: 5)  // a page at version 5
        #expect(versions.subscribed(at: 9) == 5, "changes 6 to 9 were made before the subscription: fetch them")
        versions.sawLive(11)
        #expect(versions.current == 5 && versions.seen == 11, "6 to 9 are still missing")
        versions.caughtUp(to: 9)
        versions.sawLive(12)
        #expect(versions.current == 12)
        #expect(versions.subscribed(at: 12) == nil, "current: nothing to catch up")
    }

    @Test func versionsOnlyEverGrow() {
        var versions = KnownVersion()
        versions.saw(7)
        versions.saw(3)
        versions.caughtUp(to: 6)
        versions.caughtUp(to: 2)
        #expect(versions.seen == 7 && versions.current == 6)
        #expect(versions.isCurrent(asOf: 6) && !versions.isCurrent(asOf: 7))
        #expect(versions.liveFrom == nil)
        versions.sawLive(9)
        #expect(versions.current == 6, "not subscribed: a live change says nothing of the rest")
    }

    @Test func aLostSubscriptionStopsLiveChangesFromMovingWhatIsHeld() {
        var versions = KnownVersion()
        versions.caughtUp(to: 8)
        #expect(versions.subscribed(at: 8) == nil)
        versions.sawLive(10)
        #expect(versions.current == 10)
        versions.unsubscribed()
        // Away, an edit takes version 11; the resumed backlog brings a message at 12.
        versions.sawLive(12)
        #expect(versions.current == 10 && versions.seen == 12, "11 was not seen: nothing proves it applied")
        #expect(versions.subscribed(at: 12) == 10, "catch up from 10, the edit at 11 included")
    }

    @Test func rowsReadBeforeWhatIsHeldMakeItCurrentOnlyAsOfTheirRead() {
        var versions = KnownVersion()
        versions.caughtUp(to: 8)
        #expect(versions.subscribed(at: 8) == nil)
        versions.sawLive(10)
        versions.joined(readAt: 9)
        #expect(versions.current == 9 && versions.seen == 10, "an edit at 10 of a row the read brought is not held")
        versions.sawLive(11)
        #expect(versions.current == 9, "10 is still missing from what the read brought")
        versions.caughtUp(to: 11)  // the changes since 9
        versions.sawLive(12)
        #expect(versions.current == 12, "caught up: live changes move what is held on again")
        versions.joined(readAt: 13)
        #expect(versions.current == 12 && versions.seen == 13, "a newer read says nothing of the rest")
    }
}
