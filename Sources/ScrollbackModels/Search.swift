import Foundation

/// `GET /v1/search`: one page of messages that match a query, newest first.
public struct SearchResults: Codable, Sendable, Equatable {
    /// Newest first: by `created_at`, then conversation, then seq.
    public var hits: [SearchHit]
    /// Opaque; pass it back as `before` for the next page. `nil` on the last page.
    public var next: String?

    public init(hits: [SearchHit], next: String?) {
        self.hits = hits
        self.next = next
    }

    enum CodingKeys: String, CodingKey {
        case hits
        case next
    }

    // Encode `next: null` explicitly: clients test for it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(hits, forKey: .hits)
        try container.encode(next, forKey: .next)
    }
}

/// One message that matched. Open the conversation's history around it with
/// `GET /v1/conversations/{conversation_id}/messages?around={seq}`.
public struct SearchHit: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case conversationId = "conversation_id"
        case seq
        case message
        case snippet
    }

    public var conversationId: UUID
    public var seq: Int64
    /// The message as pages return it.
    public var message: Message
    /// An excerpt of the body with the matched words marked.
    public var snippet: SearchSnippet

    public init(conversationId: UUID, seq: Int64, message: Message, snippet: SearchSnippet) {
        self.conversationId = conversationId
        self.seq = seq
        self.message = message
        self.snippet = snippet
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(conversationId.uuidString.lowercased(), forKey: .conversationId)
        try container.encode(seq, forKey: .seq)
        try container.encode(message, forKey: .message)
        try container.encode(snippet, forKey: .snippet)
    }
}

/// An excerpt of a message's body (the whole body when it is short) and the
/// words in it that matched the query.
public struct SearchSnippet: Codable, Sendable, Equatable {
    public var text: String
    /// The matched words, in order, as ranges of `text`.
    public var highlights: [SearchHighlight]

    public init(text: String, highlights: [SearchHighlight]) {
        self.text = text
        self.highlights = highlights
    }
}

/// A range of a snippet's text in UTF-16 code units (the unit of
/// JavaScript strings, `NSString` and `NSRange`; `String.utf16` in Swift).
public struct SearchHighlight: Codable, Sendable, Equatable {
    public var start: Int
    public var length: Int

    public init(start: Int, length: Int) {
        self.start = start
        self.length = length
    }
}

extension SearchSnippet {
    /// The highlighted parts of `text`.
    public var highlightedWords: [String] {
        let units = Array(text.utf16)
        return highlights.compactMap { range in
            guard range.start >= 0, range.length >= 0, range.start + range.length <= units.count else { return nil }
            return String(decoding: units[range.start..<range.start + range.length], as: UTF16.self)
        }
    }
}
