import Foundation
import NIOConcurrencyHelpers
import ScrollbackClient
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// An app's Swift backend with a server token, through the kit, against a
/// real instance: acting for users, a system message their feeds show as
/// such, the moderation queue and the audit log.
@Suite struct OperatorClientTests {
    @Test func aBackendWithAServerTokenActsForUsersAndModerates() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "shop-backend", ttl: 600)
            let backend = ScrollbackClient(
                baseURL: cluster.instances[0].baseURL,
                retry: RetryPolicy(maxAttempts: 6, initialDelay: .milliseconds(50), maxDelay: .milliseconds(500)),
                token: { server })
            let conversation = try await backend.onBehalf(of: "buyer").distinctConversation(with: ["seller"])
            let seller = ClientTests.client(cluster, "seller")
            #expect(try await seller.conversation(conversation.id).role == .member)

            let sent = try await backend.sendSystemMessage("Order 42 shipped", to: conversation.id, clientId: "order-42")
            #expect(sent.message.isSystem && !sent.replayed && sent.message.seq == 1)
            let again = try await backend.sendSystemMessage("Order 42 shipped", to: conversation.id, clientId: "order-42")
            #expect(again.replayed && again.message.seq == 1)
            let page = try await seller.page(of: conversation.id)
            #expect(page.messages.map(\.isSystem) == [true])
            do {
                _ = try await seller.edit(1, in: conversation.id, body: "not shipped")
                Issue.record("a member edited a system message")
            } catch let error as ScrollbackError {
                #expect(error.code == .forbidden)
            }

            // The seller reports the buyer's message; the backend deletes it.
            let buyer = ClientTests.client(cluster, "buyer")
            let rude = try await buyer.send("rude words", to: conversation.id)
            let report = try await seller.report(message: rude.message.seq, in: conversation.id, reason: .harassment)
            let queue = try await backend.moderationReports()
            #expect(queue.reports.map(\.report.id) == [report.id] && queue.reports[0].message?.body == "rude words")
            let resolved = try await backend.resolveReport(report.id, action: .deleteMessage, note: "removed")
            #expect(resolved.resolution?.action == .deleteMessage && resolved.resolution?.resolvedBy == "shop-backend")
            #expect(try await seller.page(of: conversation.id).messages.first { $0.seq == rude.message.seq }?.deleted == true)
            #expect(try await backend.moderationReports().reports.isEmpty)
            #expect(try await backend.moderationReport(report.id).report.status == .resolved)

            // Users' tokens get nothing from the admin routes.
            do {
                _ = try await seller.auditLog()
                Issue.record("a user read the audit log")
            } catch let error as ScrollbackError {
                #expect(error.code == .serverTokenRequired)
            }
            let log = try await backend.auditLog(limit: 100)
            #expect(log.entries.contains { $0.path.hasSuffix("/resolve") && $0.detail?["action"] == "delete_message" })
            #expect(log.entries.contains { $0.onBehalfOf == "buyer" && $0.method == "POST" && $0.status == 201 })
        }
    }

    /// History imported from a file with progress, then a user's export
    /// and erasure, through the kit.
    @Test func aBackendImportsHistoryAndExportsAndErasesAUser() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "migration", ttl: 600)
            let backend = ScrollbackClient(baseURL: cluster.instances[0].baseURL, token: { server })
            let id = UUID()
            let start = Date(timeIntervalSince1970: 1_500_000_000)
            var lines: [ImportLine] = [.conversation(id, createdBy: "ann"), .member("ann", of: id, role: .owner), .member("ben", of: id)]
            for n in 1...3000 {
                lines.append(.message("m\(n)", in: id, sender: n % 3 == 0 ? "ben" : "ann", body: "line \(n)", createdAt: start.addingTimeInterval(Double(n))))
            }
            let encoder = ScrollbackJSON.encoder()
            let text = try lines.map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID()).ndjson")
            try text.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let seen = NIOLockedValueBox<[Int64]>([])
            let report = try await backend.importHistory(from: file) { sent, total in
                seen.withLockedValue { $0.append(sent) }
                #expect(sent <= total)
            }
            #expect(report.messages == 3000 && report.problemCount == 0)
            #expect(seen.withLockedValue { $0.last } == Int64(text.utf8.count))
            let dry = try await backend.importHistory(from: file, dryRun: true)
            #expect(dry.dryRun && dry.alreadyImported == 1 && dry.messages == 0)

            var messages = 0
            let records = try await backend.exportUser("ben") { record in
                if case .message(let message) = record {
                    #expect(message.sender == "ben")
                    messages += 1
                }
            }
            #expect(messages == 1000 && records == 1000 + 2)
            let erased = try await backend.eraseUser("ben")
            #expect(erased.messages == 1000 && erased.conversations == 1)
            do {
                _ = try await backend.exportUser("ben") { _ in }
                Issue.record("an erased user was exported")
            } catch let error as ScrollbackError {
                #expect(error.code == .userNotFound)
            }
        }
    }
}
