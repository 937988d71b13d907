import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import PropertyBased
import ScrollbackClient
import ScrollbackLayout
import ScrollbackModels
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// The feed of one conversation against real servers on loopback and a real
/// PostgreSQL: it loads, pages, sends, and stays equal to the server's
/// history across cut connections and restarts.
@Suite struct ConversationFeedTests {
    static func client(
        _ cluster: LiveCluster, _ user: String, baseURL: String, http: HTTPClient = .shared, retry: RetryPolicy? = nil
    ) -> ScrollbackClient {
        ScrollbackClient(
            baseURL: baseURL, http: http,
            retry: retry ?? RetryPolicy(maxAttempts: 6, initialDelay: .milliseconds(50), maxDelay: .milliseconds(500)),
            token: { try await cluster.token(user) })
    }

    /// What a comparison with the server looks at.
    struct Row: Equatable, CustomStringConvertible {
        var seq: Int64
        var body: String
        var version: Int64
        var deleted: Bool

        init(_ message: Message) {
            (seq, body, version, deleted) = (message.seq, message.body, message.version, message.deleted)
        }

        var description: String { "\(seq)@\(version)\(deleted ? " deleted" : ""): \(body)" }
    }

    /// The conversation from `oldest` to its newest message, newest first,
    /// as a fresh fetch gives it.
    static func freshWindow(_ client: ScrollbackClient, _ id: UUID, from oldest: Int64) async throws -> [Row] {
        var messages: [Message] = []
        var after = oldest - 1
        while true {
            let page = try await client.page(of: id, .after(after), limit: APILimits.pageLimit.upperBound)
            messages += page.messages
            guard page.hasNewer, let newest = page.messages.map(\.seq).max() else { break }
            after = newest
        }
        return messages.sorted { $0.seq > $1.seq }.map(Row.init)
    }

    @Test func theNewestPageLoadsFirstAndTheFeedGoesLive() async throws {
        try await LiveCluster.run { cluster in
            // A short viewport and no prefetch: nothing older is asked for by itself.
            let (feed, alice) = try await Self.feedOfAlice(
                cluster, messages: 30, pageSize: 10, settings: TimelineLayoutSettings(viewportHeight: 100, prefetchThreshold: 0))
            let id = feed.conversationId
            defer { feed.stop() }
            #expect(feed.state.connection == .idle)
            let log = UpdateLog(feed)
            feed.start()
            try await until("the feed is live") { feed.state.connection == .live && feed.state.timeline.isLoaded }
            #expect(feed.state.timeline.messages.map(\.seq) == Array((21...30).reversed()))
            #expect(feed.state.timeline.hasOlder)
            let firstRows = try #require(log.updates.first { !$0.update.diff.inserted.isEmpty })
            #expect(firstRows.update.diff.inserted == Array(0..<10), "the newest page arrives as one insertion")

            _ = try await alice.send("live", to: id)
            try await until("the live message") { feed.state.timeline.messages.first?.body == "live" }
            #expect(feed.state.timeline.messages.map(\.seq) == Array((21...31).reversed()))
        }
    }

    /// Asked once, then scrolled to the top again and again: every older
    /// page is fetched until the server says there is none.
    @Test func scrollingToTheTopLoadsOlderPagesUntilThereAreNone() async throws {
        try await LiveCluster.run { cluster in
            let (feed, _) = try await Self.feedOfAlice(
                cluster, messages: 95, pageSize: 20, settings: TimelineLayoutSettings(viewportHeight: 300, prefetchThreshold: 100))
            defer { feed.stop() }
            feed.start()
            try await until("the first page") { feed.state.connection == .live && !feed.state.isLoadingOlder }
            #expect(feed.state.timeline.messages.count == 20, "a full screen at the bottom asks for nothing older")
            #expect(feed.state.timeline.hasOlder)

            feed.loadOlder()
            try await until("the page asked for") { feed.state.timeline.messages.count == 40 && !feed.state.isLoadingOlder }
            var scrolls = 0
            while feed.state.timeline.hasOlder {
                let loaded = feed.state.timeline.messages.count
                let top = try #require(feed.state.timeline.layout).maxScrollOffset
                let update = feed.apply(.scrolled(offsetFromBottom: top))
                #expect(update.scrollOffset == top)
                scrolls += 1
                try await until("an older page after scroll \(scrolls)") {
                    !feed.state.isLoadingOlder && (feed.state.timeline.messages.count > loaded || !feed.state.timeline.hasOlder)
                }
            }
            #expect(feed.state.timeline.messages.map(\.seq) == Array((1...95).reversed()))
            #expect(scrolls >= 3, "older pages came from scrolling, \(scrolls) scrolls")
        }
    }

    /// The live stream is away (its connections hang) while 35
    /// messages are sent; an older page says the conversation has grown,
    /// and what the timeline then asks for (the gap, in pages of 10, and
    /// the changes since its version, which race to bring the new messages)
    /// completes the window without the live stream.
    @Test func aGapTheLiveStreamCannotFillIsFetchedOverHTTP() async throws {
        try await LiveCluster.run { cluster in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let id = try await cluster.conversation("alice", members: ["bob"])
            try await cluster.insertMessages(40, into: id, from: "alice")
            let fetches = NIOLockedValueBox<[String]>([])
            var bob = Self.client(cluster, "bob", baseURL: "http://127.0.0.1:\(proxy.port)")
            bob.onExchange = { exchange in
                if exchange.method == "GET" { fetches.withLockedValue { $0.append(exchange.path) } }
            }
            let feed = ConversationFeed(
                client: bob, conversation: id, userId: "bob", pageSize: 10,
                settings: TimelineLayoutSettings(viewportHeight: 300, prefetchThreshold: 0))
            defer { feed.stop() }
            feed.start()
            try await until("the feed is live") { feed.state.connection == .live }

            // The stream's connections are held unanswered from now on (it
            // gives each up after its 10 s subscription timeout and tries
            // again); every other request passes.
            proxy.holdRequests(startingWith: "GET /v1/stream")
            proxy.cutAll()
            try await until("a reconnection held") { proxy.heldConnections > 0 }
            try await cluster.send(35, to: id, as: "alice")
            let fetchesBefore = fetches.withLockedValue { $0.count }
            feed.loadOlder()
            var liveMeanwhile = true
            try await until("the 35 new messages") {
                let state = feed.state
                guard state.timeline.seqRange == 21...75 else { return false }
                liveMeanwhile = state.connection == .live
                return true
            }
            #expect(!liveMeanwhile, "the live stream came back before the gap was fetched")
            #expect(feed.state.timeline.messages.map(\.seq) == Array((21...75).reversed()))
            let asked = fetches.withLockedValue { $0.dropFirst(fetchesBefore) }
            #expect(asked.contains { $0.hasSuffix("/changes") }, "the catch-up ran: \(asked)")
            // The older page, then the gap: by its own page or by the catch-up
            // (which brings the messages past the window too), whichever lands first.
            #expect(asked.count { $0.hasSuffix("/messages") } >= 1, "the older page: \(asked)")
        }
    }

    @Test func aSendShowsItsEchoUntilItIsAcknowledged() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let id = try await alice.createConversation(members: ["bob"]).id
            let feed = ConversationFeed(client: alice, conversation: id, userId: "alice")
            defer { feed.stop() }
            let log = UpdateLog(feed)
            feed.start()
            try await until("the feed is live") { feed.state.connection == .live }
            let sent = try await feed.send("hello", clientId: "hello-1")
            #expect(!sent.replayed && sent.message.seq == 1)
            try await log.until("the stored message") { updates in
                updates.last.map { Self.stored("hello-1", in: $0.state) && Self.echo("hello-1", in: $0.state) == nil } ?? false
            }
            let states = log.updates.map(\.state)
            let sending = states.firstIndex { if case .sending = Self.echo("hello-1", in: $0) { true } else { false } }
            let stored = states.firstIndex { Self.stored("hello-1", in: $0) }
            #expect(sending != nil && stored != nil && sending! < stored!, "pending, then acknowledged")
            // The row keeps its id from echo to stored message: the list updates it in place.
            #expect(feed.state.timeline.items.map(\.id) == [.local(clientId: "hello-1")])
        }
    }

    /// Readers of `updates` that come and go (a view that appears and is
    /// dismissed) while the feed publishes live messages: each reader's
    /// task is cancelled while the feed may be handing it an update. The
    /// feed goes on and shows every message (the cancellation used to wait
    /// for the feed's lock while the feed waited for the reader's task: both
    /// stopped for good).
    @Test func readersThatGoAwayWhileTheFeedPublishesNeverStopIt() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let id = try await alice.createConversation(members: ["bob"]).id
            let feed = ConversationFeed(client: alice, conversation: id, userId: "alice")
            defer { feed.stop() }
            feed.start()
            try await until("the feed is live") { feed.state.connection == .live }
            let readers = Task {
                for _ in 0..<400 {
                    let log = UpdateLog(feed)
                    try? await Task.sleep(for: .milliseconds(Int.random(in: 0...3)))
                    _ = log
                }
            }
            try await cluster.send(80, to: id, as: "bob")
            await readers.value
            try await until("every message") { feed.state.timeline.messages.count == 80 }
            let log = UpdateLog(feed)
            try await log.until("a reader after them all") { !$0.isEmpty }
        }
    }

    /// A photo's echo has the photo's box: the row is as tall while it is
    /// sent as once it is stored, so nothing moves when it is acknowledged.
    @Test func aPhotosEchoIsAsTallAsTheStoredMessage() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let id = try await alice.createConversation().id
            let feed = ConversationFeed(client: alice, conversation: id, userId: "alice")
            defer { feed.stop() }
            let log = UpdateLog(feed)
            feed.start()
            try await until("the feed is live") { feed.state.connection == .live }
            let photo = UploadClientTests.png(width: 1600, height: 1200, size: 4096)
            let attachment = try await alice.upload(photo, filename: "p.png", contentType: "image/png", to: id)
            let sent = try await feed.send("", attachments: [attachment], clientId: "photo-1")
            #expect(sent.message.attachments == [attachment])
            try await log.until("the stored photo") { updates in
                updates.last.map { Self.stored("photo-1", in: $0.state) && Self.echo("photo-1", in: $0.state) == nil } ?? false
            }
            let timeline = feed.state.timeline
            let echoes = log.updates.compactMap { update in
                update.state.timeline.items.first { $0.pendingSend?.clientId == "photo-1" }
            }
            let echo = try #require(echoes.first, "the photo's echo was never shown")
            let stored = try #require(timeline.items.first { $0.message?.clientId == "photo-1" })
            #expect(echo.attachments == [attachment])
            let echoEstimate = timeline.estimate(of: echo)
            #expect(echoEstimate.attachmentBoxes.count == 1 && echoEstimate.height > echoEstimate.textHeight + 100)
            #expect(echoEstimate == timeline.estimate(of: stored), "the echo and the stored photo differ in height")
        }
    }

    /// The send reaches the server but its answer is lost, and the client
    /// does not retry by itself (one attempt per call): the feed's outbox
    /// sends it again with the same client id, which finds the stored
    /// message. The echo never shows failed, and the message is stored once.
    @Test func aSendWhoseAnswerIsLostIsSentAgainAndStoredOnceWithoutFailing() async throws {
        try await LiveCluster.run { cluster in
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let id = try await alice.createConversation().id
            let once = Self.client(
                cluster, "alice", baseURL: "http://127.0.0.1:\(proxy.port)", retry: RetryPolicy(maxAttempts: 1))
            let feed = ConversationFeed(client: once, conversation: id, userId: "alice")
            defer { feed.stop() }
            let log = UpdateLog(feed)
            feed.start()
            try await until("the feed is live") { feed.state.connection == .live }

            proxy.loseNextAnswer(to: "POST /v1/conversations/\(id.uuidString.lowercased())/messages ")
            let sent = try await feed.send("only once", clientId: "flaky-1")
            #expect(sent.replayed, "the first attempt was stored; the second found it")
            #expect(
                !log.updates.contains { update in
                    update.state.timeline.items.contains { if case .failed = $0.state { true } else { false } }
                }, "the echo was never marked failed")
            try await until("one stored row") {
                let rows = feed.state.timeline.items.filter { $0.clientId == "flaky-1" }
                return rows.count == 1 && !rows[0].isPending
            }
            #expect(feed.state.outbox.isEmpty)
            #expect(try await alice.page(of: id).messages.map(\.body) == ["only once"])
            await #expect(throws: ScrollbackError.self) { try await feed.retry(clientId: "flaky-1") }
        }
    }

    @Test func completionHandlersDeliverStatesAndResults() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let id = try await alice.createConversation().id
            let feed = ConversationFeed(client: alice, conversation: id, userId: "alice")
            let states = NIOLockedValueBox<[ConversationFeed.State]>([])
            let ended = NIOLockedValueBox(false)
            // Every handler runs on the main queue (the client's default `completionQueue`).
            let offMain = NIOLockedValueBox(0)
            let observing = feed.observe(
                onUpdate: { state, _ in
                    if !ModelTests.onMainQueue() { offMain.withLockedValue { $0 += 1 } }
                    states.withLockedValue { $0.append(state) }
                },
                onEnd: { ended.withLockedValue { $0 = true } })
            defer { observing.cancel() }
            feed.start()
            try await until("the observer sees the feed live") {
                states.withLockedValue { $0.last?.connection == .live }
            }

            let sent: Result<ScrollbackClient.SendResult, ScrollbackError> = await withCheckedContinuation { done in
                feed.send("by callback", clientId: "cb-1") {
                    if !ModelTests.onMainQueue() { offMain.withLockedValue { $0 += 1 } }
                    done.resume(returning: $0)
                }
            }
            #expect(try sent.get().message.seq == 1)
            let marked: Result<ReadMarker?, ScrollbackError> = await withCheckedContinuation { done in
                feed.markRead {
                    if !ModelTests.onMainQueue() { offMain.withLockedValue { $0 += 1 } }
                    done.resume(returning: $0)
                }
            }
            #expect(try marked.get()?.readSeq == 1)
            let unknown: Result<ScrollbackClient.SendResult, ScrollbackError> = await withCheckedContinuation { done in
                feed.retry(clientId: "never-sent") {
                    if !ModelTests.onMainQueue() { offMain.withLockedValue { $0 += 1 } }
                    done.resume(returning: $0)
                }
            }
            guard case .failure(.notFound) = unknown else {
                Issue.record("a retry of an unknown send gave \(unknown)")
                return
            }
            #expect(offMain.withLockedValue { $0 } == 0, "handlers called off the main queue")
            try await until("the observer sees the message and the read marker") {
                states.withLockedValue { states in
                    guard let last = states.last else { return false }
                    return Self.stored("cb-1", in: last) && last.readSeqs["alice"] == 1
                }
            }
            feed.stop()
            try await until("the observer is told the feed ended") { ended.withLockedValue { $0 } }
            #expect(states.withLockedValue { $0.last?.connection } == .ended)
        }
    }

    /// `stop()`, or letting go of the feed, ends its update streams; a
    /// stopped feed is not changed by what happens later.
    @Test func stoppingOrReleasingTheFeedEndsItsStreams() async throws {
        try await LiveCluster.run { cluster in
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
            let id = try await alice.createConversation().id
            let feed = ConversationFeed(client: alice, conversation: id, userId: "alice")
            feed.start()
            try await until("the feed is live") { feed.state.connection == .live }
            let log = UpdateLog(feed)
            feed.stop()
            try await until("the stream ends on stop") { log.isFinished }
            #expect(feed.state.connection == .ended)
            let late = UpdateLog(feed)
            try await until("a stopped feed's stream ends at once") { late.isFinished }
            #expect(late.updates.count == 1)
            feed.start()
            _ = try await alice.send("after the stop", to: id)
            try await Task.sleep(for: .milliseconds(200))
            #expect(feed.state.connection == .ended && feed.state.timeline.messages.isEmpty)

            var released: ConversationFeed? = ConversationFeed(client: alice, conversation: id, userId: "alice")
            released?.start()
            try await until("the second feed is live") { released?.state.connection == .live }
            let orphan = UpdateLog(released!)
            released = nil
            try await until("the stream ends when the feed is let go") { orphan.isFinished }
        }
    }

    /// A feed listens through a proxy to instance 0 while another user
    /// sends, edits and deletes through instance 1; the proxy cuts the
    /// connection and instance 0 restarts, with changes made while it is
    /// down. However the run goes, the feed ends with exactly what a fresh
    /// fetch of its window returns.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func aCutAndRestartedFeedEndsAsAFreshFetchOfItsWindow(seed: UInt64) async throws {
        print("ConversationFeedTests cut-and-restart run, seed \(seed)")
        try await LiveCluster.run(instances: 2) { cluster in
            var rng = Self.generator(seed: seed)
            let started = ContinuousClock.now
            let proxy = try CuttingProxy(upstreamPort: cluster.instances[0].port)
            defer { proxy.stop() }
            let alice = Self.client(cluster, "alice", baseURL: cluster.instances[1].baseURL)
            // An instance's graceful stop waits for every open connection
            // that has not sent a request yet, and the shared client keeps a
            // connection it opened but did not use for 10 minutes: bob's
            // client lets its idle connections go at once.
            var configuration = HTTPClient.Configuration.singletonConfiguration
            configuration.connectionPool = .init(idleTimeout: .seconds(1))
            let http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            defer { _ = Task { try await http.shutdown() } }
            let bob = Self.client(cluster, "bob", baseURL: "http://127.0.0.1:\(proxy.port)", http: http)
            let id = try await cluster.conversation("alice", members: ["bob"])
            let history = Int.random(in: 0...80, using: &rng)
            if history > 0 { try await cluster.insertMessages(history, into: id, from: "alice") }
            // Messages alice may edit, and messages not deleted (alice created the conversation).
            var alices = Set((0..<Int64(history)).map { $0 + 1 })
            var present = alices

            let feed = ConversationFeed(
                client: bob, conversation: id, userId: "bob", pageSize: Int.random(in: 5...25, using: &rng),
                settings: TimelineLayoutSettings(viewportHeight: 400, prefetchThreshold: 200))
            defer { feed.stop() }
            let log = UpdateLog(feed)
            feed.start()

            func change(_ step: Int, byBob: Bool) async throws {
                switch Int.random(in: 0..<20, using: &rng) {
                case 0..<9:
                    let sent = try await alice.send("step \(step)", to: id)
                    alices.insert(sent.message.seq)
                    present.insert(sent.message.seq)
                case 9..<13 where !alices.isEmpty:
                    let seq = alices.randomElement(using: &rng)!
                    _ = try await alice.edit(seq, in: id, body: "edited at step \(step)")
                case 13..<16 where !present.isEmpty:
                    let seq = present.randomElement(using: &rng)!
                    _ = try await alice.delete(seq, in: id)
                    present.remove(seq)
                    alices.remove(seq)
                case 16..<18 where byBob:
                    // Through the feed: a send that fails leaves a failed echo, not a message.
                    if let sent = try? await feed.send("bob at step \(step)") { present.insert(sent.message.seq) }
                case 18 where byBob:
                    if let top = feed.state.timeline.layout?.maxScrollOffset {
                        feed.apply(.scrolled(offsetFromBottom: top))
                    }
                default:
                    try await Task.sleep(for: .milliseconds(Int.random(in: 1...30, using: &rng)))
                }
            }

            let steps = Int.random(in: 40...70, using: &rng)
            let cuts = Set((0..<2).map { _ in Int.random(in: 0..<steps, using: &rng) })
            let restart = Int.random(in: (steps / 4)..<(steps * 3 / 4), using: &rng)
            for step in 0..<steps {
                if cuts.contains(step) {
                    // A cut that counts: the feed is subscribed when it comes.
                    try await until("seed \(seed): the feed live before a cut") { feed.state.connection == .live }
                    proxy.cutAll()
                }
                if step == restart {
                    let whileDown = Int.random(in: 3...10, using: &rng)
                    try await cluster.restart(0) {
                        for down in 0..<whileDown { try await change(1_000 + down, byBob: false) }
                    }
                } else {
                    try await change(step, byBob: true)
                }
            }

            let changed = ContinuousClock.now
            let last = try await alice.conversation(id).lastSeq
            let fresh = NIOLockedValueBox<[Row]>([])
            try await until("seed \(seed): the window equal to a fresh fetch", every: .milliseconds(100)) {
                let state = feed.state
                guard state.connection == .live, let window = state.timeline.seqRange, window.upperBound == last,
                    state.timeline.gaps.isEmpty
                else { return false }
                let rows = try await Self.freshWindow(alice, id, from: window.lowerBound)
                fresh.withLockedValue { $0 = rows }
                return state.timeline.messages.map(Row.init) == rows
            } describe: {
                let state = feed.state
                return """
                    connection \(state.connection), window \(String(describing: state.timeline.seqRange)) of \(last), \
                    gaps \(state.timeline.gaps), version \(state.timeline.version), failure \(String(describing: state.failure))
                    feed:  \(state.timeline.messages.map(Row.init))
                    fresh: \(fresh.withLockedValue { $0 })
                    """
            }
            #expect(
                !feed.state.timeline.items.contains { if case .sending = $0.state { true } else { false } },
                "seed \(seed): every send of the feed was answered")
            let reconnects = log.updates.count { if case .reconnecting = $0.state.connection { true } else { false } }
            #expect(reconnects > 0, "seed \(seed): the feed never saw its connection lost")
            print(
                "ConversationFeedTests seed \(seed): \(history) messages before, \(steps) steps in \(changed - started),",
                "window", feed.state.timeline.seqRange.map { "\($0)" } ?? "empty", "of \(last) equal after",
                "\(ContinuousClock.now - changed), \(reconnects) updates while reconnecting")
        }
    }

    // MARK: Helpers

    /// A feed, not started, of alice's conversation of `messages` messages
    /// on instance 0, and alice's client.
    static func feedOfAlice(
        _ cluster: LiveCluster, messages: Int, pageSize: Int, settings: TimelineLayoutSettings
    ) async throws -> (ConversationFeed, ScrollbackClient) {
        let id = try await cluster.conversation("alice", members: [])
        try await cluster.insertMessages(messages, into: id, from: "alice")
        let alice = client(cluster, "alice", baseURL: cluster.instances[0].baseURL)
        return (ConversationFeed(client: alice, conversation: id, userId: "alice", pageSize: pageSize, settings: settings), alice)
    }

    /// A generator whose every word depends on the whole seed (SplitMix64),
    /// so that nearby seeds give unrelated runs.
    static func generator(seed: UInt64) -> Xoshiro {
        var state = seed
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return Xoshiro(seed: (next(), next(), next(), next()))
    }

    /// The echo of `clientId` while it is not stored: sending or failed.
    static func echo(_ clientId: String, in state: ConversationFeed.State) -> TimelineItem.State? {
        state.timeline.items.first { $0.id == .local(clientId: clientId) && $0.isPending }?.state
    }

    static func stored(_ clientId: String, in state: ConversationFeed.State) -> Bool {
        state.timeline.messages.contains { $0.clientId == clientId }
    }
}

/// Polls `condition` until it holds, for at most `timeout`; records what
/// `describe` says when it never does.
func until(
    _ what: String, timeout: Duration = .seconds(60), every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool, describe: () async -> String = { "" }
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting for \(what). \(await describe())")
            throw CancellationError()
        }
        try await Task.sleep(for: interval)
    }
}

/// Every update of a feed, as its `updates` stream delivers them.
final class UpdateLog: Sendable {
    private let received = NIOLockedValueBox<(updates: [ConversationFeed.Update], finished: Bool)>(([], false))
    private let reading: Task<Void, Never>

    init(_ feed: ConversationFeed) {
        let stream = feed.updates
        let received = received
        reading = Task {
            for await update in stream { received.withLockedValue { $0.updates.append(update) } }
            received.withLockedValue { $0.finished = true }
        }
    }

    deinit { reading.cancel() }

    var updates: [ConversationFeed.Update] { received.withLockedValue { $0.updates } }
    var isFinished: Bool { received.withLockedValue { $0.finished } }

    func until(_ what: String, timeout: Duration = .seconds(60), _ condition: ([ConversationFeed.Update]) -> Bool)
        async throws
    {
        try await ScrollbackClientTests.until(what, timeout: timeout) { condition(updates) }
    }
}
