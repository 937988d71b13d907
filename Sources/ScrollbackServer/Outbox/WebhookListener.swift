import Foundation
import Hummingbird
import Logging
import NIOCore

/// A webhook receiver for trying the outbox out (`scrollback webhooks
/// listen`): verifies each POST's signature with `secret`, prints the event
/// through `print`, and answers 204; a POST whose signature does not verify
/// is answered 401 (the outbox tries it again later) and printed as refused.
public func runWebhookListener(
    host: String = "127.0.0.1", port: Int, secret: String, logger: Logger,
    onRunning: @escaping @Sendable (Int) async -> Void = { _ in },
    print: @escaping @Sendable (String) -> Void
) async throws {
    let router = Router()
    let receive: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
        let body = Array(buffer: try await request.body.collect(upTo: 4 << 20))
        let signature = request.headers[.init(WebhookSignature.header)!] ?? ""
        let id = request.headers[.init("Scrollback-Event-Id")!] ?? "?"
        let attempt = request.headers[.init("Scrollback-Attempt")!] ?? "?"
        do {
            try WebhookSignature.verify(signature, body: body, secret: secret)
        } catch {
            print("refused event \(id) (attempt \(attempt)): \(error)")
            return Response(status: .unauthorized)
        }
        let type = request.headers[.init("Scrollback-Event-Type")!] ?? "?"
        print("event \(id) \(type) (attempt \(attempt), signature verified)\n\(String(decoding: body, as: UTF8.self))")
        return Response(status: .noContent)
    }
    // Any path: the URL the server was given decides.
    router.post("/", use: receive)
    router.post("**", use: receive)
    let app = Application(
        router: router, configuration: .init(address: .hostname(host, port: port), serverName: "scrollback-webhooks"),
        onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? port) }, logger: logger)
    try await app.runService()
}
