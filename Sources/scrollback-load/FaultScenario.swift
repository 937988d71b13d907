import Foundation
import NIOConcurrencyHelpers
import ScrollbackMeasure

extension LoadRun {
    /// Chat traffic (senders, readers, a subscriber on every member) while
    /// the faults are injected one after another: a baseline without one
    /// first, then each fault with the traffic running through it, until
    /// every instance serves a send again, and a check of everything so far
    /// before the next. The table says what each fault did.
    func faults(_ settings: ScenarioSettings) async throws -> ScenarioOutcome {
        guard settings.faults.isEmpty || settings.faultCommand != nil else {
            throw LoadFailure("faults: --fault needs --fault-command, the command that injects a fault.")
        }
        faultTable.withLockedValue { $0.hangAfterSeconds = settings.hangAfter }
        let conversations = try await chatConversations(settings)
        let hot = conversations[0].conversation
        // Before, during and after each fault.
        let before = Duration.seconds(2), after = Duration.seconds(3)
        for (index, fault) in (["baseline"] + settings.faults).enumerated() {
            faultTable.withLockedValue { $0.begin(fault) }
            print("faults: \(fault)")
            let stop = NIOLockedValueBox(false)
            let sending = Task {
                await sendOpenLoop(
                    rate: settings.rate * Double(conversations.count), count: .max, prefix: "\(runID)-f\(index)",
                    until: { stop.withLockedValue { $0 } }
                ) { sent in Self.roundRobin(sent, over: conversations) }
            }
            let readers = readers(settings.readers, of: conversations, until: .now + .seconds(3_600))
            try await Task.sleep(for: before)
            let injected = ContinuousClock.now
            if fault == "baseline" {
                try await Task.sleep(for: .seconds(3))
            } else if let command = settings.faultCommand {
                try await Self.runShell("\(command) \(fault) \(hot.uuidString.lowercased())")
            }
            let removed = ContinuousClock.now
            faultTable.withLockedValue { $0.removed(after: (removed - injected).seconds) }
            let recovered = await untilEveryInstanceServes(conversations, probe: "\(runID)-f\(index)-probe", within: .seconds(90))
            faultTable.withLockedValue { $0.recovered(in: recovered ? (ContinuousClock.now - removed).seconds : nil) }
            try await Task.sleep(for: after)
            stop.withLockedValue { $0 = true }
            await sending.value
            for reader in readers { reader.cancel() }
            // Every subscriber is back before the check counts what it received.
            _ = await untilConnected(within: .seconds(60))
            let violations = await verify(conversations)
            faultTable.withLockedValue { $0.checked(violations) }
        }
        closeSubscriptions()
        var outcome = ScenarioOutcome()
        let table = faultTable.withLockedValue { $0 }
        outcome.figures.faults = table
        return outcome
    }

    /// Waits until every target answers `/readyz` and takes a send (through
    /// the kit, with its retries); false after `limit`.
    private func untilEveryInstanceServes(_ conversations: [Roster], probe: String, within limit: Duration) async -> Bool {
        let deadline = ContinuousClock.now + limit
        for target in targets.indices {
            while await !isReady(target: target) {
                guard ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(100))
            }
            let (conversation, members) = conversations[target % conversations.count]
            var attempt = 0
            while !(await send(
                "probe \(attempt) of \(probe)", to: conversation, as: members[0], target: target,
                clientId: "\(probe)-\(target)-\(attempt)", scheduledAt: .now))
            {
                guard ContinuousClock.now < deadline else { return false }
                attempt += 1
            }
        }
        return true
    }
}
