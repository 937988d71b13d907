import Foundation
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
}
