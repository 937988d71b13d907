import Foundation
import NIOHTTP1
import PostgresNIO
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// History imports (`POST /v1/admin/import`) on a real instance and a real
/// PostgreSQL: what is stored, a second import of the same file, every
/// problem by line with nothing stored, and an import whose database
/// connection dies halfway.
@Suite struct ImportAPITests {
    static let start = Date(timeIntervalSince1970: 1_600_000_000)

    static func ndjson(_ lines: [ImportLine]) throws -> String {
        let encoder = ScrollbackJSON.encoder()
        return try lines.map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n") + "\n"
    }

    /// A conversation of `count` messages from alice and bob, a minute apart.
    static func history(_ id: UUID, count: Int, prefix: String = "x") -> [ImportLine] {
        var lines: [ImportLine] = [
            .conversation(id, createdBy: "alice", title: "From the old service", createdAt: start),
            .member("alice", of: id, role: .owner), .member("bob", of: id),
        ]
        for n in 1...count {
            lines.append(
                .message(
                    "\(prefix)-\(n)", in: id, sender: n % 2 == 0 ? "bob" : "alice", body: "old message \(n)",
                    createdAt: start.addingTimeInterval(Double(n) * 60)))
        }
        return lines
    }

    @Test func anImportStoresHistoryInTimeOrderAndASecondImportChangesNothing() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "migration", ttl: 600)
            let id = UUID()
            // An empty conversation that exists already takes history too.
            let empty = try await cluster.conversation("carol", members: ["dave"])
            var lines = Self.history(id, count: 10)
            lines += [
                .reaction("👍", by: "bob", to: "x-1", in: id), .reaction("👍", by: "alice", to: "x-1", in: id),
                .reaction("🎉", by: "bob", to: "x-1", in: id), .readMarker("bob", at: "x-6", in: id),
                .message("y-1", in: empty, sender: "dave", body: "hello from before", createdAt: Self.start),
            ]
            let file = try Self.ndjson(lines)
            // A sink registered: an import must not fill the outbox (no push, no webhook).
            _ = try await TestDatabase.otherConnection(to: cluster.store) { connection in
                try await connection.query("INSERT INTO outbox_sinks (name) VALUES ('push')", logger: connection.logger).collect()
            }

            let dry = try await cluster.request(.POST, "/v1/admin/import?dry_run=true", token: server, body: file)
            #expect(dry.status == 200)
            let checked = try dry.decode(ImportReport.self)
            #expect(checked.dryRun && checked.messages == 11 && checked.problemCount == 0 && checked.lines == lines.count)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM messages").first == 0)

            let reply = try await cluster.request(.POST, "/v1/admin/import", token: server, body: file)
            #expect(reply.status == 200)
            let report = try reply.decode(ImportReport.self)
            #expect(report.conversations == 1 && report.members == 2 && report.messages == 11)
            #expect(report.reactions == 3 && report.readMarkers == 1 && report.alreadyImported == 0)

            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "bob").decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == Array((1...10).reversed()))
            #expect(page.messages.last?.body == "old message 1" && page.messages.last?.createdAt == Self.start.addingTimeInterval(60))
            #expect(page.messages.last?.reactions.map { "\($0.emoji)\($0.count)" } == ["👍2", "🎉1"])
            // Jump to a date inside the imported history.
            let around = try await cluster.store.seq(at: Self.start.addingTimeInterval(5 * 60 + 1), in: id, for: "bob")
            #expect(around == 6)
            let list = try await cluster.request(.GET, "/v1/conversations", as: "bob").decode(ConversationList.self)
            #expect(list.conversations.first { $0.id == id }.map { ($0.readSeq, $0.unreadCount) } ?? (0, 0) == (6, 2))
            let emptyPage = try await cluster.request(.GET, "/v1/conversations/\(empty)/messages", as: "carol").decode(MessagePage.self)
            #expect(emptyPage.messages.map(\.body) == ["hello from before"])
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM outbox").first == 0)

            // The same file again: nothing changes.
            let version = page.version
            let again = try await cluster.request(.POST, "/v1/admin/import", token: server, body: file)
            #expect(again.status == 200)
            let second = try again.decode(ImportReport.self)
            #expect(second.alreadyImported == 2 && second.messages == 0 && second.reactions == 0 && second.conversations == 0)
            let after = try await cluster.store.page(of: id, for: "bob", anchor: .newest, limit: 50, minVersion: 0)
            #expect(after.version == version && after.messages.count == 10)

            // A conversation with messages of its own is refused.
            _ = try await cluster.request(.POST, "/v1/conversations/\(empty)/messages", as: "carol", body: #"{"body": "new"}"#)
            let more = [ImportLine.message("y-2", in: empty, sender: "dave", body: "late", createdAt: Self.start)]
            let refused = try await cluster.request(.POST, "/v1/admin/import", token: server, body: try Self.ndjson(more))
            #expect(refused.status == 422)
            #expect(try refused.decode(ImportReport.self).problems.map(\.line) == [1])
            #expect(try refused.decode(ImportReport.self).problems.first?.message.contains("already has messages") == true)

            #expect(try await cluster.request(.POST, "/v1/admin/import", as: "alice", body: file).status == 403)
            let blank = try await cluster.request(.POST, "/v1/admin/import", token: server, body: "\n\n")
            #expect(blank.status == 400 && blank.code == .invalidJSON)
        }
    }

    /// The same file imported by three clients at once (a long import
    /// retried), three times over: each import answers 200, one stores the
    /// history, the others find it imported, and it is there once.
    @Test func theSameFileImportedAtOnceIsStoredOnce() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let server = try await cluster.tokens.serverToken(named: "migration", ttl: 600)
            for round in 0..<3 {
                let id = UUID()
                let file = try Self.ndjson(Self.history(id, count: 200, prefix: "r\(round)"))
                let replies = try await withThrowingTaskGroup(of: LiveCluster.HTTPReply.self) { group in
                    for n in 0..<3 {
                        group.addTask { try await cluster.request(.POST, "/v1/admin/import", token: server, body: file, on: n % 2) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                #expect(replies.map(\.status) == [200, 200, 200], "round \(round): \(replies.map(\.status))")
                let reports = try replies.map { try $0.decode(ImportReport.self) }
                #expect(reports.map(\.messages).sorted() == [0, 0, 200], "round \(round)")
                #expect(reports.map(\.alreadyImported).sorted() == [0, 1, 1], "round \(round)")
                #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM messages WHERE conversation_id = \(id)") == [200])
            }
        }
    }

    /// A conversation may have one owner: a file that gives it two, or an
    /// owner beside the one it has, is refused by line, never a 500.
    @Test func aSecondOwnerIsAProblemOfTheFile() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "migration", ttl: 600)
            let id = UUID()
            var lines = Self.history(id, count: 2)
            lines.append(.member("carol", of: id, role: .owner))
            let two = try await cluster.request(.POST, "/v1/admin/import", token: server, body: try Self.ndjson(lines))
            #expect(two.status == 422)
            #expect(try two.decode(ImportReport.self).problems.first?.message.contains("more than one owner") == true)

            let stored = try await cluster.conversation("dave", members: [])
            let beside = [ImportLine.member("erin", of: stored, role: .owner)]
            let refused = try await cluster.request(.POST, "/v1/admin/import", token: server, body: try Self.ndjson(beside))
            #expect(refused.status == 422)
            #expect(try refused.decode(ImportReport.self).problems.map(\.line) == [1])
        }
    }

    /// Every problem, by line, and nothing of the import stored.
    @Test func everyProblemIsReportedByLineAndNothingIsStored() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "migration", ttl: 600)
            let id = UUID()
            var lines = Self.history(id, count: 4)  // lines 1 to 7
            lines.append(.message("x-5", in: id, sender: "mallory", body: "who am I", createdAt: Self.start.addingTimeInterval(600)))  // 8
            lines.append(.message("x-6", in: id, sender: "bob", body: "back in time", createdAt: Self.start))  // 9
            lines.append(.message("x-1", in: id, sender: "alice", body: "a different body", createdAt: Self.start.addingTimeInterval(900)))  // 10
            lines.append(.message("z-1", in: UUID(), sender: "bob", body: "nowhere", createdAt: Self.start))  // 11
            lines.append(.reaction("👍", by: "bob", to: "nope", in: id))  // 12
            var text = try Self.ndjson(lines)
            text += "{\"type\": \"message\", \"conversation_id\": \"\(id)\"}\n"  // 13: no fields
            text += "not json\n"  // 14
            text += "\n"  // 15: blank, fine
            text += "{\"type\": \"poll\"}\n"  // 16
            let body = String(repeating: "a", count: APILimits.maxMessageBodyLength + 1)
            text += try Self.ndjson([.message("x-7", in: id, sender: "bob", body: body, createdAt: Self.start.addingTimeInterval(1200))])  // 17

            for path in ["/v1/admin/import?dry_run=true", "/v1/admin/import"] {
                let reply = try await cluster.request(.POST, path, token: server, body: text)
                #expect(reply.status == (path.hasSuffix("true") ? 200 : 422), "\(path)")
                let report = try reply.decode(ImportReport.self)
                #expect(report.problems.map(\.line) == [8, 9, 10, 11, 12, 13, 14, 16, 17], "\(report.problems)")
                #expect(report.problemCount == 9 && report.lines == 17)
                #expect(report.problems.first { $0.line == 8 }?.message.contains("mallory is not a member") == true)
                #expect(report.problems.first { $0.line == 9 }?.message.contains("created_at order") == true)
                #expect(report.problems.first { $0.line == 10 }?.message.contains("given on line 4") == true)
            }
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM conversations").first == 0)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM messages").first == 0)
        }
    }

    /// The database connection of an import dies while it stages lines:
    /// nothing of it is stored; the same import run again stores it all.
    /// (The import names itself and its schema in `application_name`, so
    /// only this test's import is cut when other tests share the database.)
    @Test func anImportCutHalfwayStoresNothingAndRunsAgainWhole() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "migration", ttl: 600)
            let id = UUID()
            let file = try Self.ndjson(Self.history(id, count: 20_000))
            let importing = Task {
                try await cluster.request(.POST, "/v1/admin/import", token: server, body: file)
            }
            let killed = try await TestDatabase.otherConnection(to: cluster.store) { connection -> Bool in
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    let rows = try await connection.query(
                        """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE application_name = \("scrollback import " + cluster.schema)
                          AND query LIKE '%INSERT INTO import_lines%' AND pid <> pg_backend_pid()
                        """,
                        logger: connection.logger
                    ).collect()
                    if !rows.isEmpty { return true }
                    try await Task.sleep(for: .milliseconds(5))
                }
                return false
            }
            #expect(killed)
            let cut = try await importing.value
            #expect(cut.status >= 500, "\(cut.status)")
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM conversations").first == 0)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM messages").first == 0)

            let whole = try await cluster.request(.POST, "/v1/admin/import", token: server, body: file)
            #expect(whole.status == 200)
            #expect(try whole.decode(ImportReport.self).messages == 20_000)
            let seqs = try await cluster.store.values(Int64.self, "SELECT last_seq FROM conversations WHERE id = \(id)")
            #expect(seqs == [20_000])
        }
    }
}
