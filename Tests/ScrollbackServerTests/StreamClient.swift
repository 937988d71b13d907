import Foundation
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import ScrollbackModels
import Testing
import WSClient

/// A real WebSocket client of `/v1/stream` on loopback, for the tests: what
/// the server sends arrives as decoded frames, what the test sends goes out
/// as text frames, and the close frame the server sent is kept.
final class StreamClient: Sendable {
    /// How long a test waits for a frame, a close or the upgrade it expects:
    /// long enough for a machine whose cores are all taken. Only a test that
    /// fails waits that long; tests that expect nothing use `drain(for:)`.
    static let patience = Duration.seconds(30)

    private enum Outgoing: Sendable {
        case text(String)
        case raw(WebSocketFrame)
        case close
    }

    private let outgoing: AsyncStream<Outgoing>.Continuation
    private let frames: FrameInbox
    private let run: Task<WebSocketCloseFrame?, any Error>
    private let upgraded: Task<Bool, Never>
    /// How the connection ended, once it has.
    private let ended: NIOLockedValueBox<Result<WebSocketCloseFrame?, any Error>?>

    /// Connects; with `paused`, the client reads nothing from the socket
    /// until `resume()` (a client that stopped reading).
    init(
        port: Int, token: String? = nil, origin: String? = nil, paused: Bool = false,
        maxFrameSize: Int = 1 << 20
    ) {
        let (outgoing, continuation) = AsyncStream<Outgoing>.makeStream()
        self.outgoing = continuation
        let frames = FrameInbox()
        self.frames = frames
        let gate = Gate(open: !paused)
        self.gate = gate
        var headers = HTTPFields()
        if let token { headers[.authorization] = "Bearer \(token)" }
        if let origin { headers[.origin] = origin }
        var logger = Logger(label: "scrollback.tests.stream-client")
        logger.logLevel = .critical
        let connected = NIOLockedValueBox(false)
        run = Task {
            defer { frames.finish() }
            return try await WebSocketClient.connect(
                url: "ws://127.0.0.1:\(port)/v1/stream",
                configuration: .init(maxFrameSize: maxFrameSize, additionalHeaders: headers, closeTimeout: .seconds(5)),
                logger: logger
            ) { inbound, outbound, _ in
                connected.withLockedValue { $0 = true }
                frames.connected()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await item in outgoing {
                            switch item {
                            case .text(let text): try await outbound.write(.text(text))
                            case .raw(let frame): try await outbound.write(.custom(frame))
                            case .close:
                                try await outbound.close(.normalClosure, reason: nil)
                                return
                            }
                        }
                    }
                    // Sending goes on while reading waits (a client that stopped reading).
                    await gate.wait()
                    for try await message in inbound.messages(maxSize: maxFrameSize) {
                        guard case .text(let text) = message else { continue }
                        frames.received(text)
                    }
                    group.cancelAll()
                }
            }
        }
        let ended = NIOLockedValueBox<Result<WebSocketCloseFrame?, any Error>?>(nil)
        self.ended = ended
        upgraded = Task { [run] in
            let result = await run.result
            ended.withLockedValue { $0 = result }
            return connected.withLockedValue { $0 }
        }
    }

    private let gate: Gate

    /// Starts reading after `paused`.
    func resume() { gate.openNow() }

    func send(_ frame: ClientFrame) throws {
        let data = try ScrollbackJSON.encoder().encode(frame)
        sendRaw(String(decoding: data, as: UTF8.self))
    }

    func sendRaw(_ text: String) {
        outgoing.yield(.text(text))
    }

    /// A text frame of these bytes, valid UTF-8 or not.
    func sendRawText(_ bytes: [UInt8]) {
        outgoing.yield(.raw(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(bytes: bytes))))
    }

    /// Sends a close frame (1000).
    func close() {
        outgoing.yield(.close)
    }

    /// The next frame from the server; fails the test after `timeout`.
    func next(timeout: Duration = StreamClient.patience, sourceLocation: SourceLocation = #_sourceLocation) async throws
        -> ServerFrame
    {
        guard let text = await frames.next(timeout: timeout) else {
            let ending = ended.withLockedValue { $0 }.map { "the connection ended: \($0)" } ?? "the connection is open"
            Issue.record("no frame from the server within \(timeout); \(ending)", sourceLocation: sourceLocation)
            throw StreamClientError.noFrame
        }
        return try ScrollbackJSON.decoder().decode(ServerFrame.self, from: Data(text.utf8))
    }

    /// Frames until one matches, skipping the others (typing, read, pong).
    func next(
        where matches: (ServerFrame) -> Bool, timeout: Duration = StreamClient.patience,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> ServerFrame {
        let deadline = ContinuousClock.now + timeout
        while true {
            let frame = try await next(timeout: deadline - ContinuousClock.now, sourceLocation: sourceLocation)
            if matches(frame) { return frame }
        }
    }

    /// Every frame that arrives within `window`.
    /// The next frame if one comes within `window`; nil otherwise (no
    /// issue recorded: for a test that handles the absence itself).
    func frame(within window: Duration) async -> ServerFrame? {
        guard let text = await frames.next(timeout: window) else { return nil }
        return try? ScrollbackJSON.decoder().decode(ServerFrame.self, from: Data(text.utf8))
    }

    func drain(for window: Duration) async -> [ServerFrame] {
        var result: [ServerFrame] = []
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline,
            let text = await frames.next(timeout: deadline - ContinuousClock.now)
        {
            if let frame = try? ScrollbackJSON.decoder().decode(ServerFrame.self, from: Data(text.utf8)) {
                result.append(frame)
            }
        }
        return result
    }

    /// The close frame the server sent, once the connection has ended (nil
    /// if it ended without one); throws `stillOpen` after `timeout`.
    func closed(timeout: Duration = StreamClient.patience) async throws -> WebSocketCloseFrame? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let result = ended.withLockedValue({ $0 }) { return try result.get() }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw StreamClientError.stillOpen
    }

    /// Whether the upgrade succeeded (false: refused), once the connection ended.
    var wasUpgraded: Bool {
        get async { await upgraded.value }
    }

    /// Ends the connection from the test's side without ceremony.
    func cancel() {
        gate.openNow()
        outgoing.finish()
        run.cancel()
    }

    /// Waits until the socket is open (the upgrade answered 101).
    func waitUntilConnected(timeout: Duration = StreamClient.patience) async throws {
        guard await frames.waitConnected(timeout: timeout) else {
            // How it ended, if it ends soon; never awaited without a limit:
            // an upgrade that never answers would hold the test.
            defer { run.cancel() }
            do {
                _ = try await closed(timeout: .seconds(2))
            } catch let error where !(error is StreamClientError) {
                throw StreamClientError.notConnected("\(error)")
            } catch {}
            throw StreamClientError.notConnected("refused or timed out")
        }
    }
}

enum StreamClientError: Error {
    case noFrame, stillOpen
    case notConnected(String)
}

/// Frames received, waited for with a timeout.
final class FrameInbox: Sendable {
    private struct State {
        var texts: [String] = []
        var head = 0
        var finished = false
        var isConnected = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// Counts changes, so a waiter that registers late does not sleep through one.
        var generation: UInt64 = 0
        /// Waits whose deadline passed before they were registered.
        var expired: Set<UInt64> = []
    }

    private let state = NIOLockedValueBox(State())

    func received(_ text: String) {
        wake { $0.texts.append(text) }
    }

    func finish() { wake { $0.finished = true } }
    func connected() { wake { $0.isConnected = true } }

    private func wake(_ change: (inout State) -> Void) {
        let waiters = state.withLockedValue { state in
            change(&state)
            state.generation += 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    func next(timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (text, done, generation) = state.withLockedValue { state -> (String?, Bool, UInt64) in
                if state.head < state.texts.count {
                    defer { state.head += 1 }
                    return (state.texts[state.head], true, state.generation)
                }
                return (nil, state.finished, state.generation)
            }
            if let text { return text }
            if done || ContinuousClock.now >= deadline { return nil }
            await wait(until: deadline, seen: generation)
        }
    }

    func waitConnected(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let (connected, finished, generation) = state.withLockedValue { ($0.isConnected, $0.finished, $0.generation) }
            if connected { return true }
            if finished || ContinuousClock.now >= deadline { return false }
            await wait(until: deadline, seen: generation)
        }
    }

    /// Until something changes after `seen` or the deadline passes. The
    /// timer can fire before the waiter is registered (a deadline already
    /// past, a busy machine): it then marks the wait expired, and the
    /// registration that comes later sees that and does not wait. Without
    /// the mark, that waiter would sleep until the next frame, and on a
    /// connection that has ended, forever.
    private func wait(until deadline: ContinuousClock.Instant, seen: UInt64) async {
        let id = state.withLockedValue { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let goOn = self.state.withLockedValue { state in
                        if state.generation != seen || state.expired.remove(id) != nil { return true }
                        state.waiters[id] = continuation
                        return false
                    }
                    if goOn { continuation.resume() }
                }
            }
            group.addTask {
                try? await Task.sleep(until: deadline)
                let waiter = self.state.withLockedValue { state -> CheckedContinuation<Void, Never>? in
                    guard let waiter = state.waiters.removeValue(forKey: id) else {
                        state.expired.insert(id)
                        return nil
                    }
                    return waiter
                }
                waiter?.resume()
            }
            await group.next()
            group.cancelAll()
        }
        state.withLockedValue { _ = $0.expired.remove(id) }
    }
}

/// Holds the client's reading back until opened.
private final class Gate: Sendable {
    private let state: NIOLockedValueBox<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>

    init(open: Bool) {
        state = NIOLockedValueBox((open, []))
    }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLockedValue { state in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func openNow() {
        let waiters = state.withLockedValue { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
