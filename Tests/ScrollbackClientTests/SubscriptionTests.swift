import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import Testing

/// `Subscription` on its own: the lifecycle every subscriber of the socket
/// follows, fed inputs and answering with steps, with no socket or timer.
struct SubscriptionTests {
    typealias Step = LiveProtocol.Step
    static let retry = RetryPolicy(initialDelay: .milliseconds(100), maxDelay: .milliseconds(800))
    static let conversation = UUID(uuidString: "5A1D0C3E-7B2F-4E61-9C8D-0F1E2D3C4B5A")!

    static func inbox(after cursor: String? = nil) -> Subscription {
        Subscription(topic: .inbox(after: cursor), retry: retry, subscribeTimeout: .seconds(10), seed: 42)
    }

    /// Started, its socket open and `inbox_subscribed` in: live.
    static func liveInbox() -> Subscription {
        var subscription = inbox()
        _ = subscription.handle(.start)
        _ = subscription.handle(.opened)
        _ = subscription.handle(.received(.inboxSubscribed(cursor: "1")))
        subscription.goLive()
        return subscription
    }

    /// The wait of a reconnect timer among `steps`.
    static func backoff(_ steps: [Step]) -> Duration? {
        steps.lazy.compactMap { if case .startTimer(.reconnect, let wait) = $0 { wait } else { nil } }.first
    }

    static func emits(_ steps: [Step]) -> Bool {
        steps.contains { if case .emit = $0 { true } else { false } }
    }

    @Test func itSubscribesItsTopicFromWhereItsParentSaysOnceTheSocketOpens() {
        var subscription = Self.inbox()
        #expect(subscription.handle(.start) == [.connect, .startTimer(.subscribeDeadline(attempt: 1), after: .seconds(10))])
        #expect(subscription.phase == .connecting)
        subscription.topic = .inbox(after: "17")
        #expect(subscription.handle(.opened) == [.send(.subscribeInbox(after: "17"))])
        #expect(subscription.phase == .subscribing)
        // A second `opened` (late news) sends nothing again.
        #expect(subscription.handle(.opened).isEmpty)

        var conversation = Subscription(
            topic: .conversation(Self.conversation, afterSeq: 4), retry: Self.retry, subscribeTimeout: .seconds(3), seed: 1)
        _ = conversation.handle(.start)
        #expect(
            conversation.handle(.opened) == [.send(.subscribe(conversationId: Self.conversation, afterSeq: 4, presence: true))])
    }

    @Test func aSocketNotSubscribedByTheDeadlineIsGivenUpAndLateTimersAreIgnored() {
        var subscription = Self.inbox()
        _ = subscription.handle(.start)
        _ = subscription.handle(.opened)
        let late = subscription.handle(.timerFired(.subscribeDeadline(attempt: 1)))
        #expect(late.first == .disconnect && Self.backoff(late) != nil)
        #expect(!Self.emits(late), "never live: no loss to report")
        #expect(subscription.phase == .waiting && subscription.failures == 1)
        #expect(subscription.handle(.timerFired(.reconnect(attempt: 1))).first == .connect)
        #expect(subscription.attempt == 2)
        // The first attempt's timers are superseded.
        #expect(subscription.handle(.timerFired(.subscribeDeadline(attempt: 1))).isEmpty)
        #expect(subscription.handle(.timerFired(.reconnect(attempt: 1))).isEmpty)
        _ = subscription.handle(.opened)
        _ = subscription.handle(.received(.inboxSubscribed(cursor: "3")))
        subscription.goLive()
        #expect(subscription.handle(.timerFired(.subscribeDeadline(attempt: 2))).isEmpty, "subscribed in time")
        #expect(subscription.phase == .live)
    }

    @Test func theBackoffGrowsWithEachFailureAndStartsOverOnceConfirmed() throws {
        var subscription = Self.inbox()
        _ = subscription.handle(.start)
        var waits: [Duration] = []
        for failure in 1...6 {
            let wait = try #require(Self.backoff(subscription.handle(.failed(reason: "connection refused"))))
            let ceiling = min(Self.retry.initialDelay * (1 << (failure - 1)), Self.retry.maxDelay)
            #expect(wait >= ceiling / 2 && wait <= ceiling, "failure \(failure): \(wait)")
            #expect(subscription.failures == failure)
            waits.append(wait)
            _ = subscription.handle(.timerFired(.reconnect(attempt: failure)))
        }
        #expect(waits.last! > waits.first!, "the waits grow")
        _ = subscription.handle(.opened)
        // Another topic's confirmation is not this one's.
        _ = subscription.handle(.received(.subscribed(conversationId: Self.conversation, lastSeq: 1, version: 1)))
        #expect(subscription.failures == 6)
        _ = subscription.handle(.received(.inboxSubscribed(cursor: "9")))
        #expect(subscription.failures == 0)
        subscription.goLive()
        let lost = subscription.handle(.closed(code: 1001, reason: "going away"))
        #expect(lost.prefix(2) == [.disconnect, .emit(.disconnected(reason: "going away"))])
        #expect(try #require(Self.backoff(lost)) <= Self.retry.initialDelay)
    }

    @Test func theNetworkComingBackEndsTheWaitAndResetsTheBackoff() {
        var subscription = Self.inbox()
        _ = subscription.handle(.start)
        _ = subscription.handle(.failed(reason: "no route"))
        _ = subscription.handle(.timerFired(.reconnect(attempt: 1)))
        _ = subscription.handle(.failed(reason: "no route"))
        #expect(subscription.failures == 2)
        #expect(subscription.handle(.networkAvailable) == [.connect, .startTimer(.subscribeDeadline(attempt: 3), after: .seconds(10))])
        #expect(subscription.failures == 0)
        // While connecting it only resets the backoff.
        _ = subscription.handle(.failed(reason: "no route"))
        _ = subscription.handle(.timerFired(.reconnect(attempt: 3)))
        #expect(subscription.handle(.networkAvailable).isEmpty)
        #expect(subscription.failures == 0)
    }

    @Test func theBackgroundGivesUpTheSocketUntilTheForeground() {
        var subscription = Self.liveInbox()
        let background = subscription.handle(.backgrounded)
        #expect(background == [.disconnect, .emit(.disconnected(reason: "The app is in the background."))])
        #expect(subscription.phase == .suspended)
        // Nothing reconnects in the background: no timer, no network.
        #expect(subscription.handle(.networkAvailable).isEmpty)
        #expect(subscription.handle(.timerFired(.reconnect(attempt: 1))).isEmpty)
        #expect(subscription.handle(.closed(code: nil, reason: "The app is in the background.")).isEmpty)
        #expect(subscription.handle(.foregrounded) == [.connect, .startTimer(.subscribeDeadline(attempt: 2), after: .seconds(10))])
        #expect(subscription.phase == .connecting && subscription.failures == 0)

        // Waiting out a backoff, the background cancels the wait.
        var waiting = Self.inbox()
        _ = waiting.handle(.start)
        _ = waiting.handle(.failed(reason: "refused"))
        #expect(waiting.handle(.backgrounded) == [.disconnect])
        #expect(waiting.handle(.timerFired(.reconnect(attempt: 1))).isEmpty)
        #expect(waiting.handle(.foregrounded).first == .connect)
    }

    @Test func aTokenRefusedTwiceInARowEndsButOneThatExpiresWhileLiveIsReplaced() throws {
        var subscription = Self.inbox()
        _ = subscription.handle(.start)
        _ = subscription.handle(.opened)
        let first = subscription.handle(.received(.error(code: .unauthorized, message: "The token is not valid.", ref: nil)))
        #expect(first.first == .disconnect && Self.backoff(first) != nil)
        #expect(subscription.handle(.closed(code: 4401, reason: "not authenticated")).isEmpty, "given up already")
        _ = subscription.handle(.timerFired(.reconnect(attempt: 1)))
        _ = subscription.handle(.opened)
        #expect(subscription.handle(.closed(code: 4401, reason: "not authenticated")) == [.finish(.unauthorized(message: "not authenticated"))])
        #expect(subscription.phase == .finished)
        #expect(subscription.handle(.foregrounded).isEmpty && subscription.handle(.start).isEmpty)

        // On a live socket the token expired: a fresh one, and the count starts over.
        var live = Self.liveInbox()
        let expired = live.handle(.closed(code: 4401, reason: "token expired"))
        #expect(expired.prefix(2) == [.disconnect, .emit(.disconnected(reason: "token expired"))])
        #expect(try #require(Self.backoff(expired)) <= Self.retry.initialDelay)
        _ = live.handle(.timerFired(.reconnect(attempt: 1)))
        _ = live.handle(.opened)
        #expect(live.handle(.closed(code: 4401, reason: "refused")).first == .disconnect, "one refusal is not yet a reason to stop")
        _ = live.handle(.timerFired(.reconnect(attempt: 2)))
        _ = live.handle(.opened)
        #expect(live.handle(.closed(code: 4401, reason: "refused")) == [.finish(.unauthorized(message: "refused"))])
    }

    @Test func aFailingTokenProviderEndsIt() {
        var subscription = Self.inbox()
        _ = subscription.handle(.start)
        #expect(
            subscription.handle(.tokenUnavailable(reason: "keychain locked"))
                == [.finish(.unauthorized(message: "The token provider failed: keychain locked"))])
        #expect(subscription.handle(.opened).isEmpty)
    }

    @Test func aRateLimitedSubscriptionWaitsAtLeastItsRetryAfter() throws {
        var subscription = Self.inbox()
        _ = subscription.handle(.start)
        _ = subscription.handle(.opened)
        let limited = subscription.handle(
            .received(.error(code: .rateLimited, message: "Too many subscriptions.", ref: nil, retryAfter: 30)))
        #expect(limited.first == .disconnect)
        #expect(try #require(Self.backoff(limited)) == .seconds(30), "far longer than the backoff of one failure")
        // Without retry_after, the backoff alone.
        _ = subscription.handle(.timerFired(.reconnect(attempt: 1)))
        _ = subscription.handle(.opened)
        let unavailable = subscription.handle(.received(.error(code: .serviceUnavailable, message: "Try again.", ref: nil)))
        #expect(try #require(Self.backoff(unavailable)) <= Self.retry.initialDelay * 2)

        // An error about something else (a conversation's send) is not the
        // subscription's; once live, none is.
        var conversation = Subscription(
            topic: .conversation(Self.conversation, afterSeq: 0), retry: Self.retry, subscribeTimeout: .seconds(10), seed: 3)
        _ = conversation.handle(.start)
        _ = conversation.handle(.opened)
        #expect(conversation.handle(.received(.error(code: .rateLimited, message: "Slow down.", ref: "c1", retryAfter: 5))).isEmpty)
        let own = conversation.handle(
            .received(.error(code: .rateLimited, message: "Slow down.", ref: Self.conversation.uuidString.lowercased(), retryAfter: 5)))
        #expect(try #require(Self.backoff(own)) == .seconds(5))
        var live = Self.liveInbox()
        #expect(live.handle(.received(.error(code: .rateLimited, message: "Slow down.", ref: nil, retryAfter: 5))).isEmpty)
        #expect(live.phase == .live)
    }

    @Test func cancellingEndsItAndEverythingAfterIsIgnored() {
        var subscription = Self.liveInbox()
        #expect(subscription.handle(.cancel) == [.finish(nil)])
        #expect(subscription.handle(.closed(code: 1000, reason: nil)).isEmpty)
        #expect(subscription.handle(.timerFired(.reconnect(attempt: 1))).isEmpty)
    }
}
