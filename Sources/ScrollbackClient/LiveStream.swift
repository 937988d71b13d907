import Foundation
import Logging
import NIOConcurrencyHelpers
import ScrollbackModels
import WSClient

/// What the live stream of one conversation delivers.
public enum LiveEvent: Sendable, Equatable {
    /// A new message. Across disconnects every message arrives exactly once,
    /// in seq order: missed ones are fetched over HTTP before later ones.
    case message(Message)
    /// An edit or deletion of a message delivered earlier (or of the history
    /// before it), carrying the message's new version. After a reconnect the
    /// changes made while away arrive as these too.
    case updated(Message)
    case read(userId: String, seq: Int64)
    case typing(userId: String)
    /// The socket is subscribed and caught up (after each reconnect too):
    /// the conversation's last seq and version when it subscribed, so a
    /// timeline asks for the changes after `version` and no earlier.
    case connected(lastSeq: Int64, version: Int64)
    /// The socket was lost (reported once per loss); the stream reconnects by itself.
    case disconnected(reason: String)
    /// The user was removed from the conversation; the stream ends.
    case memberRemoved
}

extension ScrollbackClient {
    /// The live events of a conversation, from after `seq` (nil: from now),
    /// reconnecting with backoff and jitter until the sequence is dropped or
    /// the task is cancelled. It ends with an error only for a conversation
    /// the user cannot see, or a token the server refuses (a fresh one from
    /// the provider, twice in a row; one that expires on a live socket is
    /// replaced on the next connection).
    public func live(conversation id: UUID, after seq: Int64? = nil) -> AsyncThrowingStream<LiveEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var live = LiveProtocol(conversationId: id, after: seq, retry: retry, subscribeTimeout: subscribeTimeout)
                do {
                    try await run(&live, emit: { continuation.yield($0) })
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// How long a new connection may take to be subscribed.
    var subscribeTimeout: Duration { min(timeout, .seconds(10)) }

    /// The address of `GET /v1/stream` (ws or wss, as the base URL is http or https).
    var streamURL: String { (baseURL.hasPrefix("https") ? "wss" : "ws") + baseURL.drop { $0 != ":" } + "/v1/stream" }

    /// How the kit's sockets connect: frames up to four times the limit of
    /// one message, a ping every 30 s.
    static var socketConfiguration: WebSocketClientConfiguration {
        .init(
            maxFrameSize: APILimits.maxStreamFrameBytes * 4, closeTimeout: .seconds(5),
            autoPing: .enabled(timePeriod: .seconds(30)))
    }

    /// The WebSocket library's own logging, quiet: the kit reports losses as events.
    static var socketLogger: Logger {
        var logger = Logger(label: "scrollback.client.live")
        logger.logLevel = .critical
        return logger
    }

    /// Runs the steps of `live` until it finishes: sockets, timers and HTTP
    /// fetches here, every decision in the protocol. Inputs are handled one
    /// at a time; an HTTP fetch is awaited before the next frame is handled.
    private func run(_ live: inout LiveProtocol, emit: (LiveEvent) -> Void) async throws {
        let id = live.conversationId
        let url = streamURL
        let (events, inbox) = AsyncStream.makeStream(of: LiveSocket.Event.self)
        var iterator = events.makeAsyncIterator()
        var socket: LiveSocket?
        var opened = 0
        var timers: [LiveProtocol.Timer: Task<Void, Never>] = [:]
        defer {
            socket?.close()
            for timer in timers.values { timer.cancel() }
            inbox.finish()
        }
        // Answers of fetches (and the start) come before anything else that happened.
        var answers: [LiveProtocol.Input] = [.start]
        while true {
            let input: LiveProtocol.Input
            if !answers.isEmpty {
                input = answers.removeFirst()
            } else if Task.isCancelled {
                input = .cancel
            } else if let event = await iterator.next() {
                // What an older socket still reports is not about this one.
                if let number = event.socket, number != socket?.number { continue }
                if case .timerFired(let timer) = event.input { timers[timer] = nil }
                input = event.input
            } else {
                input = .cancel
            }
            // A gap fill after this frame asks for pages at least as new as it.
            if case .received(let frame) = input { versions.saw(frame) }
            for step in live.handle(input) {
                switch step {
                case .connect:
                    socket?.close()
                    socket = nil
                    let bearer: String
                    do {
                        bearer = try await token()
                    } catch {
                        answers.append(.tokenUnavailable(reason: "\(error)"))
                        continue
                    }
                    opened += 1
                    socket = LiveSocket(number: opened, url: url, token: bearer, inbox: inbox)
                case .send(let frame):
                    await socket?.send(frame)
                case .disconnect:
                    socket?.close()
                    socket = nil
                case .fetchPage(let after, let limit):
                    do {
                        answers.append(.pageReceived(try await retrying { () async throws(ScrollbackError) in
                            try await self.page(of: id, .after(after), limit: limit)
                        }))
                    } catch {
                        answers.append(.fetchFailed(error))
                    }
                case .fetchChanges(let since, let limit):
                    do {
                        answers.append(.changesReceived(try await retrying { () async throws(ScrollbackError) in
                            try await self.changes(in: id, since: since, limit: limit)
                        }))
                    } catch {
                        answers.append(.fetchFailed(error))
                    }
                case .emit(let event):
                    emit(event)
                case .startTimer(let timer, let delay):
                    timers[timer]?.cancel()
                    timers[timer] = Task {
                        guard (try? await Task.sleep(for: delay)) != nil else { return }
                        inbox.yield(LiveSocket.Event(socket: nil, input: .timerFired(timer)))
                    }
                case .finish(let error):
                    if let error { throw error }
                    return
                }
            }
        }
    }
}

/// One socket of a live stream, run by a task of its own that reports what
/// happens to it to the stream's inbox. Closing it gives it up at once: an
/// upgrade that hangs (a server in the middle of shutting down, a proxy
/// whose backend is gone), which WSClient's connect would wait on forever
/// and the protocol's subscribe deadline gives up, is left to end with its
/// connection, and sends and delivers nothing if it succeeds later.
final class LiveSocket: Sendable {
    struct Event: Sendable {
        /// The socket it is about; nil for a timer.
        var socket: Int?
        var input: LiveProtocol.Input
    }

    private enum Phase {
        case connecting
        case open(WebSocketOutboundWriter)
        case closed
    }

    let number: Int
    private let phase = NIOLockedValueBox(Phase.connecting)
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    init(number: Int, url: String, token: String, inbox: AsyncStream<Event>.Continuation) {
        self.number = number
        let report: @Sendable (LiveProtocol.Input) -> Void = { inbox.yield(Event(socket: number, input: $0)) }
        task.withLockedValue {
            $0 = Task { [self] in
                do {
                    let close = try await WebSocketClient.connect(
                        url: url, configuration: ScrollbackClient.socketConfiguration,
                        logger: ScrollbackClient.socketLogger
                    ) { inbound, outbound, _ in
                        guard self.upgraded(outbound) else { return }
                        // The token goes in the first frame rather than the
                        // upgrade's header: a refusal then comes after the client
                        // is reading, never together with the 101 (where a frame
                        // and the server's FIN arriving at once can be lost).
                        let auth = try ScrollbackJSON.encoder().encode(ClientFrame.auth(token: token))
                        try await outbound.write(.text(String(decoding: auth, as: UTF8.self)))
                        report(.opened)
                        for try await message in inbound.messages(maxSize: APILimits.maxStreamFrameBytes * 4) {
                            guard case .text(let text) = message,
                                let frame = try? ScrollbackJSON.decoder().decode(ServerFrame.self, from: Data(text.utf8))
                            else { continue }
                            report(.received(frame))
                        }
                    }
                    report(.closed(code: close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) }, reason: close?.reason))
                } catch {
                    report(.failed(reason: "\(error)"))
                }
            }
        }
    }

    /// Called when the upgrade succeeded; false if the socket was given up.
    private func upgraded(_ outbound: WebSocketOutboundWriter) -> Bool {
        phase.withLockedValue { phase in
            guard case .connecting = phase else { return false }
            phase = .open(outbound)
            return true
        }
    }

    func send(_ frame: ClientFrame) async {
        guard case .open(let outbound) = phase.withLockedValue({ $0 }),
            let data = try? ScrollbackJSON.encoder().encode(frame)
        else { return }
        // A write that fails is a socket that closes: the close is reported.
        try? await outbound.write(.text(String(decoding: data, as: UTF8.self)))
    }

    func close() {
        phase.withLockedValue { $0 = .closed }
        task.withLockedValue { $0 }?.cancel()
    }
}
