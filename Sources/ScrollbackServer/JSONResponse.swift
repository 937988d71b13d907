import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ScrollbackModels

enum JSONResponse {
    static let encoder = ScrollbackJSON.encoder()

    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        // Encoding our own wire types cannot fail.
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
