import Foundation
import Logging
import NIOConcurrencyHelpers
import ScrollbackModels
import WSClient

#if canImport(Network)
import Network
#endif

/// The one live socket of a `ScrollbackClient` (and of its copies), shared
/// by every live stream, conversation feed and inbox feed: it performs what
/// `SocketRouting` decides, and hands each subscriber what happened as the
/// input of its own protocol.
actor LiveConnection {
    typealias Subscriber = SocketRouting.Subscriber

    private var routing = SocketRouting()
    private var sockets: [Int: LiveSocket] = [:]
    private var inboxes: [Subscriber: AsyncStream<LiveProtocol.Input>.Continuation] = [:]
    private var nextSubscriber = 0
    /// The app is in the background: new subscribers are told so at once.
    private var isSuspended = false
    private let url: String
    private let token: @Sendable (_ refreshing: Bool) async throws -> String
    /// The last socket was closed with 4401 (an expired or revoked token):
    /// the next one asks the provider for a fresh token.
    private var refused = false
    /// Where the socket's `user_updated` frames go.
    private let profiles: ProfileCache

    init(
        url: String, token: @escaping @Sendable (_ refreshing: Bool) async throws -> String,
        profiles: ProfileCache = ProfileCache()
    ) {
        self.url = url
        self.token = token
        self.profiles = profiles
    }

    /// Starts listening to `topic`; what happens to the socket arrives in `inbox`.
    func join(_ topic: LiveTopic, inbox: AsyncStream<LiveProtocol.Input>.Continuation) -> Subscriber {
        nextSubscriber += 1
        inboxes[nextSubscriber] = inbox
        perform(.join(nextSubscriber, topic))
        if isSuspended { inbox.yield(.backgrounded) }
        return nextSubscriber
    }

    /// Hands every subscriber what the app or the device says (the network
    /// is back, the app went to the background or came back). Going to the
    /// background also closes the socket: every subscriber is told first,
    /// so the loss that follows is not a failure to wait out.
    func tell(_ input: LiveProtocol.Input) {
        switch input {
        case .backgrounded: isSuspended = true
        case .foregrounded: isSuspended = false
        default: break
        }
        for inbox in inboxes.values { inbox.yield(input) }
        guard case .backgrounded = input else { return }
        for (number, socket) in sockets {
            socket.close()
            socketReported(number, .closed(code: nil, reason: "The app is in the background."))
        }
    }

    /// The subscriber needs the socket: `opened` arrives in its inbox when it may send.
    func want(_ subscriber: Subscriber) { perform(.want(subscriber)) }

    func send(_ frame: ClientFrame, from subscriber: Subscriber) { perform(.send(subscriber, frame)) }

    /// Gives up the subscriber's subscription on the current socket (it may want the socket again).
    func release(_ subscriber: Subscriber) { perform(.release(subscriber)) }

    /// Stops listening; the last subscriber to leave closes the socket.
    func leave(_ subscriber: Subscriber) {
        perform(.leave(subscriber))
        inboxes[subscriber] = nil
    }

    /// How many sockets this client has open or opening (0 or 1).
    var openSockets: Int { sockets.count }

    private func socketReported(_ number: Int, _ input: LiveProtocol.Input) {
        // The server says why before it closes (a subscriber may close the
        // socket on the error frame, before the 4401 arrives).
        switch input {
        case .closed(let code, _) where code == StreamCloseCode.unauthorized: refused = true
        case .received(.error(code: .unauthorized, _, _, _)): refused = true
        default: break
        }
        perform(.socket(number, input))
        switch input {
        case .closed, .failed, .tokenUnavailable: sockets[number] = nil
        default: break
        }
    }

    private func perform(_ action: SocketRouting.Action) {
        for effect in routing.handle(action) {
            switch effect {
            case .open(let number):
                open(number)
            case .close(let number):
                sockets.removeValue(forKey: number)?.close()
            case .write(let frame, let number):
                sockets[number]?.send(frame)
            case .tell(let subscriber, let input):
                inboxes[subscriber]?.yield(input)
            case .learn(let profile):
                profiles.learn([profile])
            }
        }
    }

    /// Opens socket `number` with a fresh token from the provider.
    private func open(_ number: Int) {
        let socket = LiveSocket(url: url) { [weak self] input in await self?.socketReported(number, input) }
        sockets[number] = socket
        let (token, refreshing) = (self.token, refused)
        refused = false
        socket.start(token: { try await token(refreshing) })
    }
}

/// One socket, run by a task of its own that reports what happens to it.
/// Frames to send are queued and written in order by the same task. Closing
/// it gives it up at once: an upgrade that hangs (a server in the middle of
/// shutting down, a proxy whose backend is gone), which WSClient's connect
/// would wait on forever and a subscriber's deadline gives up, is left to
/// end with its connection, and sends and delivers nothing if it succeeds
/// later.
final class LiveSocket: Sendable {
    private enum Phase {
        case connecting
        case open
        case closed
    }

    private let url: String
    private let report: @Sendable (LiveProtocol.Input) async -> Void
    private let phase = NIOLockedValueBox(Phase.connecting)
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
    private let outgoing: AsyncStream<ClientFrame>
    private let queue: AsyncStream<ClientFrame>.Continuation

    init(url: String, report: @escaping @Sendable (LiveProtocol.Input) async -> Void) {
        self.url = url
        self.report = report
        (outgoing, queue) = AsyncStream.makeStream(of: ClientFrame.self)
    }

    /// Connects with a token from `token`; reports `tokenUnavailable` when it fails.
    func start(token: @escaping @Sendable () async throws -> String) {
        task.withLockedValue {
            $0 = Task { [self] in
                let bearer: String
                do {
                    bearer = try await token()
                } catch {
                    return await report(.tokenUnavailable(reason: "\(error)"))
                }
                await run(token: bearer)
            }
        }
    }

    private func run(token: String) async {
        let (report, outgoing) = (self.report, self.outgoing)
        do {
            let close = try await Self.connect(url) { inbound, outbound, _ in
                guard self.upgraded() else { return }
                // The token goes in the first frame rather than the
                // upgrade's header: a refusal then comes after the client
                // is reading, never together with the 101 (where a frame
                // and the server's FIN arriving at once can be lost).
                try await outbound.write(.text(Self.text(of: .auth(token: token))))
                await report(.opened)
                try await withThrowingDiscardingTaskGroup { group in
                    group.addTask {
                        // A write that fails is a socket that closes: the close is reported.
                        for await frame in outgoing { try await outbound.write(.text(Self.text(of: frame))) }
                    }
                    for try await message in inbound.messages(maxSize: APILimits.maxStreamFrameBytes * 4) {
                        guard case .text(let text) = message,
                            let frame = try? ScrollbackJSON.decoder().decode(ServerFrame.self, from: Data(text.utf8))
                        else { continue }
                        await report(.received(frame))
                    }
                    group.cancelAll()
                }
            }
            await report(.closed(code: close.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) }, reason: close?.reason))
        } catch {
            await report(.failed(reason: "\(error)"))
        }
    }

    /// Connects and runs `handler`: on Apple platforms over Network.framework
    /// (SwiftNIO's transport services, as the HTTP client's calls there),
    /// elsewhere over POSIX sockets.
    private static func connect(
        _ url: String, handler: @escaping WebSocketDataHandler<WebSocketClient.Context>
    ) async throws -> WebSocketCloseFrame? {
        #if canImport(Network)
        try await WebSocketClient(
            url: url, configuration: ScrollbackClient.socketConfiguration,
            transportServicesTLSOptions: .options(NWProtocolTLS.Options()), logger: ScrollbackClient.socketLogger,
            handler: handler
        ).run()
        #else
        try await WebSocketClient.connect(
            url: url, configuration: ScrollbackClient.socketConfiguration, logger: ScrollbackClient.socketLogger,
            handler: handler)
        #endif
    }

    private static func text(of frame: ClientFrame) -> String {
        // Encoding a frame of the kit's own cannot fail.
        String(decoding: (try? ScrollbackJSON.encoder().encode(frame)) ?? Data(), as: UTF8.self)
    }

    /// Called when the upgrade succeeded; false if the socket was given up.
    private func upgraded() -> Bool {
        phase.withLockedValue { phase in
            guard case .connecting = phase else { return false }
            phase = .open
            return true
        }
    }

    /// Queues a frame; frames sent before the socket opens wait for it.
    func send(_ frame: ClientFrame) {
        queue.yield(frame)
    }

    func close() {
        phase.withLockedValue { $0 = .closed }
        queue.finish()
        task.withLockedValue { $0 }?.cancel()
    }
}
