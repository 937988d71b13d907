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

    /// The next eight columns as a message (`MessageRow.positional`), nil
    /// when a LEFT JOIN found none.
    mutating func message(in conversation: UUID) throws -> Message? {
        try MessageRow.message(
            (
                next(Int64.self), next(String.self), next(String.self), next(String.self), next(Date.self),
                next(Int64.self), next(Date.self), next(Bool.self)
            ), conversation: conversation)
    }
}
