import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ScrollbackModels

/// A handler's answer: a value as JSON with a status. Handlers return it
/// (or another `ResponseGenerator`: a bare status for an empty answer), so
/// their signatures say what a client gets.
struct JSONBody<Value: Encodable & Sendable>: ResponseGenerator, Sendable {
    var value: Value
    var status: HTTPResponse.Status

    init(_ value: Value, status: HTTPResponse.Status = .ok) {
        self.value = value
        self.status = status
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        // The hot values write their own JSON; the conformance check is cached by the runtime.
        if let writable = value as? any JSONWritable { return try JSONResponse.make(writable, status: status) }
        return try JSONResponse.make(value, status: status)
    }
}
