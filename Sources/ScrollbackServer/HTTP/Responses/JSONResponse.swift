import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ScrollbackModels

/// Encodes answers as JSON, one way for every route.
enum JSONResponse {
    static let encoder = ScrollbackJSON.encoder()

    /// A value JSON cannot carry (an infinity or NaN in a number): a bug on
    /// our side. ErrorMiddleware logs it and answers 500 `internal_error`;
    /// a client never gets a success with a body that is not the value.
    struct EncodingFailure: Error, CustomStringConvertible {
        var type: String
        var underlying: any Error

        var description: String { "could not encode \(type) as JSON: \(underlying)" }
    }

    /// The hot responses: written directly (`JSONWritable`), the same bytes
    /// as the encoder's without its per-key work.
    static func make(_ value: some JSONWritable, status: HTTPResponse.Status = .ok) throws(EncodingFailure) -> Response {
        var writer = JSONWriter(capacity: value.jsonByteCountHint)
        value.write(to: &writer)
        guard writer.isFaithful else {
            throw EncodingFailure(type: "\(type(of: value))", underlying: NonFiniteNumber())
        }
        return response(writer.bytes, status: status)
    }

    struct NonFiniteNumber: Error {}

    @_disfavoredOverload
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws(EncodingFailure) -> Response {
        let data: Data
        do {
            data = try encoder.encode(value)
        } catch {
            throw EncodingFailure(type: "\(type(of: value))", underlying: error)
        }
        return response(data, status: status)
    }

    private static func response(_ json: some Sequence<UInt8>, status: HTTPResponse.Status) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: json)))
    }
}
