import Foundation
import Logging
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// No response is many megabytes because the items asked for are large:
/// the change log and the conversation list stop at about
/// `APILimits.maxResponseBytes` of JSON and page on, losing nothing.
@Suite struct ResponseSizeTests {
    /// The most one item of these tests adds to a capped page.
    static let slack = 200 * 1024

    @Test func aChangeSetOfLongMessagesStopsAtTheByteCapAndPagesOnWithoutLoss() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            // 80 messages of 16,000 bytes each: 1.3 MB of bodies, 2.6 MB if every byte were escaped.
            let long = String(repeating: "𝄞", count: APILimits.maxMessageBodyLength)
            for index in 0..<80 {
                _ = try await server.store.send(
                    to: conversation.id, from: UserID(rawValue: "alice"), body: "\(index)" + long.dropFirst(2),
                    clientID: nil)
            }
            var version: Int64 = 0
            var seen: [Int64] = []
            var pages = 0
            while true {
                let reply = try await server.request(
                    .get, "/v1/conversations/\(conversation.id)/changes?since_version=\(version)&limit=1000", as: "alice")
                #expect(reply.status == .ok)
                #expect(reply.body.count <= APILimits.maxResponseBytes + Self.slack, "\(reply.body.count) bytes")
                let set = try reply.decode(ChangeSet.self)
                #expect(!set.messages.isEmpty)
                seen += set.messages.map(\.seq)
                version = set.version
                pages += 1
                if !set.hasMore { break }
                #expect(set.messages.count < 80)
            }
            #expect(pages >= 2, "80 long messages fit in one change set of at most about 1 MiB")
            #expect(seen == Array(1...80))
        }
    }

    @Test func aConversationListOfLargeConversationsStopsAtTheByteCapAndPagesOnWithoutLoss() async throws {
        try await TestServer.run { server in
            // 20 conversations of 1,000 members with 64-character ids: 1.3 MB of member ids.
            let members = (1..<APILimits.maxMembers).map { index in
                UserID(rawValue: "member-\(index)-" + String(repeating: "m", count: 64 - "member-\(index)-".count))
            }
            var created = Set<UUID>()
            for _ in 0..<20 {
                let conversation = try await server.store.createConversation(
                    creator: UserID(rawValue: "alice"), title: "big", members: members)
                created.insert(conversation.id)
            }
            var cursor: String?
            var listed: [UUID] = []
            var pages = 0
            repeat {
                let query = cursor.map { "&cursor=\($0)" } ?? ""
                let reply = try await server.request(.get, "/v1/conversations?limit=200\(query)", as: "alice")
                #expect(reply.status == .ok)
                #expect(reply.body.count <= APILimits.maxResponseBytes + Self.slack, "\(reply.body.count) bytes")
                let list = try reply.decode(ConversationList.self)
                #expect(!list.conversations.isEmpty)
                #expect(!list.activityChanged)
                listed += list.conversations.map(\.id)
                cursor = list.nextCursor
                pages += 1
            } while cursor != nil
            #expect(pages >= 2, "20 conversations of 1,000 members fit in one page of at most about 1 MiB")
            #expect(listed.count == 20)
            #expect(Set(listed) == created)
        }
    }

    /// `SCROLLBACK_MAX_RESPONSE_BYTES` (the store's `maxResponseBytes`)
    /// moves the cap: 20 messages of about 8 KB of JSON each, one change set
    /// under the default cap, take several at 64 KiB, and none is lost.
    @Test func theResponseCapIsConfigurable() async throws {
        try await TestDatabase.withSchema { url, schema in
            let cap = 64 * 1024
            let store = ScrollbackStore(
                url: url, options: StoreOptions(searchPath: schema, maxResponseBytes: cap), logger: Logger(label: "scrollback.tests"))
            try await TestDatabase.running(store) {
                try await store.migrate()
                let alice = UserID(rawValue: "alice")
                let conversation = try await store.createConversation(creator: alice, title: nil, members: [])
                for index in 0..<20 {
                    _ = try await store.send(
                        to: conversation.id, from: alice, body: "\(index) " + String(repeating: "x", count: 3_990), clientID: nil)
                }
                var version: Int64 = 0
                var seen: [Int64] = []
                var sets = 0
                while true {
                    let set = try await store.changes(in: conversation.id, for: alice, since: version, limit: 1_000)
                    #expect(!set.messages.isEmpty)
                    let json = try ScrollbackJSON.encoder().encode(set)
                    #expect(json.count <= cap, "\(json.count) bytes")
                    seen += set.messages.map(\.seq)
                    version = set.version
                    sets += 1
                    if !set.hasMore { break }
                }
                #expect(sets >= 3, "20 messages of 8 KB in \(sets) sets of at most 64 KiB")
                #expect(seen == Array(1...20))
            }
        }
    }
}
