import Foundation
import ScrollbackMeasure
import ScrollbackModels

/// The shapes of traffic the load test runs; each is bounded in time and
/// count and stops by itself.
enum Scenario: String, CaseIterable, Sendable {
    /// Users in conversations sending at a fixed rate, subscribers on every
    /// member, readers paging back, typing and read markers.
    case chat
    /// One conversation, many subscribers, one sender at a fixed rate.
    case fanout
    /// Sockets subscribed and doing nothing: the server's memory per socket.
    case idle
    /// Every subscriber loses its connection at once and resumes.
    case storm
    /// Chat traffic while faults are injected one after another, each
    /// followed by a check (scripts/faults).
    case faults
}

/// What a scenario is asked to do (the command line's options).
struct ScenarioSettings: Sendable, Encodable {
    var seconds: Int
    var users: Int
    var conversations: Int
    var members: Int
    /// Messages per second: per conversation for `chat`, in all for `fanout` and `storm`.
    var rate: Double
    var subscribers: Int
    var readers: Int
    /// The server processes whose memory `idle` measures (and the others report).
    var serverPIDs: [Int32]
    /// A shell command that `storm` runs to disrupt the servers; without
    /// one, the clients drop their own connections.
    var disruptCommand: String?
    /// `faults`: the faults to inject, in order, and the command that injects
    /// one (`COMMAND FAULT HOT_CONVERSATION_ID`, returning once it is removed).
    var faults: [String] = []
    var faultCommand: String?
    /// `faults`: an HTTP attempt that takes longer is a hang.
    var hangAfter: Double = 15
}

/// Extra figures of a scenario, beside the operations' table.
struct ScenarioFigures: Sendable, Encodable {
    var idleSockets: Int?
    var serverRSSBeforeKiB: Int?
    var serverRSSAfterKiB: Int?
    var kibPerIdleSocket: Double?
    var stormSockets: Int?
    var stormDisruption: String?
    var secondsUntilAllResubscribed: Double?
    var allResubscribed: Bool?
    var faults: FaultTable?

    enum CodingKeys: String, CodingKey {
        case idleSockets = "idle_sockets", serverRSSBeforeKiB = "server_rss_before_kib"
        case serverRSSAfterKiB = "server_rss_after_kib", kibPerIdleSocket = "kib_per_idle_socket"
        case stormSockets = "storm_sockets", stormDisruption = "storm_disruption"
        case secondsUntilAllResubscribed = "seconds_until_all_resubscribed", allResubscribed = "all_resubscribed"
        case faults
    }
}

/// The result of a scenario: its figures and what the final check found.
struct ScenarioOutcome: Sendable {
    var figures = ScenarioFigures()
    var violations: [DeliveryLedger.Violation] = []
}

extension LoadRun {
    func run(_ scenario: Scenario, _ settings: ScenarioSettings) async throws -> ScenarioOutcome {
        switch scenario {
        case .chat: try await chat(settings)
        case .fanout: try await fanout(settings)
        case .idle: try await idle(settings)
        case .storm: try await storm(settings)
        case .faults: try await faults(settings)
        }
    }

    /// Subscribes every member of every conversation, spread over the targets
    /// by subscriber number, and waits until all are connected.
    func subscribeAll(_ members: [Roster]) async throws {
        var id = 0
        for (conversation, users) in members {
            for user in users {
                subscribe(id, user: user, to: conversation, target: id)
                id += 1
                // Opened in batches, as phones that come online do, rather
                // than thousands of upgrades in the same millisecond.
                if id.isMultiple(of: 200) { _ = await untilConnected(within: .seconds(60)) }
            }
        }
        guard await untilConnected(within: .seconds(120)) else {
            throw LoadFailure("Only \(connectedCount) of \(subscriptionCount) subscriptions connected within 2 minutes.")
        }
    }

    /// Sends `count` messages at `rate` per second, each from a member
    /// drawn by `pick` (conversation, sender, target).
    func sendOpenLoop(
        rate: Double, count: Int, prefix: String? = nil, until stop: @escaping @Sendable () -> Bool = { false },
        _ pick: @escaping @Sendable (Int) -> (conversation: UUID, user: String, target: Int)
    ) async {
        let prefix = prefix ?? runID
        await OpenLoop.run(rate: rate, count: count, until: stop) { [self] index, scheduled in
            let (conversation, user, target) = pick(index)
            await send(
                "message \(index) of \(prefix)", to: conversation, as: user, target: target,
                clientId: "\(prefix)-\(index)", scheduledAt: scheduled)
        }
    }

    /// Send `index` of traffic spread over `conversations`: they take turns,
    /// each member of one sends in turn, and each conversation's sends
    /// alternate between the targets.
    static func roundRobin(_ index: Int, over conversations: [Roster]) -> (conversation: UUID, user: String, target: Int) {
        let conversation = index % conversations.count
        let round = index / conversations.count
        let (id, members) = conversations[conversation]
        return (id, members[round % members.count], conversation + round)
    }

    /// Runs `body` every `interval` until `end`.
    func every(_ interval: Duration, until end: ContinuousClock.Instant, _ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        Task {
            while true {
                do { try await Task.sleep(for: interval) } catch { return }
                guard ContinuousClock.now < end else { return }
                await body()
            }
        }
    }

    // MARK: chat

    /// `settings.conversations` conversations of `settings.members` drawn
    /// round `settings.users` users, every member subscribed.
    func chatConversations(_ settings: ScenarioSettings) async throws -> [Roster] {
        let users = (0..<settings.users).map { "\(runID)-u\($0)" }
        let size = min(settings.members, users.count, 1_000)
        var conversations: [Roster] = []
        for index in 0..<settings.conversations {
            // Members drawn round the users, so every user is in some conversation.
            let members = (0..<size).map { users[(index * size + $0) % users.count] }
            let id = try await createConversation(creator: members[0], members: Array(members.dropFirst()), target: index)
            conversations.append((id, members))
        }
        try await subscribeAll(conversations)
        return conversations
    }

    /// `count` readers that open conversations and page back through their
    /// history, each every half second until `end` (or cancelled).
    func readers(_ count: Int, of conversations: [Roster], until end: ContinuousClock.Instant) -> [Task<Void, Never>] {
        (0..<count).map { reader in
            every(.milliseconds(500), until: end) { [self] in
                let (conversation, members) = conversations.randomElement()!
                await read(conversation, as: members.randomElement()!, target: reader, pages: Int.random(in: 1...4))
            }
        }
    }

    private func chat(_ settings: ScenarioSettings) async throws -> ScenarioOutcome {
        let snapshot = try await chatConversations(settings)
        let end = ContinuousClock.now + .seconds(settings.seconds)
        let readers = readers(settings.readers, of: snapshot, until: end)
        // Some members mark read what they have received, some type.
        let markers = every(.seconds(1), until: end) { [self] in
            let count = subscriptionCount
            for id in (0..<max(count / 10, 1)).map({ _ in Int.random(in: 0..<count) }) { await markRead(subscriber: id) }
        }
        let typists = every(.seconds(1), until: end) { [self] in
            for _ in 0..<max(snapshot.count / 5, 1) {
                let (conversation, members) = snapshot.randomElement()!
                await typing(in: conversation, as: members.randomElement()!, target: Int.random(in: 0..<targets.count))
            }
        }
        let total = Int(settings.rate * Double(snapshot.count) * Double(settings.seconds))
        await sendOpenLoop(rate: settings.rate * Double(snapshot.count), count: total) { index in
            Self.roundRobin(index, over: snapshot)
        }
        for task in readers + [markers, typists] { await task.value }
        var outcome = ScenarioOutcome()
        outcome.violations = await finish(snapshot)
        return outcome
    }

    // MARK: fanout

    /// One conversation of up to `APILimits.maxMembers` members; past that
    /// many subscribers, each member subscribes from several devices (one
    /// socket each), in turn.
    private func fanout(_ settings: ScenarioSettings) async throws -> ScenarioOutcome {
        let subscribers = max(settings.subscribers, 2)
        let members = (0..<min(subscribers, APILimits.maxMembers)).map { "\(runID)-f\($0)" }
        let id = try await createConversation(creator: members[0], members: Array(members.dropFirst()), target: 0)
        let sockets: Roster = (id, (0..<subscribers).map { members[$0 % members.count] })
        try await subscribeAll([sockets])
        let total = Int(settings.rate * Double(settings.seconds))
        await sendOpenLoop(rate: settings.rate, count: total) { index in (id, members[0], index) }
        var outcome = ScenarioOutcome()
        outcome.violations = await finish([sockets])
        return outcome
    }

    // MARK: idle

    /// Conversations of up to 100 members, one socket per member.
    private func conversationsOfHundred(_ sockets: Int, prefix: String) async throws -> [Roster] {
        let users = (0..<sockets).map { "\(runID)-\(prefix)\($0)" }
        var conversations: [Roster] = []
        for (index, start) in stride(from: 0, to: users.count, by: 100).enumerated() {
            let members = Array(users[start..<min(start + 100, users.count)])
            let id = try await createConversation(creator: members[0], members: Array(members.dropFirst()), target: index)
            conversations.append((id, members))
        }
        return conversations
    }

    private func serverMemoryKiB(_ pids: [Int32]) -> Int? {
        let readings = pids.compactMap(residentMemoryKiB(of:))
        return readings.isEmpty || readings.count < pids.count ? nil : readings.reduce(0, +)
    }

    private func idle(_ settings: ScenarioSettings) async throws -> ScenarioOutcome {
        let conversations = try await conversationsOfHundred(settings.subscribers, prefix: "i")
        var outcome = ScenarioOutcome()
        outcome.figures.idleSockets = settings.subscribers
        // Let the setup's garbage settle before the first reading.
        try await Task.sleep(for: .seconds(2))
        let before = serverMemoryKiB(settings.serverPIDs)
        try await subscribeAll(conversations)
        try await Task.sleep(for: .seconds(3))
        let after = serverMemoryKiB(settings.serverPIDs)
        outcome.figures.serverRSSBeforeKiB = before
        outcome.figures.serverRSSAfterKiB = after
        if let before, let after {
            outcome.figures.kibPerIdleSocket = Double(after - before) / Double(settings.subscribers)
        }
        try await Task.sleep(for: .seconds(settings.seconds))
        outcome.violations = await finish(conversations)
        return outcome
    }

    // MARK: storm

    private func storm(_ settings: ScenarioSettings) async throws -> ScenarioOutcome {
        let conversations = try await conversationsOfHundred(settings.subscribers, prefix: "s")
        try await subscribeAll(conversations)
        var outcome = ScenarioOutcome()
        outcome.figures.stormSockets = settings.subscribers
        outcome.figures.stormDisruption = settings.disruptCommand.map { "command: \($0)" } ?? "clients dropped their connections"

        let total = Int(settings.rate * Double(settings.seconds))
        let snapshot = conversations
        let sending = Task {
            await sendOpenLoop(rate: settings.rate, count: total) { index in
                let (id, members) = snapshot[index % snapshot.count]
                return (id, members[(index / snapshot.count) % members.count], index)
            }
        }
        try await Task.sleep(for: .seconds(Double(settings.seconds) / 3))
        let disrupted = ContinuousClock.now
        let dropsBefore = dropCount
        if let command = settings.disruptCommand {
            try await Self.runShell(command)
        } else {
            reopenAllSubscriptions()
        }
        outcome.figures.allResubscribed = await untilConnected(afterDrops: dropsBefore + 1, within: .seconds(120))
        outcome.figures.secondsUntilAllResubscribed = (ContinuousClock.now - disrupted).seconds
        await sending.value
        outcome.violations = await finish(conversations)
        return outcome
    }

    /// Runs `command` with /bin/sh and waits for it, on a thread of its own
    /// (the wait blocks); fails when it fails.
    static func runShell(_ command: String) async throws {
        let status = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: system(command)) }
        }
        guard status == 0 else {
            throw LoadFailure("The disruption command failed (status \(status)): \(command)")
        }
    }
}
