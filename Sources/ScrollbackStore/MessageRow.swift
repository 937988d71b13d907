import Foundation
import PostgresNIO
import ScrollbackModels

/// The columns of a message, selected under one alias and decoded by name, so
/// every statement that returns messages spells and reads them the same way.
enum MessageRow {
    static let names = ["seq", "sender", "body", "client_id", "created_at", "version", "edited_at", "deleted"]

    /// `m.seq AS m_seq, m.sender AS m_sender, ...`
    static func columns(_ alias: String) -> String {
        names.map { "\(alias).\($0) AS \(alias)_\($0)" }.joined(separator: ", ")
    }

    /// The message in `row` under `alias`, or nil when a LEFT JOIN found none.
    static func decode(_ row: PostgresRandomAccessRow, alias: String, conversation: UUID) throws -> Message? {
        try message(
            (
                row["\(alias)_seq"].decode(Int64?.self), row["\(alias)_sender"].decode(String?.self),
                row["\(alias)_body"].decode(String?.self), row["\(alias)_client_id"].decode(String?.self),
                row["\(alias)_created_at"].decode(Date?.self), row["\(alias)_version"].decode(Int64?.self),
                row["\(alias)_edited_at"].decode(Date?.self), row["\(alias)_deleted"].decode(Bool?.self)
            ), conversation: conversation)
    }

    /// The message columns in the order `positional(_:)` selects them.
    static func positional(_ alias: String) -> String {
        names.map { "\(alias).\($0)" }.joined(separator: ", ")
    }

    /// The columns of one message read by position (`positional(_:)`), all
    /// nullable for a LEFT JOIN that found none.
    typealias Columns = (Int64?, String?, String?, String?, Date?, Int64?, Date?, Bool?)

    /// The message in `columns`, or nil when a LEFT JOIN found none.
    static func message(_ columns: Columns, conversation: UUID) throws -> Message? {
        let (seq, sender, body, clientID, createdAt, version, editedAt, deleted) = columns
        guard let seq else { return nil }
        guard let sender, let body, let createdAt, let version, let deleted else { throw MalformedRow() }
        return Message(
            conversationId: conversation, seq: seq, sender: sender, body: body, clientId: clientID,
            createdAt: createdAt, version: version, editedAt: editedAt, deleted: deleted)
    }
}

/// A row without a column its statement always returns: a bug between a
/// statement and its decoding, not a database outage (a logged 500, not a 503).
struct MalformedRow: Error {}
