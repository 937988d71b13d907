import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import Testing

/// `InboxReducer` on its own: events in, the state and the effects out,
/// with no server, socket, storage or task.
struct InboxReducerTests {
    typealias Step = LiveProtocol.Step
    static let a = UUID(uuidString: "00000000-0000-4000-8000-00000000000A")!
    static let b = UUID(uuidString: "00000000-0000-4000-8000-00000000000B")!
    static let first = InboxPageRequest(cursor: nil, pass: 0)

    static func state(storage: Bool = false) -> InboxState {
        InboxState(
            storedRows: 1, hasStorage: storage, retry: RetryPolicy(initialDelay: .milliseconds(100)),
            subscribeTimeout: .seconds(10), seed: 7)
    }

    /// The effects that are not publishes (the work asked for).
    static func work(_ effects: [InboxFeedEffect]) -> [InboxFeedEffect] {
        effects.filter { if case .publish = $0 { false } else { true } }
    }

    /// The steps the subscription takes, answering a `.live` input.
    static func steps(_ effects: [InboxFeedEffect]) -> [Step] {
        effects.lazy.compactMap { if case .steps(let steps) = $0 { steps } else { nil } }.first ?? []
    }

    static func published(_ effects: [InboxFeedEffect]) -> [Inbox] {
        effects.compactMap { if case .publish(let inbox, _) = $0 { inbox } else { nil } }
    }

    /// Started, its socket open and `inbox_subscribed` at cursor 10 in.
    static func subscribed(storage: Bool = false) -> InboxState {
        var state = state(storage: storage)
        _ = InboxReducer.reduce(&state, .start)
        if storage { _ = InboxReducer.reduce(&state, .restored([], failure: nil)) }
        _ = InboxReducer.reduce(&state, .live(.start))
        _ = InboxReducer.reduce(&state, .live(.opened))
        _ = InboxReducer.reduce(&state, .live(.received(.inboxSubscribed(cursor: "10"))))
        return state
    }

    @Test func startingSubscribesAndAStorageIsReadFirst() {
        var state = Self.state()
        #expect(InboxReducer.reduce(&state, .start) == [.subscribe])
        #expect(InboxReducer.reduce(&state, .start).isEmpty, "once only")

        var stored = Self.state(storage: true)
        #expect(InboxReducer.reduce(&stored, .start) == [.restore])
        let row = InboxTests.conversation(Self.a, version: 3, unread: 2, activity: 30)
        let restored = InboxReducer.reduce(&stored, .restored([row], failure: nil))
        // Shown before anything is asked of the server.
        #expect(Self.published(restored).map(\.conversations) == [[row]])
        #expect(Self.work(restored) == [.subscribe])
        #expect(stored.stored == [row] && stored.inbox.unreadCount == 2)
    }

    @Test func theSocketSubscribesTheInboxAndTheFirstPageFollowsTheSubscription() {
        var state = Self.state()
        _ = InboxReducer.reduce(&state, .start)
        #expect(
            InboxReducer.reduce(&state, .live(.start))
                == [.steps([.connect, .startTimer(.subscribeDeadline(attempt: 1), after: .seconds(10))])])
        #expect(InboxReducer.reduce(&state, .live(.opened)) == [.steps([.send(.subscribeInbox(after: nil))])])
        #expect(!state.inbox.isLive && state.subscription.phase == .subscribing)
        let subscribed = InboxReducer.reduce(&state, .live(.received(.inboxSubscribed(cursor: "10"))))
        #expect(Self.work(subscribed) == [.loadPage(Self.first), .steps([])])
        #expect(state.inbox.isLive && state.subscription.phase == .live && state.inbox.cursor == "10")
        #expect(Self.published(subscribed).last?.isLive == true)
        // Subscribed in time: its deadline is nothing.
        #expect(Self.steps(InboxReducer.reduce(&state, .live(.timerFired(.subscribeDeadline(attempt: 1))))).isEmpty)
    }

    @Test func aLostSocketResumesFromTheCursorOfTheLastFrame() {
        var state = Self.subscribed()
        _ = InboxReducer.reduce(&state, .live(.received(InboxTests.activity(Self.a, version: 2, activity: 20, cursor: "12"))))
        let lost = InboxReducer.reduce(&state, .live(.closed(code: 1006, reason: "connection reset")))
        let steps = Self.steps(lost)
        #expect(steps.first == .disconnect)
        #expect(!steps.contains { if case .emit = $0 { true } else { false } }, "the loss is the list's, not an event")
        #expect(!state.inbox.isLive && state.subscription.phase == .waiting)
        #expect(Self.published(lost).last?.isLive == false)
        #expect(Self.steps(InboxReducer.reduce(&state, .live(.timerFired(.reconnect(attempt: 1))))).first == .connect)
        #expect(InboxReducer.reduce(&state, .live(.opened)) == [.steps([.send(.subscribeInbox(after: "12"))])])
    }

    @Test func anErrorBeforeSubscribedIsAFailureWaitedOutForItsRetryAfter() throws {
        var state = Self.state()
        _ = InboxReducer.reduce(&state, .start)
        _ = InboxReducer.reduce(&state, .live(.start))
        _ = InboxReducer.reduce(&state, .live(.opened))
        let limited = InboxReducer.reduce(
            &state, .live(.received(.error(code: .rateLimited, message: "Slow down.", ref: nil, retryAfter: 20))))
        let steps = Self.steps(limited)
        #expect(steps.first == .disconnect)
        #expect(steps.contains(.startTimer(.reconnect(attempt: 1), after: .seconds(20))))
        #expect(Self.work(limited) == [.steps(steps)], "no page before the inbox is subscribed")
        #expect(!state.inbox.isLive && state.phase == .running)
    }

    @Test func aTokenRefusedTwiceEndsTheFeedWithUnauthorized() {
        var state = Self.state()
        _ = InboxReducer.reduce(&state, .start)
        _ = InboxReducer.reduce(&state, .live(.start))
        _ = InboxReducer.reduce(&state, .live(.opened))
        let once = InboxReducer.reduce(&state, .live(.closed(code: 4401, reason: "not authenticated")))
        #expect(!once.contains(.end) && state.phase == .running)
        _ = InboxReducer.reduce(&state, .live(.timerFired(.reconnect(attempt: 1))))
        _ = InboxReducer.reduce(&state, .live(.opened))
        let twice = InboxReducer.reduce(&state, .live(.closed(code: 4401, reason: "not authenticated")))
        let refusal = ScrollbackError.unauthorized(message: "not authenticated")
        #expect(Self.work(twice) == [.steps([.finish(refusal)]), .end])
        #expect(state.phase == .stopped && state.failure == refusal)
        // Whatever comes after: the runner of the subscription is told to finish, nothing else.
        #expect(InboxReducer.reduce(&state, .live(.opened)) == [.steps([.finish(nil)])])
        #expect(InboxReducer.reduce(&state, .pageAnswered(Self.first, .success(InboxTests.list([], next: nil)))).isEmpty)
    }

    @Test func aFailingTokenProviderEndsTheFeed() {
        var state = Self.state()
        _ = InboxReducer.reduce(&state, .start)
        _ = InboxReducer.reduce(&state, .live(.start))
        let failed = InboxReducer.reduce(&state, .live(.tokenUnavailable(reason: "keychain locked")))
        #expect(failed.last == .end)
        #expect(state.failure == .unauthorized(message: "The token provider failed: keychain locked"))
    }

    @Test func theBackgroundTakesTheInboxOffTheSocketUntilTheForeground() {
        var state = Self.subscribed()
        let background = InboxReducer.reduce(&state, .live(.backgrounded))
        #expect(Self.steps(background) == [.disconnect])
        #expect(!state.inbox.isLive && state.subscription.phase == .suspended)
        #expect(Self.steps(InboxReducer.reduce(&state, .live(.networkAvailable))).isEmpty)
        #expect(Self.steps(InboxReducer.reduce(&state, .live(.foregrounded))).first == .connect)
    }

    @Test func pagesShowAndAPageThatFailsIsAskedForAgain() {
        var state = Self.subscribed()
        let failed = InboxReducer.reduce(&state, .pageAnswered(Self.first, .failure(.transport(message: "reset"))))
        #expect(Self.work(failed) == [.loadPage(Self.first)], "the first page is asked for again")
        let rows = [
            InboxTests.conversation(Self.a, version: 5, unread: 1, activity: 50),
            InboxTests.conversation(Self.b, version: 4, activity: 40),
        ]
        let loaded = InboxReducer.reduce(&state, .pageAnswered(Self.first, .success(InboxTests.list(rows, next: "p2"))))
        #expect(Self.published(loaded).last?.conversations == rows)
        #expect(Self.work(loaded) == [.loadUnreadCounts], "more below: the totals are the server's")
        #expect(Self.work(InboxReducer.reduce(&state, .loadMore)) == [.loadPage(InboxPageRequest(cursor: "p2", pass: 0))])
        #expect(state.inbox.isLoadingPage)
        #expect(InboxReducer.reduce(&state, .loadMore).isEmpty, "one page at a time")
        let counted = InboxReducer.reduce(&state, .unreadCountsAnswered(.success(UnreadCounts(unreadMessages: 9, unreadConversations: 3))))
        #expect(state.inbox.unreadCount == 9 && Self.work(counted).isEmpty)
    }

    @Test func aConversationThatBecameActiveIsFetchedUntilItIsHadOrNotVisible() {
        var state = Self.subscribed()
        _ = InboxReducer.reduce(
            &state,
            .pageAnswered(Self.first, .success(InboxTests.list([InboxTests.conversation(Self.a, version: 1, activity: 10)], next: nil))))
        let line = InboxReducer.reduce(&state, .live(.received(InboxTests.activity(Self.b, version: 3, activity: 30, cursor: "11"))))
        #expect(Self.work(line) == [.fetchConversation(Self.b), .steps([])])
        let failed = InboxReducer.reduce(&state, .conversationAnswered(Self.b, .failure(.transport(message: "reset"))))
        #expect(Self.work(failed) == [.fetchConversation(Self.b)], "asked for again")
        let gone = InboxReducer.reduce(
            &state, .conversationAnswered(Self.b, .failure(.notFound(code: .conversationNotFound, message: "gone"))))
        #expect(Self.work(gone).isEmpty && state.inbox[Self.b] == nil)

        let again = InboxReducer.reduce(&state, .live(.received(InboxTests.activity(Self.b, version: 4, activity: 40, cursor: "12"))))
        #expect(Self.work(again) == [.fetchConversation(Self.b), .steps([])])
        let fetched = InboxTests.conversation(Self.b, version: 4, activity: 40)
        let shown = InboxReducer.reduce(&state, .conversationAnswered(Self.b, .success(fetched)))
        #expect(Self.published(shown).last?.conversations.map(\.id) == [Self.b, Self.a])
    }

    @Test func theStorageHasTheFirstRowsBeforeTheyArePublishedAndAFailedWriteIsWrittenAgain() {
        var state = Self.subscribed(storage: true)
        let rows = [
            InboxTests.conversation(Self.a, version: 5, activity: 50),
            InboxTests.conversation(Self.b, version: 4, activity: 40),
        ]
        let loaded = InboxReducer.reduce(&state, .pageAnswered(Self.first, .success(InboxTests.list(rows, next: nil))))
        // `storedRows` is 1: only the first row is kept.
        guard let store = loaded.firstIndex(of: .store([rows[0]])),
            let publish = loaded.firstIndex(where: { if case .publish = $0 { true } else { false } })
        else {
            Issue.record("no write or no publish in \(loaded)")
            return
        }
        #expect(store < publish)
        #expect(state.stored == [rows[0]])
        // A change below the stored rows writes nothing.
        let below = InboxReducer.reduce(&state, .live(.received(.inboxRead(
            conversationId: Self.b, userId: "alice", seq: 4, unreadCount: 0, unreadMentions: 0, cursor: "11"))))
        #expect(!below.contains { if case .store = $0 { true } else { false } })

        // The write threw: the storage holds what it held, so the next change writes.
        _ = InboxReducer.reduce(&state, .stored([rows[0]], failure: "disk full"))
        #expect(state.stored == nil)
        let next = InboxReducer.reduce(&state, .live(.received(.inboxRead(
            conversationId: Self.b, userId: "alice", seq: 4, unreadCount: 0, unreadMentions: 0, cursor: "12"))))
        #expect(next.contains(.store([rows[0]])))
    }

    @Test func stoppingEndsTheFeedOnceAndLaterAnswersChangeNothing() {
        var idle = Self.state()
        #expect(InboxReducer.reduce(&idle, .stop) == [.end])
        #expect(InboxReducer.reduce(&idle, .start).isEmpty, "a stopped feed does not start again")

        var state = Self.subscribed()
        #expect(InboxReducer.reduce(&state, .stop) == [.end])
        #expect(state.phase == .stopped && state.failure == nil)
        #expect(InboxReducer.reduce(&state, .stop).isEmpty)
        #expect(InboxReducer.reduce(&state, .live(.received(InboxTests.activity(Self.a, version: 1, activity: 1)))) == [.steps([.finish(nil)])])
        #expect(InboxReducer.reduce(&state, .subscriptionEnded(nil)).isEmpty)
        #expect(!state.inbox.isLoaded)
    }
}
