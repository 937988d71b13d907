import Foundation
import ScrollbackModels
@testable import scrollback_load
import Testing

/// The load test's final check, fed what a broken service would produce.
@Suite struct DeliveryLedgerTests {
    static let conversation = UUID()

    static func message(_ seq: Int64, _ clientId: String?) -> Message {
        Message(
            conversationId: conversation, seq: seq, sender: "alice", body: "m\(seq)", clientId: clientId,
            createdAt: Date(timeIntervalSince1970: 0), version: seq, editedAt: nil, deleted: false)
    }

    /// Sends 1...5 acknowledged, one subscriber from the start.
    static func healthy() -> (DeliveryLedger, [UUID: [Message]]) {
        var ledger = DeliveryLedger(clientIdPrefix: "run")
        ledger.subscribe(0, name: "bob", to: conversation)
        ledger.connected(0, lastSeq: 0)
        for seq in Int64(1)...5 {
            ledger.acknowledged("run-\(seq)", seq: seq, in: conversation)
            ledger.delivered(0, seq: seq, clientId: "run-\(seq)")
        }
        return (ledger, [conversation: (Int64(1)...5).reversed().map { message($0, "run-\($0)") }])
    }

    @Test func aCleanRunHasNoViolation() {
        let (ledger, histories) = Self.healthy()
        #expect(ledger.check(histories: histories).isEmpty)
    }

    @Test func aMessageASubscriberNeverReceivedIsALoss() {
        var ledger = DeliveryLedger(clientIdPrefix: "run")
        ledger.subscribe(0, name: "bob", to: Self.conversation)
        ledger.connected(0, lastSeq: 0)
        for seq in Int64(1)...5 {
            ledger.acknowledged("run-\(seq)", seq: seq, in: Self.conversation)
            if seq != 3 { ledger.delivered(0, seq: seq, clientId: "run-\(seq)") }
        }
        let violations = ledger.check(histories: Self.healthy().1)
        #expect(violations == [.init(conversation: Self.conversation, subscriber: "bob", kind: .lost, problem: "lost seqs 3")])
    }

    /// A subscription opened again resumes after what was counted; the
    /// opening it replaced may still hand over the message it had in hand,
    /// which the new one brings too. Counted twice, a healthy server would
    /// look like one that duplicates.
    @Test func aReplacedOpeningsLastMessageIsNotCountedAgain() {
        var ledger = DeliveryLedger(clientIdPrefix: "run")
        ledger.subscribe(0, name: "bob", to: Self.conversation)
        ledger.connected(0, lastSeq: 0)
        for seq in Int64(1)...5 { ledger.acknowledged("run-\(seq)", seq: seq, in: Self.conversation) }
        for seq in Int64(1)...3 { ledger.delivered(0, seq: seq, clientId: "run-\(seq)") }
        let (opening, after) = ledger.reopen(0)
        #expect(opening == 1 && after == 3)
        ledger.delivered(0, opening: 0, seq: 4, clientId: "run-4")  // the old opening, after the reopen
        ledger.connected(0, opening: 1, lastSeq: 5)
        for seq in Int64(4)...5 { ledger.delivered(0, opening: 1, seq: seq, clientId: "run-\(seq)") }
        #expect(ledger.check(histories: Self.healthy().1).isEmpty)
        #expect(ledger.position(of: 0) == 5)
    }

    @Test func aMessageReceivedTwiceOrOutOfOrderIsCaught() {
        var (ledger, histories) = Self.healthy()
        ledger.delivered(0, seq: 5, clientId: "run-5")
        #expect(ledger.check(histories: histories).map(\.problem) == ["received seqs 5 more than once"])

        var reordered = DeliveryLedger(clientIdPrefix: "run")
        reordered.subscribe(0, name: "bob", to: Self.conversation)
        reordered.connected(0, lastSeq: 0)
        for seq: Int64 in [1, 3, 2, 4, 5] {
            reordered.acknowledged("run-\(seq)", seq: seq, in: Self.conversation)
            reordered.delivered(0, seq: seq, clientId: "run-\(seq)")
        }
        histories = Self.healthy().1
        #expect(reordered.check(histories: histories).map(\.problem) == ["received seq 2 after seq 3"])
    }

    @Test func anAcknowledgedSendMissingFromTheHistoryOrAGapIsCaught() {
        let (ledger, _) = Self.healthy()
        let history = [Int64(5), 4, 2, 1].map { Self.message($0, "run-\($0)") }
        let problems = ledger.check(histories: [Self.conversation: history]).map(\.problem)
        #expect(problems.contains("the history has gaps at seqs 3"))
        #expect(problems.contains("acknowledged send run-3 (seq 3) is not in the history"))
    }

    @Test func aSendStoredTwiceOrStoredWithoutAnAcknowledgementIsCaught() {
        var (ledger, histories) = Self.healthy()
        histories[Self.conversation]!.insert(Self.message(6, "run-2"), at: 0)
        ledger.delivered(0, seq: 6, clientId: "run-2")
        #expect(ledger.check(histories: histories).map(\.problem) == ["send run-2 is stored 2 times (seqs 2, 6)"])

        (ledger, histories) = Self.healthy()
        histories[Self.conversation]!.insert(Self.message(6, "run-9"), at: 0)
        ledger.delivered(0, seq: 6, clientId: "run-9")
        #expect(ledger.check(histories: histories).map(\.problem) == ["seq 6 (run-9) is stored but was never sent or was refused"])
        // Unless its answer was lost: then it may be stored, once.
        ledger.unanswered("run-9", in: Self.conversation)
        #expect(ledger.check(histories: histories).isEmpty)
    }

    @Test func aSubscriberThatNeverCameUpOrWasNotReadIsCaught() {
        var (ledger, histories) = Self.healthy()
        ledger.subscribe(1, name: "carol", to: Self.conversation)
        #expect(ledger.check(histories: histories).map(\.problem) == ["never subscribed"])
        histories = [:]
        #expect(ledger.check(histories: histories).map(\.problem).contains("its history could not be read"))
    }

    @Test func seqListsAreWrittenAsRanges() {
        #expect(DeliveryLedger.list([1, 2, 3, 7, 9, 10]) == "1...3, 7, 9...10")
    }
}
