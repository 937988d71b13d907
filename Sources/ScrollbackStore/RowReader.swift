import Foundation
import PostgresNIO
import ScrollbackModels

/// Reads a row's columns in order with the driver's own decoders, called on
/// concrete types so the compiler specializes them. The driver's tuple
/// decoding (`row.decode((A, B, ...).self)`) goes through generic code and
/// runtime metadata for every cell: a profile of the page load put 15% of
/// the server's CPU there.
struct RowReader {
    private var cells: PostgresRow.Iterator

    init(_ row: PostgresRow) {
        cells = row.makeIterator()
    }

    /// The next column; nil for SQL NULL.
    mutating func next<Value: PostgresDecodable>(_ type: Value.Type) throws -> Value? {
        guard let cell = cells.next() else { throw MalformedRow() }
        guard var bytes = cell.bytes else { return nil }
        return try Value(from: &bytes, type: cell.dataType, format: cell.format, context: .default)
    }

    /// The next column, which must not be NULL.
    mutating func required<Value: PostgresDecodable>(_ type: Value.Type) throws -> Value {
        guard let value = try next(type) else { throw MalformedRow() }
        return value
    }

    /// The next columns as a message (`MessageRow.positional(_:conversation:readers:)`),
    /// nil when a LEFT JOIN found none; the statement had one reader, whom
    /// `me` of its reactions is about.
    mutating func message(in conversation: UUID) throws -> Message? {
        try MessageRow.message(rawMessage(), conversation: conversation, personal: true)
    }

    /// The next columns of a message, undecoded.
    mutating func rawMessage() throws -> MessageRow.Columns {
        MessageRow.Columns(
            seq: try next(Int64.self), sender: try next(String.self), body: try next(String.self),
            clientID: try next(String.self), createdAt: try next(Date.self), version: try next(Int64.self),
            editedAt: try next(Date.self), deleted: try next(Bool.self), replyTo: try next(Int64.self),
            threadRoot: try next(Int64.self), replyCount: try next(Int32.self), lastReplyAt: try next(Date.self),
            threadParticipants: try next([String].self), reactionEmojis: try next([String].self),
            reactionCounts: try next([Int32].self), attachments: try next(String.self), data: try next(String.self),
            type: try next(String.self), parent: try next([String].self),
            mine: try next([String].self))
    }
}
