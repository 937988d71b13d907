import Foundation
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
import ScrollbackServer

/// A webhook receiver on a loopback port: records every POST it gets (the
/// headers the outbox sends and the raw body) and answers what `answer`
/// says for it: a status, or no answer until the sender gives up.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        var eventID: String
        var attempt: Int
        var signature: String
        var body: [UInt8]

        var event: WebhookEvent {
            get throws { try ScrollbackJSON.decoder().decode(WebhookEvent.self, from: Data(body)) }
        }
    }

    enum Answer: Sendable {
        case status(Int)
        /// A status with a JSON body.
        case json(Int, String)
        /// Holds the request for this long before answering 200.
        case hang(Duration)
    }

    private let received = NIOLockedValueBox<[Delivery]>([])
    private let answer: @Sendable (Delivery) -> Answer

    init(answer: @escaping @Sendable (Delivery) -> Answer = { _ in .status(204) }) {
        self.answer = answer
    }

    /// Every POST so far, in the order they arrived.
    var deliveries: [Delivery] { received.withLockedValue { $0 } }

    /// Runs `body` with the receiver listening; `body` gets its URL.
    func serve<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/hook") { [received, answer] request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 20)
            let delivery = Delivery(
                eventID: request.headers[.init("Scrollback-Event-Id")!] ?? "",
                attempt: Int(request.headers[.init("Scrollback-Attempt")!] ?? "") ?? 0,
                signature: request.headers[.init(WebhookSignature.header)!] ?? "",
                body: Array(buffer: bytes))
            received.withLockedValue { $0.append(delivery) }
            switch answer(delivery) {
            case .status(let code):
                return Response(status: .init(code: code))
            case .json(let code, let text):
                return Response(
                    status: .init(code: code), headers: [.contentType: "application/json"],
                    body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
            case .hang(let duration):
                try? await Task.sleep(for: duration)
                return Response(status: .ok)
            }
        }
        let port = NIOLockedValueBox<Int?>(nil)
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .critical
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLockedValue { $0 = channel.localAddress?.port } },
            logger: logger)
        let running = Task { try await app.runService(gracefulShutdownSignals: []) }
        defer { running.cancel() }
        // Bounded, and generous: hundreds of tests start at once on two cores.
        let deadline = ContinuousClock.now + .seconds(90)
        while port.withLockedValue({ $0 }) == nil {
            guard ContinuousClock.now < deadline else { throw Unstarted() }
            try await Task.sleep(for: .milliseconds(10))
        }
        let url = "http://127.0.0.1:\(port.withLockedValue { $0 }!)/hook"
        let result = try await body(url)
        running.cancel()
        _ = await running.result
        return result
    }

    struct Unstarted: Error {}

    /// Waits until `condition` holds of the deliveries (or fails after `limit`).
    func wait(
        within limit: Duration = .seconds(60), _ what: String, until condition: ([Delivery]) -> Bool
    ) async throws -> [Delivery] {
        let deadline = ContinuousClock.now + limit
        while true {
            let now = deliveries
            if condition(now) { return now }
            guard ContinuousClock.now < deadline else { throw TimedOut(what: what, got: now.count) }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    struct TimedOut: Error, CustomStringConvertible {
        var what: String
        var got: Int
        var description: String { "the receiver never got \(what) (it got \(got) deliveries)" }
    }
}
