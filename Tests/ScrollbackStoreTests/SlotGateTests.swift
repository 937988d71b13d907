@testable import ScrollbackTestSupport
import Testing

/// The gate the integration tests take their slots from (`TestSlots`): in
/// the order they came, except that a waiter ahead (a serialized suite's
/// test, `SlotsAhead`) goes before every waiter that is not.
@Suite struct SlotGateTests {
    /// Waits until `gate` has `count` waiters.
    static func waiters(_ count: Int, at gate: SlotGate) async {
        while await gate.waitingCount < count { await Task.yield() }
    }

    @Test func waitersEnterInTheOrderTheyCameAndOneAheadBeforeThem() async throws {
        let gate = SlotGate(width: 1)
        let first = await gate.enter(name: "first")
        let order = Recorder()
        var tasks: [Task<Void, Never>] = []
        for (index, (name, ahead)) in [("a", false), ("b", false), ("chain 1", true), ("chain 2", true)].enumerated() {
            tasks.append(Task {
                let ticket = await gate.enter(name: name, ahead: ahead)
                await order.add(name)
                await gate.leave(ticket)
            })
            await Self.waiters(index + 1, at: gate)
        }
        await gate.leave(first)
        for task in tasks { await task.value }
        #expect(await order.names == ["chain 1", "chain 2", "a", "b"])
    }

    @Test func aWaiterAheadWaitsForAllSlotsItNeedsAndNobodyPassesIt() async throws {
        let gate = SlotGate(width: 2)
        let holder = await gate.enter(name: "holder")
        let order = Recorder()
        let alone = Task {
            let ticket = await gate.enter(weight: 2, name: "alone", ahead: true)
            await order.add("alone")
            await gate.leave(ticket)
        }
        await Self.waiters(1, at: gate)
        // One slot is free, but the waiter at the head needs both.
        let after = Task {
            let ticket = await gate.enter(name: "after")
            await order.add("after")
            await gate.leave(ticket)
        }
        await Self.waiters(2, at: gate)
        #expect(await order.names.isEmpty)
        await gate.leave(holder)
        await alone.value
        await after.value
        #expect(await order.names == ["alone", "after"])
    }

    actor Recorder {
        var names: [String] = []
        func add(_ name: String) { names.append(name) }
    }
}
