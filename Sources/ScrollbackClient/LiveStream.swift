import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
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
    /// The socket is subscribed and caught up (after each reconnect too).
    case connected(lastSeq: Int64)
    /// The socket was lost (reported once per loss); the stream reconnects by itself.
    case disconnected(reason: String)
    /// The user was removed from the conversation; the stream ends.
    case memberRemoved
}

extension ScrollbackClient {
    /// The live events of a conversation, from after `seq` (nil: from now),
    /// reconnecting with backoff and jitter until the sequence is dropped or
    /// the task is cancelled. It ends with an error only for a conversation
    /// the user cannot see, or a token the server refuses.
    public func live(conversation id: UUID, after seq: Int64? = nil) -> AsyncThrowingStream<LiveEvent, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                var state = LiveState(lastSeq: seq)
                do {
                    try await runLive(id, state: &state, emit: { continuation.yield($0) })
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Where a live stream stands, kept across reconnects.
    struct LiveState: Sendable {
        /// The last message delivered.
        var lastSeq: Int64?
        /// The version of the last `subscribed`: changes after it that were
        /// not seen live are fetched after a reconnect.
        var subscribedVersion: Int64?
        /// The highest version delivered while connected.
        var seenVersion: Int64 = 0
        var failures = 0
        var ended = false
        /// Subscribed on the current connection: its loss is reported once,
        /// failed attempts to reconnect are not.
        var isUp = false
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

    private func runLive(_ id: UUID, state: inout LiveState, emit: @escaping @Sendable (LiveEvent) -> Void) async throws {
        let logger = Self.socketLogger
        let url = streamURL
        while !Task.isCancelled, !state.ended {
            let bearer: String
            do {
                bearer = try await token()
            } catch {
                throw ScrollbackError.unauthorized(message: "The token provider failed: \(error)")
            }
            let box = StateBox(state)
            let attempt = ConnectionAttempt()
            do {
                let close = try await attempt.run(upgradeTimeout: subscribeTimeout) {
                    try await WebSocketClient.connect(
                    url: url,
                    configuration: Self.socketConfiguration,
                    logger: logger
                ) { inbound, outbound, _ in
                    // An attempt given up while its upgrade hung may still
                    // connect later: it must not deliver anything then.
                    guard attempt.upgraded() else { return }
                    // The token goes in the first frame rather than the
                    // upgrade's header: a refusal then comes after the client
                    // is reading, never together with the 101 (where a frame
                    // and the server's FIN arriving at once can be lost).
                    let auth = try ScrollbackJSON.encoder().encode(ClientFrame.auth(token: bearer))
                    try await outbound.write(.text(String(decoding: auth, as: UTF8.self)))
                    let after = box.value.lastSeq
                    let subscribe = try ScrollbackJSON.encoder().encode(ClientFrame.subscribe(conversationId: id, afterSeq: after))
                    try await outbound.write(.text(String(decoding: subscribe, as: UTF8.self)))
                    try await withThrowingTaskGroup(of: Bool.self) { group in
                        group.addTask {
                            for try await message in inbound.messages(maxSize: APILimits.maxStreamFrameBytes * 4) {
                                guard case .text(let text) = message,
                                    let frame = try? ScrollbackJSON.decoder().decode(
                                        ServerFrame.self, from: Data(text.utf8))
                                else { continue }
                                var current = box.value
                                try await handle(frame, in: id, state: &current, emit: emit)
                                box.value = current
                                if current.ended { break }
                            }
                            return true
                        }
                        // A connection that is not subscribed in time (a server
                        // still starting, a stalled database, a connection that
                        // answers nothing) is dropped and tried again rather
                        // than waited on forever.
                        group.addTask {
                            try await Task.sleep(for: subscribeTimeout)
                            return false
                        }
                        while let readerEnded = try await group.next() {
                            if readerEnded { break }
                            if !box.value.isUp {
                                throw ScrollbackError.transport(message: "Not subscribed within \(subscribeTimeout).")
                            }
                        }
                        group.cancelAll()
                    }
                }
                }
                state = box.value
                if let close, close.closeCode == .unknown(UInt16(StreamCloseCode.unauthorized)) {
                    // The token expired: a fresh one from the provider on the next connection.
                    state.failures = 0
                }
                if !state.ended { reportDown(&state, close?.reason ?? "connection closed", emit) }
            } catch let error as ScrollbackError {
                state = box.value
                switch error {
                case .notFound, .forbidden: throw error
                default: reportDown(&state, error.localizedDescription, emit)
                }
            } catch {
                state = box.value
                reportDown(&state, "\(error)", emit)
            }
            guard !state.ended else { return }
            state.failures += 1
            try? await Task.sleep(for: retry.delay(afterFailure: state.failures))
        }
    }

    private func reportDown(_ state: inout LiveState, _ reason: String, _ emit: (LiveEvent) -> Void) {
        guard state.isUp else { return }
        state.isUp = false
        emit(.disconnected(reason: reason))
    }

    private func handle(
        _ frame: ServerFrame, in id: UUID, state: inout LiveState, emit: @Sendable (LiveEvent) -> Void
    ) async throws {
        switch frame {
        case .subscribed(_, let lastSeq, let version):
            state.failures = 0
            // Missed messages come from the backlog (or resync_required);
            // missed edits of messages held before come from the change log.
            if let since = state.subscribedVersion, since < version {
                try await catchUpChanges(id, since: since, through: state.lastSeq ?? lastSeq, state: &state, emit: emit)
            }
            state.subscribedVersion = version
            if state.lastSeq == nil { state.lastSeq = lastSeq }
            state.isUp = true
            emit(.connected(lastSeq: lastSeq))
        case .message(let message):
            try await deliver(message, in: id, state: &state, emit: emit)
        case .messageUpdated(let message):
            state.seenVersion = max(state.seenVersion, message.version)
            if let last = state.lastSeq, message.seq <= last { emit(.updated(message)) }
        case .read(_, let user, let seq):
            emit(.read(userId: user, seq: seq))
        case .typing(_, let user):
            emit(.typing(userId: user))
        case .memberRemoved:
            state.ended = true
            emit(.memberRemoved)
        case .resyncRequired(_, let lastSeq):
            try await fill(id, through: lastSeq, state: &state, emit: emit)
        case .error(let code, let message, let ref, _):
            if code == .conversationNotFound { throw ScrollbackError.notFound(code: code, message: message) }
            if code == .unauthorized { throw ScrollbackError.unauthorized(message: message) }
            // The subscription itself failed (the database was unavailable,
            // say): reconnect and subscribe again, with backoff.
            if !state.isUp, ref == id.wire {
                throw ScrollbackError.unavailable(code: code, retryAfter: nil, message: message)
            }
        case .ack, .pong, .inboxSubscribed, .conversationActivity, .memberAdded, .inboxRead, .inboxMemberRemoved,
            .inboxResyncRequired:
            break  // not about this conversation's subscription
        }
    }

    /// Delivers a message in seq order: a gap before it is filled over HTTP first.
    private func deliver(
        _ message: Message, in id: UUID, state: inout LiveState, emit: @Sendable (LiveEvent) -> Void
    ) async throws {
        state.seenVersion = max(state.seenVersion, message.version)
        if let last = state.lastSeq {
            guard message.seq > last else { return }
            if message.seq > last + 1 { try await fill(id, through: message.seq - 1, state: &state, emit: emit) }
        }
        emit(.message(message))
        state.lastSeq = message.seq
    }

    /// Pages over HTTP from the last delivered seq up to `through`.
    private func fill(
        _ id: UUID, through: Int64, state: inout LiveState, emit: @Sendable (LiveEvent) -> Void
    ) async throws {
        while let last = state.lastSeq, last < through {
            let page = try await retrying { () async throws(ScrollbackError) in
                try await self.page(of: id, .after(last), limit: APILimits.pageLimit.upperBound)
            }
            let newer = page.messages.filter { $0.seq > last && $0.seq <= through }.sorted { $0.seq < $1.seq }
            guard !newer.isEmpty else { return }
            for message in newer {
                emit(.message(message))
                state.lastSeq = message.seq
                state.seenVersion = max(state.seenVersion, message.version)
            }
        }
    }

    /// The edits and deletions made while away to messages already delivered.
    private func catchUpChanges(
        _ id: UUID, since: Int64, through: Int64, state: inout LiveState, emit: @Sendable (LiveEvent) -> Void
    ) async throws {
        var version = since
        while true {
            let from = version
            let changes = try await retrying { () async throws(ScrollbackError) in
                try await self.changes(in: id, since: from, limit: APILimits.changesLimit.upperBound)
            }
            for message in changes.messages where message.seq <= through && message.version > state.seenVersion {
                emit(.updated(message))
            }
            state.seenVersion = max(state.seenVersion, changes.version)
            guard changes.hasMore, changes.version > version else { return }
            version = changes.version
        }
    }
}

/// One connection attempt of a live stream. WSClient's connect has no
/// timeout of its own, and a connection that was accepted but never answers
/// its upgrade (a server in the middle of shutting down, a proxy whose
/// backend is gone) would wait forever: past `upgradeTimeout` without an
/// upgrade the attempt is given up (its task is left to end with its
/// connection) and the stream tries again.
final class ConnectionAttempt: Sendable {
    private enum Phase { case connecting, upgraded, abandoned }
    private let phase = NIOLockedValueBox(Phase.connecting)

    /// Called when the upgrade succeeded; false if the attempt was given up.
    func upgraded() -> Bool {
        phase.withLockedValue { phase in
            guard phase == .connecting else { return false }
            phase = .upgraded
            return true
        }
    }

    private func abandon() -> Bool {
        phase.withLockedValue { phase in
            guard phase == .connecting else { return false }
            phase = .abandoned
            return true
        }
    }

    func run<T: Sendable>(upgradeTimeout: Duration, _ connect: @escaping @Sendable () async throws -> T) async throws -> T {
        let once = NIOLockedValueBox<CheckedContinuation<T, any Error>?>(nil)
        return try await withCheckedThrowingContinuation { continuation in
            once.withLockedValue { $0 = continuation }
            let work = Task {
                let result: Result<T, any Error>
                do {
                    result = .success(try await connect())
                } catch {
                    result = .failure(error)
                }
                once.withLockedValue { $0.take() }?.resume(with: result)
            }
            Task {
                try? await Task.sleep(for: upgradeTimeout)
                guard self.abandon() else { return }
                work.cancel()
                once.withLockedValue { $0.take() }?.resume(
                    throwing: ScrollbackError.transport(message: "The WebSocket upgrade got no answer within \(upgradeTimeout)."))
            }
        }
    }
}

/// The live state shared with the socket's handler closure, which the
/// WebSocket client runs as a `@Sendable` function.
private final class StateBox: Sendable {
    private let state: NIOLockedValueBox<ScrollbackClient.LiveState>

    init(_ state: ScrollbackClient.LiveState) {
        self.state = NIOLockedValueBox(state)
    }

    var value: ScrollbackClient.LiveState {
        get { state.withLockedValue { $0 } }
        set { state.withLockedValue { $0 = newValue } }
    }
}
