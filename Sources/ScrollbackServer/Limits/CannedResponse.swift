import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

/// The answers the connection layer writes itself, before or instead of
/// the HTTP pipeline: whole HTTP/1.1 responses with a JSON error body.
enum CannedResponse {
    static func bytes(status: String, code: APIErrorCode, message: String, extraHeaders: String = "") -> ByteBuffer {
        let body = (try? ScrollbackJSON.encoder().encode(APIErrorBody(code: code, message: message))) ?? Data()
        var head = "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        head += "Connection: close\r\n\(extraHeaders)\r\n"
        var buffer = ByteBuffer(string: head)
        buffer.writeBytes(body)
        return buffer
    }

    static func payloadTooLarge(limit: Int) -> ByteBuffer {
        let error = APIError.payloadTooLarge(limit: limit)
        return bytes(status: "413 Content Too Large", code: error.code, message: error.message)
    }

    static let overCapacity = bytes(
        status: "503 Service Unavailable", code: .serviceUnavailable,
        message: "The server has as many connections open as it takes; retry after a moment.",
        extraHeaders: "Retry-After: 1\r\n")
}
