import Foundation
import HTTPTypes
import Logging
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackTestSupport
import Testing

@Suite struct SearchAPITests {
    static func path(_ items: [(String, String)]) -> String {
        let allowed = CharacterSet.alphanumerics.union(["-", "_", ".", "~"])
        return "/v1/search?"
            + items.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
    }

    @Test func searchPagesNewestFirstWithSnippetsAndOpensHistoryAroundAHit() async throws {
        try await TestServer.run { server in
            let trip = try await server.createConversation(as: "alice", members: ["bob"])
            let other = try await server.createConversation(as: "bob", members: ["alice"])
            _ = try await server.send("Pack the tent 🏕️ today", to: trip.id, as: "bob")
            _ = try await server.send("nothing here", to: trip.id, as: "bob")
            _ = try await server.send("Where is the TENT?", to: other.id, as: "alice")
            _ = try await server.send("tent 👍🏽 tent", to: trip.id, as: "alice")

            let first = try await server.request(.get, Self.path([("q", "tent"), ("limit", "2")]), as: "bob")
            #expect(first.status == .ok, "\(first.text)")
            let page = try first.decode(SearchResults.self)
            #expect(page.hits.map(\.message.body) == ["tent 👍🏽 tent", "Where is the TENT?"])
            #expect(page.hits.map(\.seq) == [3, 1] && page.hits.map(\.conversationId) == [trip.id, other.id])
            #expect(page.hits[0].snippet == SearchSnippet(
                text: "tent 👍🏽 tent", highlights: [SearchHighlight(start: 0, length: 4), SearchHighlight(start: 10, length: 4)]))
            #expect(page.hits[1].snippet.highlightedWords == ["TENT"])
            // The JSON: snake_case keys, the message as pages have it, `next` present.
            #expect(first.text.contains(#""conversation_id":"\#(trip.id.uuidString.lowercased())""#))
            #expect(first.text.contains(#""highlights":[{"length":4,"start":0}"#))
            let next = try #require(page.next)

            let second = try await server.request(.get, Self.path([("q", "tent"), ("limit", "2"), ("before", next)]), as: "bob")
            let rest = try second.decode(SearchResults.self)
            #expect(rest.hits.map(\.message.body) == ["Pack the tent 🏕️ today"])
            #expect(rest.next == nil && second.text.contains(#""next":null"#))
            let camp = try #require(rest.hits.first)
            #expect(camp.snippet.highlightedWords == ["tent"])

            // One conversation; the hit's history around it.
            let inOther = try await server.request(
                .get, Self.path([("q", "tent"), ("conversation_id", other.id.uuidString)]), as: "bob"
            ).decode(SearchResults.self)
            #expect(inOther.hits.map(\.seq) == [1])
            let around = try await server.request(
                .get, "/v1/conversations/\(camp.conversationId)/messages?around=\(camp.seq)&limit=3", as: "bob"
            ).decode(MessagePage.self)
            #expect(around.messages.contains(camp.message))
        }
    }

    /// A cursor written by hand, naming a conversation the caller is not in
    /// (a message of it that exists and one that does not), tells nothing
    /// of that conversation: both answers are the same, of the caller's own
    /// messages. In one conversation's search it is refused.
    @Test func aForgedCursorTellsNothingOfAnotherConversation() async throws {
        try await TestServer.run { server in
            // Eve's messages first: a cursor that read the other
            // conversation's message would page below it, over all of hers.
            let mine = try await server.createConversation(as: "eve")
            for n in 1...3 { _ = try await server.send("plans \(n)", to: mine.id, as: "eve") }
            let secret = try await server.createConversation(as: "mallory", members: ["trent"])
            _ = try await server.send("secret plans", to: secret.id, as: "mallory")
            _ = try await server.send("more secret plans", to: secret.id, as: "trent")

            let first = try await server.request(.get, Self.path([("q", "plans"), ("limit", "1")]), as: "eve")
            let cursor = try #require(try first.decode(SearchResults.self).next)
            // The cursor as eve could read it, with the conversation and the
            // seq (its last field) replaced by those of another one.
            func forged(seq: Int64) throws -> String {
                let text = try #require(OpaqueCursor.decode(cursor, maxLength: 256))
                let own = mine.id.uuidString.lowercased()
                #expect(text.contains(own), "\(text)")
                var fields = text.replacingOccurrences(of: own, with: secret.id.uuidString.lowercased())
                    .split(separator: ":").map(String.init)
                fields[fields.count - 1] = String(seq)
                return OpaqueCursor.encode(fields.joined(separator: ":"))
            }
            func answer(_ before: String, in conversation: UUID? = nil) async throws -> TestServer.Reply {
                var items = [("q", "plans"), ("before", before)]
                if let conversation { items.append(("conversation_id", conversation.uuidString)) }
                return try await server.request(.get, Self.path(items), as: "eve")
            }
            let existing = try await answer(try forged(seq: 2))
            let missing = try await answer(try forged(seq: 999))
            #expect(existing.status == .ok && missing.status == .ok, "\(existing.text) \(missing.text)")
            #expect(existing.text == missing.text)
            let hits = try existing.decode(SearchResults.self).hits
            // Below the cursor's time (its own message too, or not, by how the
            // two conversation ids compare): eve's messages only.
            #expect(!hits.isEmpty && hits.allSatisfy { $0.conversationId == mine.id }, "\(existing.text)")
            #expect(hits.map(\.message.body).suffix(2) == ["plans 2", "plans 1"], "\(existing.text)")

            let inOne = try await answer(try forged(seq: 2), in: mine.id)
            #expect(inOne.status == .badRequest, "\(inOne.text)")
            #expect(try inOne.error().error.code == .invalidParameter)
            // The cursor of the server before this one: search again.
            let earlier = try await answer(OpaqueCursor.encode("s:\(secret.id.uuidString.lowercased()):1"))
            #expect(earlier.status == .badRequest && earlier.text.contains("search again"), "\(earlier.text)")
        }
    }

    @Test func badSearchesAreRefusedWithWhatToFix() async throws {
        try await TestServer.run { server in
            let mine = try await server.createConversation(as: "alice")
            let theirs = try await server.createConversation(as: "mallory")
            let long = String(repeating: "é", count: APILimits.maxSearchQueryLength + 1)
            func expect(_ items: [(String, String)], _ status: HTTPResponse.Status, _ code: APIErrorCode) async throws {
                let reply = try await server.request(.get, Self.path(items), as: "alice")
                #expect(reply.status == status, "\(items): \(reply.text)")
                #expect(try reply.error().error.code == code, "\(items)")
            }
            let invalid = APIErrorCode.invalidParameter
            try await expect([], .badRequest, invalid)
            try await expect([("q", "   ")], .badRequest, invalid)
            try await expect([("q", long)], .badRequest, invalid)
            try await expect([("q", "a\u{7}b")], .badRequest, invalid)
            try await expect([("q", "!!!")], .badRequest, invalid)
            try await expect([("q", "-word")], .badRequest, invalid)
            try await expect([("q", "a"), ("q", "b")], .badRequest, invalid)
            try await expect([("q", "a"), ("limit", "0")], .badRequest, invalid)
            try await expect([("q", "a"), ("limit", "51")], .badRequest, invalid)
            try await expect([("q", "a"), ("limit", "x")], .badRequest, invalid)
            try await expect([("q", "a"), ("before", "not a cursor")], .badRequest, invalid)
            try await expect([("q", "a"), ("before", "YToxMg")], .badRequest, invalid)
            try await expect([("q", "a"), ("conversation_id", "nope")], .badRequest, invalid)
            try await expect([("q", "a"), ("conversation_id", theirs.id.uuidString)], .notFound, .conversationNotFound)
            try await expect([("q", "a"), ("conversation_id", UUID().uuidString)], .notFound, .conversationNotFound)
            let stopWords = try await server.request(.get, Self.path([("q", "!!!")]), as: "alice")
            #expect(try stopWords.error().error.message.contains("no word that can be searched for"))
            // A query of the longest length is taken.
            let longest = String(repeating: "é", count: APILimits.maxSearchQueryLength)
            let fine = try await server.request(
                .get, Self.path([("q", " \(longest) "), ("conversation_id", mine.id.uuidString)]), as: "alice")
            #expect(fine.status == .ok, "\(fine.text)")
            #expect(try fine.decode(SearchResults.self) == SearchResults(hits: [], next: nil))

            let anonymous = try await server.request(.get, Self.path([("q", "a")]))
            #expect(anonymous.status == .unauthorized)
            #expect(try anonymous.error().error.code == .unauthorized)
        }
    }

    @Test func theDescriptionStatesTheSearchLimits() throws {
        let yaml = try String(contentsOfFile: "openapi.yaml", encoding: .utf8)
        let search = try #require(APIDescriptionTests.block(["paths", "/v1/search", "get"], in: yaml))
        let limit = try #require(
            search.firstMatch(of: #/schema: \{ type: integer, minimum: (\d+), maximum: (\d+), default: (\d+) \}/#))
        #expect(Int(limit.1) == APILimits.searchLimit.lowerBound && Int(limit.2) == APILimits.searchLimit.upperBound)
        #expect(Int(limit.3) == APILimits.defaultSearchLimit)
        #expect(search.contains("maxLength: \(APILimits.maxSearchQueryLength) }"))
        #expect(search.contains("1 to \(APILimits.maxSearchQueryLength) characters after trimming"))
    }

    @Test func theSearchConfigurationIsReadAndChecked() throws {
        #expect(ScrollbackConfiguration().searchConfig == "simple")
        #expect(try ScrollbackConfiguration(environment: ["SCROLLBACK_SEARCH_CONFIG": "english"]).searchConfig == "english")
        #expect(try ScrollbackConfiguration(environment: ["SCROLLBACK_SEARCH_CONFIG": "pg_catalog.german"]).searchConfig == "pg_catalog.german")
        for bad in ["english; drop table messages", "'simple'", "a.b.c"] {
            #expect(throws: ScrollbackConfiguration.Failure.self) {
                try ScrollbackConfiguration(environment: ["SCROLLBACK_SEARCH_CONFIG": bad])
            }
        }
    }

    @Test func anUnknownSearchConfigurationStopsTheStart() async throws {
        try await TestDatabase.withStore { store in
            var logger = Logger(label: "scrollback.tests.search")
            logger.logLevel = .critical
            var configuration = TestServer.configuration
            configuration.searchConfig = "klingon"
            configuration.port = 0
            let app = try await buildApplication(
                configuration: configuration, store: store, logger: logger, migrateOnStart: false)
            await #expect {
                try await app.run()
            } throws: { error in
                String(reflecting: error).contains("SCROLLBACK_SEARCH_CONFIG=klingon names no text search configuration")
                    && String(reflecting: error).contains("simple")
            }
        }
    }
}
