import AsyncHTTPClient
import Foundation
import NIOCore

/// One signed POST of the outbox (a webhook, a push): JSON with
/// `Scrollback-Signature` over the exact bytes, within the deadline.
struct SignedPost: Sendable {
    let url: String
    let secret: String
    let timeout: Duration
    let userAgent: String
    let httpClient: HTTPClient

    /// The receiver's answer on 2xx; otherwise why the attempt failed.
    func send(_ body: [UInt8], headers: [(String, String)]) async -> Result<ByteBuffer?, Failure> {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: userAgent)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.headers.add(
            name: WebhookSignature.header,
            value: WebhookSignature.sign(body, secret: secret, timestamp: Int(Date().timeIntervalSince1970)))
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await httpClient.execute(request, timeout: .milliseconds(Int64(timeout / .milliseconds(1))))
            let answer = try? await response.body.collect(upTo: 1 << 20)
            guard (200..<300).contains(response.status.code) else {
                return .failure(Failure(reason: "the receiver answered \(response.status.code)"))
            }
            return .success(answer)
        } catch {
            return .failure(Failure(reason: "no answer: \(error)"))
        }
    }

    struct Failure: Error {
        var reason: String
    }
}
