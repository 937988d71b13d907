/// The one JSON shape of every error:
/// `{"error": {"code": "snake_case_code", "message": "what to fix"}}`.
public struct APIErrorBody: Codable, Sendable, Equatable {
    public struct Detail: Codable, Sendable, Equatable {
        public var code: APIErrorCode
        public var message: String

        public init(code: APIErrorCode, message: String) {
            self.code = code
            self.message = message
        }
    }

    public var error: Detail

    public init(code: APIErrorCode, message: String) {
        self.error = Detail(code: code, message: message)
    }
}

extension APIErrorBody: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.key("code")
        writer.string(error.code.rawValue)
        writer.key("message")
        writer.string(error.message)
        writer.endObject()
        writer.endObject()
    }
}
