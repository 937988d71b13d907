import Foundation
import HTTPTypes
import ScrollbackModels
import ScrollbackStore
import Testing

/// `PUT .../uploads/{upload_id}` with `Content-Range: bytes START-END/SIZE`:
/// SIZE must be the upload's declared size and START-END the body's bytes,
/// or the request is refused with nothing stored.
@Suite struct UploadRangeTests {
    /// Bytes the database holds for `upload`: what it received and its chunks.
    static func stored(_ upload: UUID, _ flow: UploadAPITests.Flow) async throws -> (received: Int64, chunks: Int) {
        let received = try await flow.server.store.values(Int64.self, "SELECT received FROM uploads WHERE id = \(upload)")
        let chunks = try await flow.server.store.values(
            Int.self, "SELECT count(*)::int FROM upload_chunks WHERE upload_id = \(upload)")
        return (try #require(received.first), chunks[0])
    }

    @Test func aSizeThatIsNotTheUploadsIsRefusedAndNothingIsStored() async throws {
        try await UploadAPITests.withFlow { flow in
            let bytes = UploadAPITests.png(width: 8, height: 8, padding: 2_000)
            let size = bytes.count
            let half = size / 2
            let ticket = try await flow.upload("a.png", "image/png", bytes)

            for wrong in [size + 1, size - 1, half] {
                let put = try await flow.put(ticket, bytes[..<half], range: "bytes 0-\(half - 1)/\(wrong)")
                #expect(put.status == .unprocessableContent, "\(put.text)")
                #expect(try put.error().error.code == .invalidUploadSize)
                #expect(put.text.contains("\(wrong)") && put.text.contains("\(size)"), "\(put.text)")
                #expect(try await Self.stored(ticket.uploadId, flow) == (0, 0))
            }

            // The right size: taken. Then the rest, refused with a wrong size, leaves the first half as it was.
            let first = try await flow.put(ticket, bytes[..<half], range: "bytes 0-\(half - 1)/\(size)")
            #expect(try first.decode(UploadProgress.self).received == Int64(half), "\(first.text)")
            let chunksOfHalf = try await Self.stored(ticket.uploadId, flow).chunks
            let wrongRest = try await flow.put(ticket, bytes[half...], range: "bytes \(half)-\(size - 1)/\(size * 2)")
            #expect(try wrongRest.status == .unprocessableContent && wrongRest.error().error.code == .invalidUploadSize)
            #expect(try await Self.stored(ticket.uploadId, flow) == (Int64(half), chunksOfHalf))

            // `*`: a size the client does not give is not checked.
            let rest = try await flow.put(ticket, bytes[half...], range: "bytes \(half)-\(size - 1)/*")
            #expect(try rest.decode(UploadProgress.self).complete, "\(rest.text)")
        }
    }

    @Test func aRangeThatIsNotTheBodysBytesIsRefusedAndNothingIsStored() async throws {
        try await UploadAPITests.withFlow { flow in
            let bytes = UploadAPITests.png(width: 8, height: 8, padding: 2_000)
            let size = bytes.count
            let half = size / 2
            let ticket = try await flow.upload("a.png", "image/png", bytes)

            // END past the body's last byte, and before it.
            for end in [half, half - 2, size - 1] {
                let put = try await flow.put(ticket, bytes[..<half], range: "bytes 0-\(end)/\(size)")
                #expect(put.status == .badRequest, "\(put.text)")
                #expect(try put.error().error.code == .invalidParameter)
                #expect(put.text.contains("\(end + 1) bytes but the body has \(half)"), "\(put.text)")
                #expect(try await Self.stored(ticket.uploadId, flow) == (0, 0))
            }

            let first = try await flow.put(ticket, bytes[..<half], range: "bytes 0-\(half - 1)/\(size)")
            #expect(try first.decode(UploadProgress.self).received == Int64(half))
            let chunksOfHalf = try await Self.stored(ticket.uploadId, flow).chunks
            // The rest, its range one byte short: refused, the first half as it was.
            let short = try await flow.put(ticket, bytes[half...], range: "bytes \(half)-\(size - 2)/\(size)")
            #expect(try short.status == .badRequest && short.error().error.code == .invalidParameter)
            #expect(try await Self.stored(ticket.uploadId, flow) == (Int64(half), chunksOfHalf))

            // A body of unknown length (chunked) cannot be held to its range before it is stored: refused.
            let token = try await flow.server.token("alice")
            let connection = try await RawConnection.open(port: try #require(flow.server.client.port))
            let rest = String(decoding: bytes[half...].map { _ in UInt8(ascii: "x") }, as: UTF8.self)
            try await connection.send(
                [
                    "PUT \(ticket.uploadURL) HTTP/1.1", "Host: 127.0.0.1", "Authorization: Bearer \(token)",
                    "Content-Type: image/png", "Content-Range: bytes \(half)-\(size - 1)/\(size)",
                    "Transfer-Encoding: chunked", "Connection: close",
                ].joined(separator: "\r\n") + "\r\n\r\n" + String(rest.utf8.count, radix: 16) + "\r\n" + rest + "\r\n0\r\n\r\n")
            #expect(await connection.receive("\"invalid_parameter\"", within: .seconds(20)), "\(connection.receivedText)")
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 400"), "\(connection.receivedText)")
            #expect(connection.receivedText.contains("Content-Length"))
            await connection.close()
            #expect(try await Self.stored(ticket.uploadId, flow) == (Int64(half), chunksOfHalf))

            // The right range completes it.
            let done = try await flow.put(ticket, bytes[half...], range: "bytes \(half)-\(size - 1)/\(size)")
            #expect(try done.decode(UploadProgress.self).complete, "\(done.text)")
        }
    }
}
