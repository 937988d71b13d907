import Foundation
import Hummingbird
import HummingbirdCore
import NIOConcurrencyHelpers
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// Reads an import's NDJSON body as it arrives, line by line, into batches
/// of checked lines (`ImportEntry`): each line on its own (its JSON, its
/// fields, their shapes and limits); what lines say together is checked by
/// the store. Pulled by the store as it stages them, so a body arrives no
/// faster than the database takes it, and memory holds one batch.
final class ImportReader: @unchecked Sendable {
    /// The longest line read (a longer one is a problem, and skipped).
    static let maxLineBytes = 64 * 1024

    // Touched by one reader at a time: the store pulls batches in turn.
    private var body: HummingbirdCore.RequestBody.AsyncIterator
    private var pending = ByteBuffer()
    private var line = 0
    private var skipping = false
    private var ended = false
    private let decoder = ScrollbackJSON.decoder()

    init(_ body: HummingbirdCore.RequestBody) {
        self.body = body.makeAsyncIterator()
    }

    /// The batches, pulled one at a time.
    var batches: AsyncThrowingStream<[ImportEntry], any Error> {
        AsyncThrowingStream { try await self.next() }
    }

    /// The next batch; nil once the body is read.
    func next(size: Int = 2_000) async throws -> [ImportEntry]? {
        var batch: [ImportEntry] = []
        while batch.count < size {
            if let newline = pending.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
                let length = newline - pending.readerIndex
                let bytes = pending.readSlice(length: length)!
                pending.moveReaderIndex(forwardBy: 1)
                line += 1
                if skipping {
                    skipping = false
                    continue
                }
                if let entry = entry(bytes) { batch.append(entry) }
                continue
            }
            if ended {
                if pending.readableBytes > 0 && !skipping {
                    line += 1
                    let rest = pending.readSlice(length: pending.readableBytes)!
                    if let entry = entry(rest) { batch.append(entry) }
                }
                pending.clear()
                break
            }
            if pending.readableBytes > Self.maxLineBytes && !skipping {
                // Too long: reported with the number it will have, the rest skipped.
                batch.append(ImportEntry(line: line + 1, record: nil, problem: "the line is longer than \(Self.maxLineBytes) bytes"))
                skipping = true
                pending.clear()
            } else if skipping {
                pending.clear()
            }
            guard var chunk = try await body.next() else {
                ended = true
                continue
            }
            pending.discardReadBytes()
            pending.writeBuffer(&chunk)
        }
        return batch.isEmpty && ended ? nil : batch
    }

    /// A blank line is nil.
    private func entry(_ bytes: ByteBuffer) -> ImportEntry? {
        let view = bytes.readableBytesView
        guard view.contains(where: { ![UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")].contains($0) }) else {
            return nil
        }
        let parsed: ImportLine
        do {
            parsed = try decoder.decode(ImportLine.self, from: Data(view))
        } catch let error as DecodingError {
            return ImportEntry(line: line, record: nil, problem: "not an import line: \(ScrollbackJSON.explain(error))")
        } catch {
            return ImportEntry(line: line, record: nil, problem: "not an import line: \(error)")
        }
        do {
            return ImportEntry(line: line, record: try Self.record(parsed))
        } catch let error as APIError {
            return ImportEntry(line: line, record: nil, problem: error.message)
        } catch {
            return ImportEntry(line: line, record: nil, problem: "\(error)")
        }
    }

    static func record(_ line: ImportLine) throws -> ImportEntry.Record {
        func required(_ value: String?, _ field: String) throws -> String {
            guard let value else { throw APIError.unprocessable(.invalidField, "Field `\(field)` is required on a `\(line.type ?? "")` line.") }
            return value
        }
        func uuid(_ value: String?, _ field: String) throws -> UUID {
            guard let id = UUID(uuidString: try required(value, field)) else {
                throw APIError.unprocessable(.invalidField, "Field `\(field)` must be a UUID.")
            }
            return id
        }
        func time(_ value: String?, _ field: String) throws -> Date? {
            guard let value else { return nil }
            guard let date = ScrollbackJSON.parseTimestamp(value), ScrollbackJSON.timestampRange.contains(date) else {
                throw APIError.unprocessable(.invalidField, "Field `\(field)` must be an RFC 3339 time (got \"\(value.prefix(40))\").")
            }
            return date
        }
        func external(_ value: String?, _ field: String) throws -> String {
            let text = try required(value, field)
            guard (1...APILimits.maxExternalIDLength).contains(text.utf8.count),
                !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw APIError.unprocessable(
                    .invalidField, "Field `\(field)` must be 1 to \(APILimits.maxExternalIDLength) bytes with no control characters.")
            }
            return text
        }
        switch line.type {
        case "conversation":
            return .conversation(
                id: try uuid(line.id, "id"), createdBy: try Validation.userID(try required(line.createdBy, "created_by"), field: "created_by"),
                title: try Validation.title(line.title), createdAt: try time(line.createdAt, "created_at"),
                description: try Validation.description(line.description), data: line.data)
        case "member":
            return .member(
                conversation: try uuid(line.conversationId, "conversation_id"),
                user: try Validation.userID(try required(line.userId, "user_id"), field: "user_id"),
                role: try line.role.map(Validation.role) ?? .member, joinedAt: try time(line.joinedAt, "joined_at"))
        case "message":
            let createdAt = try time(try required(line.createdAt, "created_at"), "created_at") ?? Date()
            return .message(
                conversation: try uuid(line.conversationId, "conversation_id"), externalID: try external(line.externalId, "external_id"),
                sender: try Validation.userID(try required(line.sender, "sender"), field: "sender"),
                body: try Validation.messageBody(try required(line.body, "body")), createdAt: createdAt, data: line.data,
                type: try Validation.messageType(line.messageType))
        case "reaction":
            return .reaction(
                conversation: try uuid(line.conversationId, "conversation_id"),
                messageExternalID: try external(line.messageExternalId, "message_external_id"),
                user: try Validation.userID(try required(line.userId, "user_id"), field: "user_id"),
                emoji: try Validation.emoji(try required(line.emoji, "emoji")), createdAt: try time(line.createdAt, "created_at"))
        case "read_marker":
            return .readMarker(
                conversation: try uuid(line.conversationId, "conversation_id"),
                user: try Validation.userID(try required(line.userId, "user_id"), field: "user_id"),
                messageExternalID: try external(line.messageExternalId, "message_external_id"))
        case "user":
            return .user(
                id: try Validation.userID(try required(line.userId, "user_id"), field: "user_id"),
                displayName: try line.displayName.map(Validation.displayName),
                avatar: try line.avatar.map { try Validation.profileImage($0, field: "avatar") }, data: line.data)
        default:
            throw APIError.unprocessable(
                .invalidField,
                "Field `type` must be one of `conversation`, `member`, `message`, `reaction`, `read_marker`, `user`.")
        }
    }
}
