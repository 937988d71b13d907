import Foundation
import NIOConcurrencyHelpers
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackOffline
import ScrollbackTestSupport
import ScrollbackTimeline
import Testing

/// The property: whatever interleaving of windows written to disk, pages
/// older and newer, jumps to a message and back to the newest, live frames
/// (sends, replies, edits, deletions, reactions of both users), cut
/// connections, an absent server and restarts of the app on the same file,
/// the feed, back at the newest, shows what a fresh load shows (reactions
/// with their counts and `me`, replies with their parents), every seq once,
/// and every message it sent is stored once, in the order it was written.
///
/// Each seed makes one run's steps; a failure names its seed and the last
/// steps taken.
@Suite struct OfflineFeedPropertyTests {
    /// What a row shows of a message, as the server decides it for bob.
    struct Shown: Equatable, CustomStringConvertible {
        var seq: Int64
        var body: String
        var version: Int64
        var deleted: Bool
        var edited: Bool
        var reactions: [ReactionSummary]
        var replyTo: ReplyPreview?
        var threadRoot: Int64?
        var replies: Int64?

        init(_ message: Message) {
            (seq, body, version, deleted) = (message.seq, message.body, message.version, message.deleted)
            edited = message.editedAt != nil
            reactions = message.reactions
            (replyTo, threadRoot, replies) = (message.replyTo, message.threadRoot, message.thread?.replyCount)
        }

        var description: String {
            var text = "\(seq)@\(version)"
            if deleted { text += " deleted" }
            if edited { text += " edited" }
            if let replyTo {
                text += " reply to \(replyTo.seq)\(replyTo.deleted ? " (deleted)" : "") \"\(replyTo.excerpt ?? "")\""
            }
            if let threadRoot { text += " in \(threadRoot)" }
            if let replies { text += " \(replies) replies" }
            if !reactions.isEmpty {
                text += " [" + reactions.map { "\($0.emoji)\($0.count)\($0.me ? " me" : "")" }.joined(separator: ", ") + "]"
            }
            return text + ": \(body)"
        }
    }

    /// The conversation from `oldest` to its newest message, newest first,
    /// as a fresh load by `client`'s user gives it.
    static func freshLoad(_ client: ScrollbackClient, _ id: UUID, from oldest: Int64) async throws -> [Shown] {
        var messages: [Message] = []
        var after = oldest - 1
        while true {
            let page = try await client.page(of: id, .after(after), limit: APILimits.pageLimit.upperBound)
            messages += page.messages
            guard page.hasNewer, let newest = page.messages.map(\.seq).max() else { break }
            after = newest
        }
        return messages.sorted { $0.seq > $1.seq }.map(Shown.init)
    }

    /// The first rows where two lists differ, for a failure message.
    static func difference(_ shown: [Shown], _ fresh: [Shown]) -> String {
        let feed = Dictionary(shown.map { ($0.seq, $0) }, uniquingKeysWith: { first, _ in first })
        let server = Dictionary(fresh.map { ($0.seq, $0) }, uniquingKeysWith: { first, _ in first })
        let differing = Set(feed.keys).union(server.keys).sorted(by: >).filter { feed[$0] != server[$0] }
        return differing.prefix(6).map { seq in
            "\n  feed:  \(feed[seq].map(String.init(describing:)) ?? "(none) \(seq)")"
                + "\n  fresh: \(server[seq].map(String.init(describing:)) ?? "(none) \(seq)")"
        }.joined()
    }

    /// Twelve seeds; `SCROLLBACK_FEED_SEEDS=26,28` runs those alone.
    static let seeds: [UInt64] =
        ProcessInfo.processInfo.environment["SCROLLBACK_FEED_SEEDS"].map { $0.split(separator: ",").compactMap { UInt64($0) } }
        ?? Array(21...32)
    static let emojis = ["👍", "🎉", "❤️"]

    @Test(arguments: seeds)
    func anyInterleavingEndsAsAFreshLoad(seed: UInt64) async throws {
        var seeded = ConversationFeedTests.generator(seed: seed)
        let history = Int.random(in: 0...200, using: &seeded)
        let started = ContinuousClock.now
        try await OfflineFeedTests.run(messages: history) { [seeded] setup in
            var rng = seeded
            let (alice, id) = (setup.alice, setup.id)
            // Bob's own reads, straight to the server: what a fresh load shows him.
            let bob = ConversationFeedTests.client(setup.cluster, "bob", baseURL: setup.cluster.instances[0].baseURL)
            // Alice's messages not deleted: the ones she edits, deletes, reacts and replies to.
            var alices = Set((0..<Int64(history)).map { $0 + 1 })
            var newest = Int64(history)
            let pageSize = Int.random(in: 5...25, using: &rng)
            let limit = Int.random(in: 20...200, using: &rng)
            var trace: [String] = []
            func note(_ step: String) { trace.append(step) }
            func context() -> String { "seed \(seed), steps: \(trace.joined(separator: "; "))" }

            // Every HTTP exchange of bob's feeds, for a failure to show.
            let exchanges = NIOLockedValueBox<[String]>([])
            var opened = 0
            func open(at opening: ConversationFeed.Opening = .newest) throws -> ConversationFeed {
                opened += 1
                var client = OfflineFeedTests.client(setup.cluster, "bob", port: setup.proxy.port)
                client.onExchange = { [opened] exchange in
                    let status = exchange.status.map(String.init) ?? "no answer"
                    exchanges.withLockedValue {
                        $0.append("feed \(opened): \(exchange.method) \(exchange.path.suffix(28)) \(status) in \(exchange.duration)")
                    }
                }
                let feed = ConversationFeed(
                    client: client, conversation: id, userId: "bob", pageSize: pageSize,
                    settings: TimelineLayoutSettings(viewportHeight: 400, prefetchThreshold: 200),
                    storage: try OfflineStore(path: setup.path), storedMessageLimit: limit)
                feed.start(at: opening)
                return feed
            }
            func anySeq() -> Int64? { newest > 0 ? Int64.random(in: 1...newest, using: &rng) : nil }
            func anyOfAlices() -> Int64? { alices.isEmpty ? nil : alices.sorted().randomElement(using: &rng) }

            var feed = try open()
            var written: [String] = []
            var away = false
            let steps = Int.random(in: 45...70, using: &rng)
            do {
                for step in 0..<steps {
                    switch Int.random(in: 0..<32, using: &rng) {
                    case 0..<5:
                        let seq = try await alice.send("step \(step)", to: id).message.seq
                        alices.insert(seq)
                        newest = max(newest, seq)
                        note("alice sends \(seq)")
                    case 5..<7:
                        guard let parent = anyOfAlices() else { continue }
                        let seq = try await alice.send("reply at \(step)", to: id, replyTo: parent).message.seq
                        alices.insert(seq)
                        newest = max(newest, seq)
                        note("alice replies \(seq) to \(parent)")
                    case 7..<9:
                        guard let seq = anyOfAlices() else { continue }
                        _ = try await alice.edit(seq, in: id, body: "edited at \(step)")
                        note("alice edits \(seq)")
                    case 9:
                        guard let seq = anyOfAlices() else { continue }
                        _ = try await alice.delete(seq, in: id)
                        alices.remove(seq)
                        note("alice deletes \(seq)")
                    case 10..<12:
                        guard let seq = anyOfAlices() else { continue }
                        let emoji = Self.emojis.randomElement(using: &rng)!
                        if Bool.random(using: &rng) {
                            _ = try await alice.react(emoji, to: seq, in: id)
                            note("alice reacts \(emoji) to \(seq)")
                        } else {
                            _ = try await alice.unreact(emoji, from: seq, in: id)
                            note("alice unreacts \(emoji) from \(seq)")
                        }
                    case 12..<14:
                        // Through the outbox, whether the server is there or not.
                        let clientId = "bob-\(step)"
                        written.append(clientId)
                        feed.send("bob at \(step)", clientId: clientId) { _ in }
                        note("bob sends \(clientId)")
                    case 14..<16:
                        // Through the outbox too: written now, in order, sent when it can be.
                        guard let seq = anyOfAlices() else { continue }
                        let emoji = Self.emojis.randomElement(using: &rng)!
                        let add = Bool.random(using: &rng)
                        _ = feed.queue(add ? .react(seq: seq, emoji: emoji) : .unreact(seq: seq, emoji: emoji))
                        note("bob \(add ? "reacts" : "unreacts") \(emoji) \(add ? "to" : "from") \(seq)")
                    case 16..<18:
                        away.toggle()
                        setup.serverAway(away)
                        note(away ? "server away" : "server back")
                    case 18:
                        setup.proxy.cutAll()
                        note("connections cut")
                    case 19..<21:
                        // The app quits and starts again on the same file,
                        // at the newest or at a message.
                        feed.stop()
                        if Int.random(in: 0..<3, using: &rng) == 0, let seq = anySeq() {
                            feed = try open(at: .message(seq))
                            note("restart at \(seq)")
                        } else {
                            feed = try open()
                            note("restart")
                        }
                    case 21..<23:
                        guard let seq = anySeq() else { continue }
                        feed.jump(to: seq)
                        note("jump to \(seq)")
                    case 23:
                        feed.jumpToLatest()
                        note("jump to latest")
                    case 24:
                        feed.loadOlder()
                        note("load older")
                    case 25:
                        feed.loadNewer()
                        note("load newer")
                    case 26:
                        if let top = feed.state.timeline.layout?.maxScrollOffset { feed.apply(.scrolled(offsetFromBottom: top)) }
                        note("scroll to top")
                    case 27:
                        feed.apply(.scrolled(offsetFromBottom: 0))
                        note("scroll to bottom")
                    default:
                        let pause = Int.random(in: 1...40, using: &rng)
                        try await Task.sleep(for: .milliseconds(pause))
                        note("pause \(pause) ms")
                    }
                }
            } catch {
                Issue.record("\(context()): a step threw \(error)")
                feed.stop()
                throw error
            }
            setup.serverAway(false)
            // Back to the newest: by the button, or by scrolling down page
            // after page (below, for as long as the window is detached).
            if Bool.random(using: &rng) {
                feed.jumpToLatest()
                note("server back, jump to latest")
            } else {
                note("server back, scroll down to the newest")
            }
            let current = feed
            defer { current.stop() }

            // Bob's reactions to messages alice deleted before they were sent
            // are refused (the message is deleted): he discards them. Nothing
            // else may be refused.
            try await until("\(context()): bob's outbox sent or refused", timeout: .seconds(30)) {
                current.state.outbox.allSatisfy { $0.failure != nil }
            } describe: {
                "outbox \(current.state.outbox.map { "\($0.clientId) \(String(describing: $0.change)) \($0.failure ?? "waiting")" }), "
                    + "connection \(current.state.connection), last exchanges:\n  "
                    + exchanges.withLockedValue { $0.suffix(15) }.joined(separator: "\n  ")
            }
            let deleted = Set(try await Self.freshLoad(bob, id, from: 1).filter(\.deleted).map(\.seq))
            for entry in current.state.outbox {
                #expect(
                    entry.change.map { deleted.contains($0.seq) } == true,
                    "\(context()): only a change of a deleted message is refused, not \(entry)")
                try? current.discard(clientId: entry.clientId)
            }

            let fresh = NIOLockedValueBox<[Shown]>([])
            let last = NIOLockedValueBox<Int64>(0)
            try await until("\(context()): the window equal to a fresh load", timeout: .seconds(30), every: .milliseconds(100)) {
                let state = current.state
                if !state.timeline.isAttached {
                    current.apply(.scrolled(offsetFromBottom: 0))
                    return false
                }
                guard state.connection == .live, state.outbox.isEmpty,
                    state.timeline.isLoaded, state.timeline.gaps.isEmpty
                else { return false }
                let lastSeq = try await bob.conversation(id).lastSeq
                last.withLockedValue { $0 = lastSeq }
                // An empty conversation has no window.
                guard let window = state.timeline.seqRange else { return lastSeq == 0 }
                guard window.upperBound == lastSeq else { return false }
                let rows = try await Self.freshLoad(bob, id, from: window.lowerBound)
                fresh.withLockedValue { $0 = rows }
                return state.timeline.messages.map(Shown.init) == rows
            } describe: {
                let state = current.state
                return """
                    connection \(state.connection), attached \(state.timeline.isAttached), \
                    window \(String(describing: state.timeline.seqRange)) of \(last.withLockedValue { $0 }), \
                    gaps \(state.timeline.gaps), outbox \(state.outbox.map(\.clientId)), failure \(String(describing: state.failure))
                    differing rows (feed, then fresh):\(Self.difference(state.timeline.messages.map(Shown.init), fresh.withLockedValue { $0 }))
                    """
            }
            let items = current.state.timeline.items
            #expect(!items.contains { $0.isPending }, "\(context()): every send stored")
            let seqs = items.compactMap(\.seq)
            #expect(seqs.count == items.count && Set(seqs).count == seqs.count, "\(context()): every seq once, \(seqs)")
            #expect(seqs == seqs.sorted(by: >), "\(context()): rows newest first")

            // Every send of bob's stored once, in the order written.
            let everything = try await Self.freshLoad(bob, id, from: 1)
            let bobs = everything.reversed().compactMap { row in written.first { "bob at \($0.dropFirst(4))" == row.body } }
            #expect(bobs == written, "\(context()): bob's sends as stored \(bobs), as written \(written)")

            // The file holds what the feed shows, up to its limit.
            current.stop()
            let window = try #require(try OfflineStore(path: setup.path).openWindow(of: id), "\(context()): a window on file")
            let shown = current.state.timeline.messages.map(Shown.init)
            #expect(
                window.messages.map(Shown.init) == Array(shown.prefix(limit)),
                "\(context()): the file's window differs:\(Self.difference(window.messages.map(Shown.init), Array(shown.prefix(limit))))")
            print(
                "OfflineFeedPropertyTests seed \(seed): \(history) messages before, \(steps) steps, \(written.count) sends",
                "by bob, window \(String(describing: current.state.timeline.seqRange)) with \(shown.count { !$0.reactions.isEmpty })",
                "reacted, \(shown.count { $0.replyTo != nil }) replies, \(shown.count(where: \.edited)) edited,",
                "\(shown.count(where: \.deleted)) deleted, \(window.messages.count) on disk, \(ContinuousClock.now - started);",
                "\(trace.count { $0.hasPrefix("jump to") }) jumps, \(trace.count { $0.hasPrefix("restart") }) restarts,",
                "\(trace.count { $0.contains("reacts") }) reactions set and removed, \(trace.count { $0.hasPrefix("server away") }) times away")
        }
    }
}
