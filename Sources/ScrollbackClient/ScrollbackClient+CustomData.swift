import Foundation
import ScrollbackModels

/// An app's own data (`CustomData`) as its own `Codable` types: sent and
/// edited with any `Encodable` value that encodes as a JSON object within
/// the limits, read back with `Message.data(as:)` and
/// `Conversation.data(as:)`. A value outside the limits is refused before
/// anything is sent (`invalidInput` with `invalid_data`, as the server
/// would answer).
extension ScrollbackClient {
    /// `value` as custom data, checked by the rule the server applies.
    public static func customData(_ value: some Encodable) throws(ScrollbackError) -> CustomData {
        do {
            return try CustomData(encoding: value)
        } catch let error as CustomDataError {
            throw .invalidInput(code: .invalidData, message: error.description)
        } catch {
            throw .invalidInput(code: .invalidData, message: "The data could not be encoded as JSON: \(error)")
        }
    }

    /// Sends a message carrying the app's own `data` (and `type`); see
    /// `send(_:to:clientId:replyTo:attachments:data:type:)`.
    public func send(
        _ body: String, to id: UUID, data: some Encodable, type: String? = nil, clientId: String? = nil,
        replyTo: Int64? = nil, attachments: [UUID] = []
    ) async throws(ScrollbackError) -> SendResult {
        try await send(
            body, to: id, clientId: clientId, replyTo: replyTo, attachments: attachments,
            data: try Self.customData(data), type: type)
    }

    /// Replaces message `seq`'s data with `data` (and its body, when given).
    public func edit(_ seq: Int64, in id: UUID, body: String? = nil, data: some Encodable) async throws(ScrollbackError)
        -> Message
    {
        let custom: CustomData?? = .some(try Self.customData(data))
        return try await edit(seq, in: id, body: body, data: custom)
    }

    /// A new conversation carrying the app's own `data`.
    public func createConversation(
        title: String? = nil, members: [String] = [], description: String? = nil, data: some Encodable
    ) async throws(ScrollbackError) -> Conversation {
        try await createConversation(
            title: title, members: members, description: description, data: try Self.customData(data) as CustomData?)
    }

    /// Replaces conversation `id`'s data with `data`; the owner or an admin may.
    @discardableResult
    public func updateConversation(_ id: UUID, data: some Encodable) async throws(ScrollbackError) -> Conversation {
        let custom: CustomData?? = .some(try Self.customData(data))
        return try await updateConversation(id, data: custom)
    }
}
