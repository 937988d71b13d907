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
    /// A member came online, went offline or hid their presence (which
    /// looks like offline, never seen).
    case presence(MemberPresence)
    /// A member's role changed (a handover of ownership is two of these).
    case memberUpdated(userId: String, role: MemberRole)
    /// The conversation's title, description, image, data or slow mode
    /// changed (`detailsVersion` orders two of these).
    case conversationUpdated(ConversationDetails)
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
    /// replaced on the next connection). Every stream, feed and inbox feed
    /// of a client subscribes on the client's one socket.
    public func live(conversation id: UUID, after seq: Int64? = nil) -> AsyncThrowingStream<LiveEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var live = LiveProtocol(conversationId: id, after: seq, retry: retry, subscribeTimeout: subscribeTimeout)
                do {
                    try await subscribe(.conversation(id), handle: { live.handle($0) }, emit: { continuation.yield($0) })
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
    static func streamURL(_ baseURL: String) -> String {
        (baseURL.hasPrefix("https") ? "wss" : "ws") + baseURL.drop { $0 != ":" } + "/v1/stream"
    }

    /// How the kit's socket connects: frames up to four times the limit of
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

    /// Runs a subscription to `topic` whose every decision is a reducer's
    /// (run by an `EffectRunner`): `steps` hands it each input and answers
    /// with the steps to take, nil once the runner is gone. The events of
    /// those steps are the reducer's already. What it ended with.
    func runSubscription(_ topic: LiveTopic, steps: (LiveProtocol.Input) -> [LiveProtocol.Step]?) async
        -> ScrollbackError?
    {
        do {
            try await subscribe(topic, handle: { steps($0) ?? [.finish(nil)] }, emit: { _ in })
            return nil
        } catch {
            return error as? ScrollbackError ?? .transport(message: "\(error)")
        }
    }

    /// Runs the steps of a subscription to `topic` on the shared socket
    /// until they finish: a conversation's live protocol, or the inbox's
    /// (whose steps are its `Subscription`'s, and fetch nothing). Inputs
    /// are handled one at a time, and the steps performed in order; an HTTP
    /// fetch is awaited before the next frame is handled.
    func subscribe(
        _ topic: LiveTopic, handle: (LiveProtocol.Input) -> [LiveProtocol.Step], emit: (LiveEvent) -> Void
    ) async throws {
        let (inputs, inbox) = AsyncStream.makeStream(of: LiveProtocol.Input.self)
        let subscriber = await connection.join(topic, inbox: inbox)
        var timers: [LiveProtocol.Timer: Task<Void, Never>] = [:]
        let ending: (any Error)?
        do {
            try await run(topic, subscriber, inputs, inbox, &timers, handle: handle, emit: emit)
            ending = nil
        } catch {
            ending = error
        }
        for timer in timers.values { timer.cancel() }
        inbox.finish()
        await connection.leave(subscriber)
        if let ending { throw ending }
    }

    private func run(
        _ topic: LiveTopic, _ subscriber: LiveConnection.Subscriber, _ inputs: AsyncStream<LiveProtocol.Input>,
        _ inbox: AsyncStream<LiveProtocol.Input>.Continuation, _ timers: inout [LiveProtocol.Timer: Task<Void, Never>],
        handle: (LiveProtocol.Input) -> [LiveProtocol.Step], emit: (LiveEvent) -> Void
    ) async throws {
        var iterator = inputs.makeAsyncIterator()
        // Answers of fetches (and the start) come before anything else that happened.
        var answers: [LiveProtocol.Input] = [.start]
        while true {
            let input: LiveProtocol.Input
            if !answers.isEmpty {
                input = answers.removeFirst()
            } else if Task.isCancelled {
                input = .cancel
            } else if let next = await iterator.next() {
                if case .timerFired(let timer) = next { timers[timer] = nil }
                input = next
            } else {
                input = .cancel
            }
            // A gap fill after this frame asks for pages at least as new as it.
            if case .received(let frame) = input { versions.saw(frame) }
            for step in handle(input) {
                switch step {
                case .connect:
                    await connection.want(subscriber)
                case .send(let frame):
                    await connection.send(frame, from: subscriber)
                case .disconnect:
                    await connection.release(subscriber)
                case .fetchPage(let after, let limit):
                    answers.append(
                        await fetch(in: topic, answer: LiveProtocol.Input.pageReceived) { id throws(ScrollbackError) in
                            try await self.page(of: id, .after(after), limit: limit)
                        })
                case .fetchChanges(let since, let limit):
                    answers.append(
                        await fetch(in: topic, answer: LiveProtocol.Input.changesReceived) { id throws(ScrollbackError) in
                            try await self.changes(in: id, since: since, limit: limit)
                        })
                case .emit(let event):
                    emit(event)
                case .startTimer(let timer, let delay):
                    timers[timer]?.cancel()
                    timers[timer] = Task {
                        guard (try? await Task.sleep(for: delay)) != nil else { return }
                        inbox.yield(.timerFired(timer))
                    }
                case .finish(let error):
                    if let error { throw error }
                    return
                }
            }
        }
    }

    /// A fetch of a conversation's live protocol, retried, as the input that
    /// answers it (the inbox's subscription asks for none).
    private func fetch<Value>(
        in topic: LiveTopic, answer: (Value) -> LiveProtocol.Input,
        _ read: (UUID) async throws(ScrollbackError) -> Value
    ) async -> LiveProtocol.Input {
        guard case .conversation(let id) = topic else {
            return .fetchFailed(.transport(message: "The inbox's subscription fetches nothing."))
        }
        do {
            return answer(try await retrying { () async throws(ScrollbackError) in try await read(id) })
        } catch {
            return .fetchFailed(error)
        }
    }
}
