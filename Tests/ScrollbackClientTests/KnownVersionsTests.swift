import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import Testing

/// What the kit remembers of each conversation's version, and so asks of
/// the pages it reads (`min_version`): its writes, pages and changes, and
/// the live frames that carry one.
@Suite struct KnownVersionsTests {
    static func message(_ id: UUID, seq: Int64, version: Int64) -> Message {
        Message(
            conversationId: id, seq: seq, sender: "alice", body: "hi", clientId: nil,
            createdAt: Date(timeIntervalSince1970: 1_800_000_000), version: version)
    }

    @Test func framesRaiseTheVersionAndNothingLowersIt() {
        let versions = KnownVersions()
        let id = UUID()
        let other = UUID()
        #expect(versions.version(of: id) == nil)
        versions.saw(.subscribed(conversationId: id, lastSeq: 3, version: 5))
        #expect(versions.version(of: id) == 5)
        versions.saw(.message(Self.message(id, seq: 4, version: 6)))
        #expect(versions.version(of: id) == 6)
        versions.saw(.messageUpdated(Self.message(id, seq: 2, version: 9)))
        versions.saw(.ack(clientId: "c", message: Self.message(id, seq: 5, version: 8), replayed: false))
        #expect(versions.version(of: id) == 9, "an older version never lowers it")
        versions.saw(.typing(conversationId: id, userId: "bob"))
        versions.saw(.message(Self.message(other, seq: 1, version: 1)))
        #expect(versions.version(of: id) == 9 && versions.version(of: other) == 1)
    }
}
