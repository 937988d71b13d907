import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ScrollbackModels
import ScrollbackStore

/// One live-stream connection from authentication to close: answers the
/// client's messages in order as its channel handler reads them, while the
/// socket's writer drains its queue and a timer on its event loop closes it
/// when its token expires (`StreamSocket.watchAuthentication`).
///
/// A class, one for the server: the structs it holds are large, and a
/// struct would be copied into the frame of every call on a socket's task
/// (see `run`).
final class StreamSession: Sendable {
    let live: LiveDelivery
    let tokens: TokenAuthority
    let store: ScrollbackStore
    let limiter: RateLimiter
    let commands: MemberCommands
    let logger: Logger

    init(
        live: LiveDelivery, tokens: TokenAuthority, store: ScrollbackStore, limiter: RateLimiter,
        commands: MemberCommands, logger: Logger
    ) {
        self.live = live
        self.tokens = tokens
        self.store = store
        self.limiter = limiter
        self.commands = commands
        self.logger = logger
    }

    private static let decoder = ScrollbackJSON.decoder()

    /// Runs the socket until its connection closes.
    ///
    /// The socket's task lives as long as the socket, and a task keeps the
    /// memory its deepest call took until it ends (the runtime's task
    /// allocator keeps its slabs). So this task only waits for the
    /// connection's end: the socket's frames are read by its channel
    /// handler on its event loop (`StreamChannelHandler`) and answered by a
    /// task that exists while any wait (`answer`); what goes deeper here
    /// (the hand-over from the framework's inbound stream, admission, a
    /// token's verification, the disconnect) runs in a child task that
    /// gives its memory back when done (`inChildTask`); and the socket's
    /// pings and token watch are timers on its event loop. Every idle socket
    /// would otherwise keep that memory for as long as it stays open
    /// (BENCHMARKS.md, "What limits memory per idle socket").
    func run(inbound: WebSocketInboundStream, channel: any Channel, authorization: String?) async {
        let socket = StreamSocket(channel: channel, counters: live.counters, limits: live.options.queueLimits)
        // Without its handler in place the socket is closed (the client
        // closed first, or the connection is no live stream): the framework
        // ends the connection.
        guard await inChildTask({ await self.attach(socket, channel: channel, inbound: inbound) }) else { return }
        let admitted = await inChildTask { await self.open(socket, authorization: authorization) }
        if admitted {
            socket.watchAuthentication(within: APILimits.streamAuthSeconds)
            socket.startAnswering(by: self)
        }
        try? await channel.closeFuture.get()
        socket.stopWatch()
        await socket.answeredAll()
        if admitted {
            await inChildTask {
                await self.live.hub.disconnect(socket)
                if let user = socket.user { self.live.presence.disconnected(user) }
            }
        }
    }

    /// Puts the socket's channel handler in place and hands it the frames
    /// the framework read before it was (from `inbound`, up to the
    /// handler's marker); false when the connection ended before.
    @inline(never)
    private func attach(_ socket: StreamSocket, channel: any Channel, inbound: WebSocketInboundStream) async -> Bool {
        guard let handler = try? await StreamChannelHandler.install(
            on: channel, for: socket, pingInterval: live.options.pingInterval
        ).get() else { return false }
        var earlier: [WebSocketFrame] = []
        do {
            for try await frame in inbound {
                guard frame.opcode == .binary, frame.fin, frame.data == StreamChannelHandler.marker else {
                    let opcode: WebSocketOpcode =
                        switch frame.opcode {
                        case .text: .text
                        case .binary: .binary
                        case .continuation: .continuation
                        }
                    earlier.append(WebSocketFrame(fin: frame.fin, opcode: opcode, data: frame.data))
                    continue
                }
                let frames = earlier
                try await channel.eventLoop.submit { handler.value.takeOver(frames) }.get()
                return true
            }
        } catch {}
        return false
    }

    /// Answers the socket's messages one at a time, in order, until none
    /// waits; the socket starts it when one comes (`StreamSocket.received`).
    func answer(_ socket: StreamSocket) async {
        while let message = socket.nextReceived() {
            guard socket.beginHandling() else { continue }
            await handle(message, on: socket)
            socket.endHandling()
        }
    }

    /// Admits the socket into the hub (or closes it when the instance is
    /// full or shutting down) and verifies a token given in the upgrade's
    /// `Authorization` header; false when the socket was closed.
    private func open(_ socket: StreamSocket, authorization: String?) async -> Bool {
        switch await live.hub.connect(socket, limit: live.options.maxSockets) {
        case .accepted:
            break
        case .shuttingDown:
            socket.close(code: 1001, reason: "server shutting down")
            return false
        case .full:
            live.counters.refusedOverCapacity()
            socket.close(code: StreamCloseCode.tryAgainLater, reason: "too many sockets: retry later")
            return false
        }
        if let authorization {
            await authenticate(socket, token: { try TokenAuthority.bearerToken(authorization) })
        }
        return true
    }

    /// Runs `work` in a child task and waits for it, so that the memory it
    /// takes is given back when it ends (see `run`).
    @inline(never)
    private func inChildTask<Value: Sendable>(_ work: @escaping @Sendable () async -> Value) async -> Value {
        await withTaskGroup(of: Value.self) { group in
            group.addTask(operation: work)
            return await group.next()!
        }
    }

    /// Verifies a token for the socket; the first one decides whose socket
    /// it is, later ones (fresh tokens) only move its expiry.
    private func authenticate(_ socket: StreamSocket, token: () throws -> String) async {
        do {
            let verified = try await tokens.verify(try token())
            if let user = socket.user, user != verified.user {
                socket.send(
                    .error(code: .forbidden, message: "This socket belongs to \(user); a token of another user cannot be used on it.", ref: nil))
                return
            }
            let first = socket.user == nil
            if first { try await store.ensureUser(verified.user, token: verified.profile) }
            socket.authenticate(verified.user, until: verified.expires, issuedAt: verified.issuedAt)
            // (Counted before the close below, as the disconnect counts it out.)
            if first { live.presence.connected(verified.user) }
            // A revocation the feed brought after the token was checked, and
            // before the socket was this user's, found no socket to close.
            if try await tokens.isRevoked(verified) {
                socket.send(.error(code: .unauthorized, message: StreamSocket.revokedMessage, ref: nil))
                socket.close(code: StreamCloseCode.unauthorized, reason: "token revoked")
            }
        } catch let error as APIError where error.code == .unauthorized {
            socket.send(.error(code: error.code, message: error.message, ref: nil))
            socket.close(code: StreamCloseCode.unauthorized, reason: "not authenticated")
        } catch {
            send(error, ref: nil, to: socket)
            if socket.user == nil { socket.close(code: 1011, reason: "could not authenticate") }
        }
    }

    private func handle(_ message: WebSocketMessage, on socket: StreamSocket) async {
        let frame: ClientFrame
        do {
            guard case .text(let text) = message else {
                throw APIError.badRequest(.invalidJSON, "Frames are JSON text frames, not binary ones.")
            }
            do {
                frame = try Self.decoder.decode(ClientFrame.self, from: Data(text.utf8))
            } catch let error as UnknownFrameType {
                throw APIError.badRequest(
                    .unknownFrameType,
                    "Unknown frame type `\(error.type)`; the types are \(ClientFrame.types.joined(separator: ", ")).")
            } catch let error as DecodingError {
                throw APIError.badRequest(ScrollbackJSON.errorCode(of: error), ScrollbackJSON.explain(error))
            } catch let error as CustomDataError {
                throw APIError.unprocessable(.invalidData, error.description)
            }
        } catch {
            guard socket.user != nil else {
                return socket.close(code: 1008, reason: "the first frame must be an auth frame")
            }
            return send(error, ref: nil, to: socket)
        }
        guard let user = socket.user else {
            guard case .auth(let token) = frame else {
                return socket.close(code: 1008, reason: "the first frame must be an auth frame")
            }
            return await authenticate(socket, token: { token })
        }
        do {
            switch frame {
            case .auth(let token):
                await authenticate(socket, token: { token })
            case .subscribe(let id, let afterSeq, let presence):
                try limiter.check(.subscribe, for: user)
                try await subscribe(socket, user: user, to: id, after: afterSeq, presence: presence)
            case .unsubscribe(let id):
                await live.hub.unsubscribe(socket, from: id)
            case .subscribeInbox(let after):
                try limiter.check(.subscribe, for: user)
                try await subscribeInbox(socket, user: user, after: after)
            case .unsubscribeInbox:
                await live.hub.unsubscribeInbox(socket)
            case .send(let id, let body, let clientID, let replyTo, let attachments, let data, let messageType):
                do {
                    let outcome = try await commands.send(
                        body, clientID: clientID, replyTo: replyTo, attachments: attachments, data: data,
                        type: messageType, to: id, by: user)
                    let replayed = if case .replayed = outcome { true } else { false }
                    socket.send(.ack(clientId: clientID, message: outcome.message, replayed: replayed))
                } catch {
                    send(error, ref: clientID, to: socket)
                }
            case .read(let id, let seq):
                _ = try await commands.markRead(seq, in: id, by: user)
            case .typing(let id):
                try await commands.typing(in: id, by: user)
            case .ping:
                socket.send(.pong)
            }
        } catch {
            send(error, ref: frame.conversationRef, to: socket)
        }
    }

    /// Makes a subscription live: pending in the hub first, so nothing read
    /// meanwhile is missed, then the subscriber's own snapshot and backlog.
    private func subscribe(
        _ socket: StreamSocket, user: UserID, to id: UUID, after afterSeq: Int64?, presence: Bool
    ) async throws {
        if let afterSeq, afterSeq < 0 {
            throw APIError.unprocessable(.invalidField, "Field `after_seq` must be 0 or more.")
        }
        // Replaces a subscription to the same conversation, if any.
        await live.hub.register(socket, user: user, to: id, presence: presence)
        do {
            // After the registration: a block that commits later is heard
            // and read again (`LiveHub.takeBlockReads`).
            await live.hub.setBlocked(try await live.blockLists.blocked(by: user), for: user)
            guard
                let snapshot = try await store.feed(
                    of: id, afterSeq: afterSeq, afterVersion: .max, checking: [user],
                    limit: APILimits.maxStreamBacklog),
                snapshot.members.contains(user)
            else { throw StoreError.conversationNotFound }
            await live.hub.activate(socket, to: id, snapshot: snapshot)
        } catch {
            await live.hub.unsubscribe(socket, from: id)
            throw error
        }
    }

    /// Makes the socket's inbox live: pending in the hub first, so nothing
    /// read meanwhile is missed, then the socket's own snapshot, with what
    /// changed since `after`.
    private func subscribeInbox(_ socket: StreamSocket, user: UserID, after: String?) async throws {
        let cursor = try after.map { text in
            guard let cursor = InboxCursor(text) else {
                throw APIError.unprocessable(
                    .invalidField, "Field `after` must be the `cursor` of an earlier inbox frame (a decimal number).")
            }
            return cursor
        }
        await live.hub.registerInbox(socket, user: user)
        do {
            let snapshot = try await store.inbox(of: user, after: cursor, limit: APILimits.maxStreamBacklog)
            await live.hub.activateInbox(socket, after: cursor, snapshot: snapshot)
        } catch {
            await live.hub.unsubscribeInbox(socket)
            throw error
        }
    }

    /// An error frame with the code and message HTTP would answer with.
    private func send(_ error: any Error, ref: String?, to socket: StreamSocket) {
        let apiError: APIError
        switch error {
        case let error as APIError: apiError = error
        case let error as StoreError: apiError = APIError(error)
        default:
            logger.error("unexpected error on the live stream", metadata: ["error": "\(LoggedError.describe(error))"])
            apiError = APIError(.internalServerError, .internalError, "Something went wrong on our side.")
        }
        socket.send(.error(code: apiError.code, message: apiError.message, ref: ref, retryAfter: apiError.retryAfterSeconds))
    }
}

extension ClientFrame {
    /// The conversation a frame is about, as an error frame's `ref`.
    var conversationRef: String? {
        switch self {
        case .subscribe(let id, _, _), .unsubscribe(let id), .send(let id, _, _, _, _, _, _), .read(let id, _), .typing(let id):
            id.uuidString.lowercased()
        case .auth, .ping, .subscribeInbox, .unsubscribeInbox:
            nil
        }
    }
}
