import Foundation
import ScrollbackClient
@testable import scrollback_load
import Testing

/// The verdict of a faults run: what must be zero makes it fail.
@Suite struct FaultTableTests {
    static func exchange(_ status: Int?, retryAfter: String? = nil, seconds: Double = 0.01) -> ScrollbackClient.Exchange {
        ScrollbackClient.Exchange(method: "POST", path: "/v1/conversations/x/messages", status: status, retryAfter: retryAfter, duration: .seconds(seconds))
    }

    static func table(_ record: (inout FaultTable) -> Void) -> FaultTable {
        var table = FaultTable(hangAfterSeconds: 15)
        table.begin("postgres-kill")
        record(&table)
        table.removed(after: 3)
        table.recovered(in: 1.5)
        return table
    }

    @Test func unavailableAnswersWithRetryAfterAndTransportFailuresPass() {
        let table = Self.table { table in
            table.record(Self.exchange(201))
            table.record(Self.exchange(503, retryAfter: "1"))
            table.record(Self.exchange(nil))
            table.acknowledged()
        }
        #expect(table.passed)
        let row = table.rows[0]
        #expect((row.operations, row.unavailable, row.noAnswer, row.acknowledged) == (3, 1, 1, 1))
        #expect(table.text.contains("postgres-kill"))
    }

    @Test func aServerErrorAHangOrA503WithoutRetryAfterFails() {
        #expect(!Self.table { $0.record(Self.exchange(500)) }.passed)
        #expect(!Self.table { $0.record(Self.exchange(502)) }.passed)
        #expect(!Self.table { $0.record(Self.exchange(503)) }.passed)
        #expect(!Self.table { $0.record(Self.exchange(201, seconds: 16)) }.passed)
        #expect(Self.table { $0.record(Self.exchange(201, seconds: 14)) }.passed)
    }

    @Test func anInstanceThatDidNotRecoverFails() {
        var table = FaultTable(hangAfterSeconds: 15)
        table.begin("instance-kill")
        table.removed(after: 1)
        table.recovered(in: nil)
        #expect(!table.passed)
        #expect(table.text.contains("NOT RECOVERED"))
    }

    @Test func aViolationIsCountedUnderTheFaultAfterWhichItWasFirstSeen() {
        let lost = DeliveryLedger.Violation(conversation: UUID(), subscriber: "bob", kind: .lost, problem: "lost seqs 5")
        let twice = DeliveryLedger.Violation(conversation: UUID(), subscriber: nil, kind: .duplicated, problem: "seq 3 appears more than once in the history")
        var table = FaultTable(hangAfterSeconds: 15)
        table.begin("baseline")
        table.recovered(in: 0)
        table.checked([])
        table.begin("row-lock")
        table.recovered(in: 0.1)
        table.checked([lost])
        table.begin("network-cut")
        table.recovered(in: 0.2)
        table.checked([lost, twice])
        #expect(table.rows.map(\.lost) == [0, 1, 0])
        #expect(table.rows.map(\.duplicated) == [0, 0, 1])
        #expect(table.rows.map(\.passed) == [true, false, false])
        #expect(!table.passed)
    }

    @Test func anEmptyTablePassesNothing() {
        #expect(!FaultTable(hangAfterSeconds: 15).passed)
    }
}
