import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import Testing

/// The conversation feed's conformance traces (conformance/feed/*.json):
/// each scenario must produce exactly its trace, and each trace must replay
/// from its events alone, as another client replays it.
/// `SCROLLBACK_RECORD_TRACES=1 swift test --filter FeedConformanceTests`
/// writes the traces again from the scenarios.
@Suite(.serialized) struct FeedConformanceTests {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("conformance/feed")
    static let recording = ProcessInfo.processInfo.environment["SCROLLBACK_RECORD_TRACES"] == "1"

    static func file(_ name: String) -> URL { directory.appendingPathComponent("\(name).json") }

    static func read(_ name: String) throws -> TraceJSON {
        try JSONDecoder().decode(TraceJSON.self, from: Data(contentsOf: file(name)))
    }

    @Test(arguments: FeedScenarios.all.keys.sorted())
    func theScenarioMakesItsTrace(name: String) throws {
        let scenario = try #require(FeedScenarios.all[name])
        let trace = scenario().trace
        if Self.recording {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try trace.written().write(to: Self.file(name), atomically: true, encoding: .utf8)
        }
        let kept = try Self.read(name)
        let (made, held) = (trace["steps"].array, kept["steps"].array)
        for (index, (step, keptStep)) in zip(made, held).enumerated() where step != keptStep {
            Issue.record("\(name) step \(index) differs from its trace:\nmade \(step.written())kept \(keptStep.written())")
            return
        }
        #expect(made.count == held.count, "\(name): \(made.count) steps made, \(held.count) kept")
        #expect(trace == kept)
    }

    @Test(arguments: FeedScenarios.all.keys.sorted())
    func theTraceReplaysFromItsEventsAlone(name: String) throws {
        let trace = try Self.read(name)
        let settings = FeedRecorder.Settings(json: trace["feed"])
        var state = settings.state()
        var pendingWrites: [StorageWrite] = []
        for (index, step) in trace["steps"].array.enumerated() {
            let event = try FeedTrace.event(from: step["event"], in: ServerHistory.id, pendingWrites: &pendingWrites)
            #expect(FeedTrace.event(event) == step["event"], "\(name) step \(index): the event reads back as written")
            let effects = FeedReducer.reduce(&state, event)
            for case .store(let write) in effects { pendingWrites.append(write) }
            let made = TraceJSON(effects.map(FeedTrace.effect))
            guard made == step["effects"], FeedTrace.visible(state.visible) == step["state"] else {
                Issue.record(
                    "\(name) step \(index) replays differently:\neffects \(made.written())state \(FeedTrace.visible(state.visible).written())")
                return
            }
        }
        #expect(pendingWrites.isEmpty, "\(name): every storage call is answered")
    }

    @Test func everyTraceKeptHasItsScenario() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
            .filter { $0.hasSuffix(".json") }.map { String($0.dropLast(5)) }
        #expect(Set(files) == Set(FeedScenarios.all.keys))
    }
}
