import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The outbox delivered to a webhook receiver on loopback, through a real
/// server and PostgreSQL: every change's event, signed, in order per
/// conversation, retried with the same id, dead after its window and
/// replayed.
@Suite struct WebhookTests {
    static let secret = "webhook-test-secret-0123456789"

    /// A server whose outbox posts to `url`, retrying fast.
    static func run(
        _ receiver: WebhookReceiver, window: Duration = .seconds(3600),
        _ test: @escaping @Sendable (TestServer) async throws -> Void
    ) async throws {
        try await receiver.serve { url in
            try await TestServer.run(configure: { configuration in
                configuration.outbox.webhookURL = url
                configuration.outbox.webhookSecret = secret
                Self.retryFast(&configuration.outbox)
                configuration.outbox.retryWindow = window
            }) { server in
                // The worker registers its sink at start: events are written from then on.
                try await waitForSink(server.store)
                try await test(server)
            }
        }
    }

    /// Short deadlines and backoffs, so that a test's retries take a second or two.
    static func retryFast(_ options: inout OutboxOptions) {
        options.deliveryTimeout = .seconds(2)
        options.firstBackoff = .milliseconds(200)
        options.backoffCap = .milliseconds(800)
        options.pollInterval = .milliseconds(50)
    }

    /// The webhook's counts once nothing is pending (or after 30 s).
    static func drained(_ store: ScrollbackStore) async throws -> OutboxCounts {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let counts = try await store.outboxCounts(.webhook)
            if counts.pending == 0 || ContinuousClock.now > deadline { return counts }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    static func waitForSink(_ store: ScrollbackStore) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try await !store.outboxSinks().contains(.webhook) {
            guard ContinuousClock.now < deadline else {
                Issue.record("the webhook sink was never registered")
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    static func create(_ server: TestServer, as user: String, members: [String]) async throws -> Conversation {
        try await server.request(
            .post, "/v1/conversations", as: user, json: CreateConversationRequest(title: "t", members: members)
        ).decode(Conversation.self)
    }

    @discardableResult
    static func send(_ server: TestServer, _ body: String, to id: UUID, as user: String) async throws -> Message {
        let reply = try await server.request(
            .post, "/v1/conversations/\(id)/messages", as: user, json: SendMessageRequest(body: body))
        #expect(reply.status == .created, "\(reply.text)")
        return try reply.decode(MessageEnvelope.self).message
    }

    @Test func everyKindOfChangeArrivesOnceSignedAndInOrder() async throws {
        let receiver = WebhookReceiver()
        try await Self.run(receiver) { server in
            let conversation = try await Self.create(server, as: "alice", members: ["bob"])
            let id = conversation.id
            let first = try await Self.send(server, "hello", to: id, as: "alice")
            try await Self.send(server, "second", to: id, as: "bob")
            #expect(
                try await server.request(
                    .patch, "/v1/conversations/\(id)/messages/\(first.seq)", as: "alice",
                    json: EditMessageRequest(body: "hello, edited")
                ).status == .ok)
            #expect(try await server.request(.put, "/v1/conversations/\(id)/messages/1/reactions/%F0%9F%91%8D", as: "bob").status.code < 300)
            #expect(try await server.request(.put, "/v1/conversations/\(id)/read", as: "bob", json: ReadMarkerRequest(seq: 2)).status == .ok)
            #expect(
                try await server.request(.post, "/v1/conversations/\(id)/members", as: "alice", json: AddMemberRequest(userId: "carol"))
                    .status.code < 300)
            #expect(try await server.request(.delete, "/v1/conversations/\(id)/members/carol", as: "alice").status.code < 300)
            #expect(try await server.request(.delete, "/v1/conversations/\(id)/messages/2", as: "bob").status == .ok)

            let expected: [WebhookEvent.EventType] = [
                .conversationCreated, .memberAdded, .memberAdded, .messageCreated, .messageCreated, .messageEdited,
                .reactionChanged, .readMoved, .memberAdded, .memberRemoved, .messageDeleted,
            ]
            let deliveries = try await receiver.wait("all \(expected.count) events") { $0.count >= expected.count }
            // Nothing more comes (no event twice).
            try await Task.sleep(for: .milliseconds(500))
            #expect(receiver.deliveries.count == expected.count)
            let events = try deliveries.map { try $0.event }
            #expect(events.map(\.type) == expected)
            #expect(Set(events.map(\.id)).count == events.count)
            for delivery in deliveries {
                #expect(throws: Never.self) {
                    try WebhookSignature.verify(delivery.signature, body: delivery.body, secret: Self.secret)
                }
                #expect(delivery.attempt == 1)
                #expect(try delivery.eventID == delivery.event.id)
                #expect(throws: WebhookSignature.Refusal.mismatch) {
                    try WebhookSignature.verify(delivery.signature, body: delivery.body + [32], secret: Self.secret)
                }
            }
            // Ids are written lowercase, as everywhere in the API.
            #expect(String(decoding: deliveries[0].body, as: UTF8.self).contains(
                "\"conversation_id\":\"\(id.uuidString.lowercased())\""))
            // Versions only grow within the conversation.
            let versions = events.compactMap(\.version)
            #expect(versions == versions.sorted())
            // The data is the wire object: the message as stored when
            // delivered (the first message edited, the second deleted: no body).
            guard case .message(let created) = events[3].data else {
                Issue.record("message.created carries no message")
                return
            }
            #expect(created.seq == 1 && created.sender == "alice")
            guard case .message(let deleted) = events[10].data else { return }
            #expect(deleted.deleted && deleted.body.isEmpty)
            guard case .member(let reader) = events[7].data else { return }
            #expect(reader == MemberEventData(userId: "bob", readSeq: 2))
            guard case .conversation(let created) = events[0].data else { return }
            #expect(created.createdBy == "alice" && created.members == ["alice", "bob"])
        }
    }

    /// A role that changes and a report that is filed reach the webhook:
    /// `member.updated` with the new role, and `report.created` with the
    /// message as it was reported, even once it is edited; a report of a
    /// user under the nil conversation id.
    @Test func rolesAndReportsArriveAsEvents() async throws {
        let receiver = WebhookReceiver()
        try await Self.run(receiver) { server in
            let id = try await Self.create(server, as: "alice", members: ["bob"]).id
            let message = try await Self.send(server, "rude words", to: id, as: "bob")
            #expect(
                try await server.request(
                    .patch, "/v1/conversations/\(id)/members/bob", as: "alice", json: UpdateMemberRequest(role: .admin)
                ).status == .ok)
            #expect(
                try await server.request(
                    .post, "/v1/reports", as: "alice",
                    json: CreateReportRequest(conversationId: id, seq: message.seq, reason: .harassment, note: "see")
                ).status == .created)
            _ = try await server.store.edit(message.seq, in: id, by: "bob", body: "kind words")
            #expect(
                try await server.request(
                    .post, "/v1/reports", as: "bob", json: CreateReportRequest(userId: "alice", reason: .spam)
                ).status == .created)

            let deliveries = try await receiver.wait("the role's and the reports' events") { deliveries in
                let types = deliveries.compactMap { try? $0.event.type }
                return types.contains(.memberUpdated) && types.filter { $0 == .reportCreated }.count == 2
            }
            let events = try deliveries.map { try $0.event }
            let updated = try #require(events.first { $0.type == .memberUpdated })
            guard case .member(let member) = updated.data else { throw WebhookEventMissing() }
            #expect(member == MemberEventData(userId: "bob", role: .admin) && updated.conversationId == id)
            // Different conversations: no order between the two.
            let nowhere = try #require(UUID(uuidString: "00000000-0000-0000-0000-000000000000"))
            let messageReport = try #require(events.first { $0.type == .reportCreated && $0.conversationId == id })
            let userReport = try #require(events.first { $0.type == .reportCreated && $0.conversationId == nowhere })
            guard case .report(let ofMessage) = messageReport.data, case .report(let ofUser) = userReport.data else {
                throw WebhookEventMissing()
            }
            #expect(messageReport.seq == message.seq)
            #expect(ofMessage.reporter == "alice" && ofMessage.reason == .harassment && ofMessage.note == "see")
            #expect(ofMessage.message == .init(sender: "bob", body: "rude words", version: message.version))
            #expect(ofUser.reporter == "bob" && ofUser.userId == "alice" && ofUser.message == nil)
        }
    }

    struct WebhookEventMissing: Error {}

    /// A receiver that fails the first two attempts of one event: that
    /// event is retried with the same id and attempt numbers that count up,
    /// the conversation's later events wait for it, and another
    /// conversation's go on meanwhile.
    @Test func aFailingEventIsRetriedWithItsIDWhileItsConversationWaitsAndOthersGoOn() async throws {
        let failures = NIOLockedValueBox<[String: Int]>([:])
        let receiver = WebhookReceiver { delivery in
            guard let event = try? delivery.event, case .message(let message) = event.data, message.body == "fails twice"
            else { return .status(200) }
            let count = failures.withLockedValue { failures in
                failures[delivery.eventID, default: 0] += 1
                return failures[delivery.eventID]!
            }
            return count <= 2 ? .status(500) : .status(200)
        }
        try await Self.run(receiver) { server in
            let stuck = try await Self.create(server, as: "alice", members: [])
            let free = try await Self.create(server, as: "bob", members: [])
            try await Self.send(server, "fails twice", to: stuck.id, as: "alice")
            try await Self.send(server, "after it", to: stuck.id, as: "alice")
            try await Self.send(server, "elsewhere", to: free.id, as: "bob")
            let deliveries = try await receiver.wait("both conversations' messages") { deliveries in
                deliveries.filter { (try? $0.event.type) == .messageCreated }.count >= 5
            }
            let messages = try deliveries.filter { try $0.event.type == .messageCreated }
            let bodies = try messages.map { delivery -> String in
                guard case .message(let message) = try delivery.event.data else { return "" }
                return message.body
            }
            #expect(bodies.filter { $0 == "fails twice" }.count == 3)
            let attempts = zip(messages, bodies).filter { $0.1 == "fails twice" }.map(\.0)
            #expect(Set(attempts.map(\.eventID)).count == 1)
            #expect(attempts.map(\.attempt) == [1, 2, 3])
            // "after it" only after "fails twice" got through; "elsewhere" did not wait.
            let lastFailing = bodies.lastIndex(of: "fails twice")!
            #expect(bodies.firstIndex(of: "after it")! > lastFailing)
            #expect(bodies.firstIndex(of: "elsewhere")! < lastFailing)
        }
    }

    /// An event that fails past its window is dead: counted, its
    /// conversation goes on, and a replay brings it back.
    @Test func anEventPastItsWindowIsDeadUntilReplayed() async throws {
        let refuse = NIOLockedValueBox(true)
        let receiver = WebhookReceiver { delivery in
            guard refuse.withLockedValue({ $0 }), let event = try? delivery.event, case .message(let message) = event.data,
                message.body == "refused"
            else { return .status(200) }
            return .status(503)
        }
        try await Self.run(receiver, window: .seconds(1)) { server in
            let conversation = try await Self.create(server, as: "alice", members: [])
            try await Self.send(server, "refused", to: conversation.id, as: "alice")
            try await Self.send(server, "next", to: conversation.id, as: "alice")
            _ = try await receiver.wait("the next message, once the refused one is dead") { deliveries in
                deliveries.contains { delivery in
                    guard let event = try? delivery.event, case .message(let message) = event.data else { return false }
                    return message.body == "next"
                }
            }
            // The delivery is marked once the receiver's answer is in.
            let counts = try await Self.drained(server.store)
            #expect(counts.dead == 1 && counts.pending == 0)
            func refusedAttempts(_ deliveries: [WebhookReceiver.Delivery]) -> Int {
                deliveries.filter { delivery in
                    guard let event = try? delivery.event, case .message(let message) = event.data else { return false }
                    return message.body == "refused"
                }.count
            }
            let before = refusedAttempts(receiver.deliveries)
            refuse.withLockedValue { $0 = false }
            #expect(try await server.store.replayOutbox(.webhook) == 1)
            _ = try await receiver.wait("the replayed event") { refusedAttempts($0) > before }
            let after = try await Self.drained(server.store)
            #expect(after.dead == 0 && after.pending == 0)
        }
    }
}
