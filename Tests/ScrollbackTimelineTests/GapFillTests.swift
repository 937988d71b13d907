import Foundation
import ScrollbackModels
import ScrollbackTimeline
import Testing

/// The one rule of a gap fill, shared by a feed's timeline and the ordered live stream.
struct GapFillTests {
    @Test func aFillReadsAfterTheNewestEachPageBroughtUntilItReachesItsEnd() {
        let history = History(count: 20)
        var gap = GapFill(after: 5, through: 14)
        #expect(gap.isOpen)
        #expect(gap.take(history.page(after: 5, limit: 4)).map(\.seq) == [6, 7, 8, 9])
        #expect(gap.after == 9 && gap.isOpen)
        // A page past the end brings only what the fill is for.
        #expect(gap.take(history.page(after: 9, limit: 10)).map(\.seq) == [10, 11, 12, 13, 14])
        #expect(!gap.isOpen)
    }

    @Test func aPageWithNothingNewerEndsTheFill() {
        var gap = GapFill(after: 5, through: 14)
        #expect(gap.take(History(count: 5).page(after: 5, limit: 10)).isEmpty)
        #expect(!gap.isOpen)
    }

    @Test func aFillUnderWayCoversAGapInsideWhatIsLeftOfIt() {
        var gap = GapFill(after: 5, through: 14)
        _ = gap.take(History(count: 20).page(after: 5, limit: 4))
        #expect(gap.covers(after: 9, through: 14) && gap.covers(after: 11, through: 12))
        #expect(!gap.covers(after: 7, through: 14), "it reads after 9 next: 8 and 9 missing again are not its")
        #expect(!gap.covers(after: 9, through: 15))
    }
}
