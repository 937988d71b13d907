import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Full-text search of the caller's messages.
struct SearchController {
    let store: ScrollbackStore

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("search", use: search)
    }

    @Sendable func search(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<SearchResults> {
        let user = try context.requireUser()
        let parameters = QueryParameters(request)
        let query = try Self.query(parameters)
        let conversation = try Self.conversation(parameters)
        let after = try parameters.single("before").map { try SearchCursor.decode($0, within: conversation) }
        let limit = try parameters.integer("limit", in: APILimits.searchLimit) ?? APILimits.defaultSearchLimit
        switch try await store.search(query, for: user, in: conversation, after: after, limit: limit) {
        case .noSearchableWords:
            throw APIError.badRequest(
                .invalidParameter,
                "`q` has no word that can be searched for: only common words that are not indexed (stop words), punctuation or excluded (-word) words.")
        case .found(let page):
            return JSONBody(SearchResults(hits: page.hits, next: page.next.map(SearchCursor.encode)))
        }
    }

    /// `q`: 1 to ``APILimits/maxSearchQueryLength`` code points after
    /// trimming, no control characters.
    static func query(_ parameters: QueryParameters) throws -> String {
        guard let text = try parameters.single("q") else {
            throw APIError.badRequest(.invalidParameter, "Give the words to search for in `q`.")
        }
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw APIError.badRequest(.invalidParameter, "`q` must contain a word to search for, not only spaces.")
        }
        let length = trimmed.unicodeScalars.count
        guard length <= APILimits.maxSearchQueryLength else {
            throw APIError.badRequest(
                .invalidParameter,
                "`q` must be at most \(APILimits.maxSearchQueryLength) characters, counted as Unicode code points (it has \(length)).")
        }
        if let control = VisibleText.forbiddenControl(in: trimmed, allowingLineBreaks: false) {
            throw APIError.badRequest(
                .invalidParameter,
                "`q` must not contain control characters (it has U+\(String(control.value, radix: 16, uppercase: true))).")
        }
        return trimmed
    }

    /// `conversation_id`: a UUID.
    static func conversation(_ parameters: QueryParameters) throws -> UUID? {
        guard let text = try parameters.single("conversation_id") else { return nil }
        guard let id = UUID(uuidString: text) else {
            throw APIError.badRequest(.invalidParameter, "`conversation_id` must be a conversation id (a UUID).")
        }
        return id
    }
}
