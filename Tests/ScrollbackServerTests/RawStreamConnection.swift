import Foundation
import NIOCore
import NIOWebSocket

/// A `/v1/stream` connection seen byte by byte: it sends the upgrade request
/// and nothing else, and keeps every byte the server sends until the server
/// ends the connection. For answers the server gives right after the upgrade
/// (a header token that is not valid): a WebSocket client library sets up its
/// pipeline while those bytes arrive, and one that drops what comes with the
/// 101 would test itself rather than the server.
enum RawStreamConnection {
    struct Reply {
        /// The status line and headers of the HTTP response.
        var head: String
        /// The WebSocket frames after the head, in order.
        var frames: [WebSocketFrame]
        /// Bytes after the last whole frame (a frame cut short).
        var trailing: Int
    }

    /// Connects, sends the upgrade with `headers`, and returns what the server
    /// sent until it closed the connection (throws after `timeout`).
    static func exchange(port: Int, headers: [(String, String)], timeout: Duration = .seconds(60)) async throws -> Reply {
        let connection = try await RawConnection.open(port: port)
        try await connection.send(bytes: upgradeRequest(port: port, headers: headers))
        guard await connection.closed(within: timeout) else {
            await connection.close()
            throw RawStreamError.stillOpen(after: timeout)
        }
        return try parse(connection.received)
    }

    /// The upgrade request to `/v1/stream`, as bytes.
    static func upgradeRequest(port: Int, headers: [(String, String)] = []) -> [UInt8] {
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var request = "GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        return Array(request.utf8)
    }

    /// A client frame as it goes on the wire: masked, with a random key.
    static func clientFrame(_ opcode: WebSocketOpcode, _ text: String, fin: Bool = true) -> [UInt8] {
        let payload = Array(text.utf8)
        precondition(payload.count <= 0xFFFF)
        let key = (0..<4).map { _ in UInt8.random(in: 0...255) }
        let length: [UInt8] =
            payload.count < 126
            ? [0x80 | UInt8(payload.count)] : [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        return [(fin ? 0x80 : 0) | UInt8(webSocketOpcode: opcode)] + length + key
            + payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    }

    static func parse(_ bytes: ByteBuffer) throws -> Reply {
        let all = Array(bytes.readableBytesView)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard all.count >= separator.count,
            let end = (0...(all.count - separator.count)).first(where: {
                all[$0..<$0 + separator.count].elementsEqual(separator)
            })
        else { throw RawStreamError.noResponseHead(String(decoding: all, as: UTF8.self)) }
        let head = String(decoding: all[..<end], as: UTF8.self)
        var rest = all[(end + separator.count)...]
        var frames: [WebSocketFrame] = []
        // Server frames are never masked (RFC 6455, 5.1).
        while rest.count >= 2 {
            let first = rest[rest.startIndex], second = rest[rest.startIndex + 1]
            var length = Int(second & 0x7F)
            var offset = 2
            if length == 126, rest.count >= 4 {
                length = Int(rest[rest.startIndex + 2]) << 8 | Int(rest[rest.startIndex + 3])
                offset = 4
            } else if length == 127 {
                throw RawStreamError.unexpectedFrame("a frame of 64-bit length")
            }
            guard second & 0x80 == 0 else { throw RawStreamError.unexpectedFrame("a masked server frame") }
            guard rest.count >= offset + length else { break }
            let payload = rest[(rest.startIndex + offset)..<(rest.startIndex + offset + length)]
            guard let opcode = WebSocketOpcode(encodedWebSocketOpcode: first & 0x0F) else {
                throw RawStreamError.unexpectedFrame("opcode \(first & 0x0F)")
            }
            frames.append(WebSocketFrame(fin: first & 0x80 != 0, opcode: opcode, data: ByteBuffer(bytes: payload)))
            rest = rest[(rest.startIndex + offset + length)...]
        }
        return Reply(head: head, frames: frames, trailing: rest.count)
    }
}

enum RawStreamError: Error {
    case stillOpen(after: Duration)
    case noResponseHead(String)
    case unexpectedFrame(String)
}
