import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import Testing

/// The client's one socket as a value: who it is opened and closed for,
/// which frames go to whom, and what a loss or a release does to the others.
@Suite struct SocketRoutingTests {
    typealias Effect = SocketRouting.Effect
    static let first = UUID(uuidString: "11111111-1111-4111-8111-111111111111")!
    static let second = UUID(uuidString: "22222222-2222-4222-8222-222222222222")!

    static func message(_ id: UUID, _ seq: Int64) -> Message {
        Message(
            conversationId: id, seq: seq, sender: "bob", body: "m\(seq)", clientId: nil,
            createdAt: Date(timeIntervalSince1970: 1_800_000_000), version: seq)
    }

    /// Subscribers 1 and 2 of the two conversations and 3 of the inbox, all on open socket 1.
    static func threeOnOneSocket() -> SocketRouting {
        var routing = SocketRouting()
        _ = routing.handle(.join(1, .conversation(first)))
        _ = routing.handle(.join(2, .conversation(second)))
        _ = routing.handle(.join(3, .inbox))
        for subscriber in 1...3 { _ = routing.handle(.want(subscriber)) }
        _ = routing.handle(.socket(1, .opened))
        _ = routing.handle(.send(1, .subscribe(conversationId: first, afterSeq: 0)))
        _ = routing.handle(.send(2, .subscribe(conversationId: second, afterSeq: 0)))
        _ = routing.handle(.send(3, .subscribeInbox(after: nil)))
        return routing
    }

    @Test func everySubscriberWaitsForOneSocketAndIsToldWhenItOpens() {
        var routing = SocketRouting()
        _ = routing.handle(.join(1, .conversation(Self.first)))
        _ = routing.handle(.join(2, .conversation(Self.second)))
        _ = routing.handle(.join(3, .inbox))
        #expect(routing.handle(.want(1)) == [.open(1)])
        #expect(routing.handle(.want(2)).isEmpty, "the socket opening serves it too")
        #expect(routing.handle(.want(3)).isEmpty)
        #expect(routing.handle(.socket(1, .opened)) == [.tell(1, .opened), .tell(2, .opened), .tell(3, .opened)])
        _ = routing.handle(.release(1))
        #expect(routing.handle(.want(1)) == [.tell(1, .opened)], "an open socket is handed out at once")
    }

    @Test func framesGoToTheSubscribersOfTheirConversationAndInboxFramesToTheInbox() {
        var routing = Self.threeOnOneSocket()
        let subscribed = ServerFrame.subscribed(conversationId: Self.first, lastSeq: 4, version: 4)
        #expect(routing.handle(.socket(1, .received(subscribed))) == [.tell(1, .received(subscribed))])
        let message = ServerFrame.message(Self.message(Self.second, 1))
        #expect(routing.handle(.socket(1, .received(message))) == [.tell(2, .received(message))])
        let typing = ServerFrame.typing(conversationId: Self.first, userId: "bob")
        #expect(routing.handle(.socket(1, .received(typing))) == [.tell(1, .received(typing))])
        let inbox = ServerFrame.inboxSubscribed(cursor: "7")
        #expect(routing.handle(.socket(1, .received(inbox))) == [.tell(3, .received(inbox))])
        let failed = ServerFrame.error(code: .serviceUnavailable, message: "later", ref: Self.second.uuidString.lowercased())
        #expect(routing.handle(.socket(1, .received(failed))) == [.tell(2, .received(failed))])
        let refused = ServerFrame.error(code: .unauthorized, message: "expired", ref: nil)
        #expect(routing.handle(.socket(1, .received(refused))).count == 3, "about the socket: everyone's")
        #expect(routing.handle(.socket(1, .received(.pong))).isEmpty)
        // A later `subscribed` of a conversation already live would read as a new subscription.
        #expect(routing.handle(.socket(1, .received(subscribed))).isEmpty)
    }

    @Test func aLossIsToldToEveryoneAndTheNextWantOpensOneNewSocket() {
        var routing = Self.threeOnOneSocket()
        let lost = LiveProtocol.Input.closed(code: 1001, reason: "going away")
        #expect(routing.handle(.socket(1, lost)) == [.tell(1, lost), .tell(2, lost), .tell(3, lost)])
        #expect(routing.handle(.socket(1, .received(.pong))).isEmpty, "news of the socket lost is dropped")
        #expect(routing.handle(.want(2)) == [.open(2)])
        #expect(routing.handle(.want(1)).isEmpty)
        #expect(routing.handle(.want(3)).isEmpty)
        #expect(routing.handle(.socket(2, .opened)).count == 3)
        // Each resumes from its own position, as it says.
        #expect(
            routing.handle(.send(1, .subscribe(conversationId: Self.first, afterSeq: 9)))
                == [.write(.subscribe(conversationId: Self.first, afterSeq: 9), on: 2)])
        #expect(
            routing.handle(.send(2, .subscribe(conversationId: Self.second, afterSeq: 3)))
                == [.write(.subscribe(conversationId: Self.second, afterSeq: 3), on: 2)])
    }

    @Test func theLastSubscriberToLeaveClosesTheSocket() {
        var routing = Self.threeOnOneSocket()
        #expect(routing.handle(.leave(1)) == [.write(.unsubscribe(conversationId: Self.first), on: 1)])
        #expect(routing.handle(.leave(3)) == [.write(.unsubscribeInbox, on: 1)])
        #expect(routing.handle(.leave(2)) == [.write(.unsubscribe(conversationId: Self.second), on: 1), .close(1)])
        #expect(routing.currentSocket == nil && routing.subscriberCount == 0)
    }

    @Test func aReleaseUnsubscribesOnlyWhenNobodyElseListensToTheTopic() {
        var routing = Self.threeOnOneSocket()
        _ = routing.handle(.join(4, .conversation(Self.first)))
        _ = routing.handle(.socket(1, .received(.message(Self.message(Self.first, 6)))))
        #expect(routing.handle(.want(4)) == [.tell(4, .opened)])
        // A second subscriber of a conversation resumes no later than what the socket carried.
        #expect(
            routing.handle(.send(4, .subscribe(conversationId: Self.first, afterSeq: nil)))
                == [.write(.subscribe(conversationId: Self.first, afterSeq: 6), on: 1)])
        #expect(routing.handle(.release(4)).isEmpty, "subscriber 1 still listens")
        #expect(routing.handle(.release(1)) == [.write(.unsubscribe(conversationId: Self.first), on: 1)])
    }

    @Test func aSubscriberGivingUpAnOpeningSocketGivesItUpForEveryone() {
        var routing = SocketRouting()
        _ = routing.handle(.join(1, .conversation(Self.first)))
        _ = routing.handle(.join(2, .inbox))
        _ = routing.handle(.want(1))
        _ = routing.handle(.want(2))
        #expect(
            routing.handle(.release(1)) == [.close(1), .tell(2, .failed(reason: "The socket did not open in time."))])
        #expect(routing.handle(.socket(1, .opened)).isEmpty, "the hung upgrade that answers late is ignored")
        #expect(routing.handle(.want(2)) == [.open(2)])
    }

    @Test func aTokenProviderThatFailsIsToldToThoseWaiting() {
        var routing = SocketRouting()
        _ = routing.handle(.join(1, .conversation(Self.first)))
        _ = routing.handle(.want(1))
        let failed = LiveProtocol.Input.tokenUnavailable(reason: "keychain locked")
        #expect(routing.handle(.socket(1, failed)) == [.tell(1, failed)])
        #expect(routing.currentSocket == nil)
    }
}
