import Foundation
import HTTPTypes
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The limits on uploads and the uploads a send or a `PUT` refuses, on a
/// real server and PostgreSQL: the quota of pending uploads, the upload
/// rate, an upload of another conversation, an expired one, one cut short.
@Suite struct UploadLimitTests {
    typealias Flow = UploadAPITests.Flow

    static func withFlow(
        configure: @escaping (inout ScrollbackConfiguration) -> Void = { _ in },
        _ body: @escaping @Sendable (Flow) async throws -> Void
    ) async throws {
        try await TestServer.run(configure: configure) { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            try await body(Flow(server: server, conversation: conversation.id))
        }
    }

    /// The uploads of `user` the database holds, sent or not.
    static func uploads(of user: String, in flow: Flow) async throws -> Int {
        try await flow.server.store.values(Int.self, "SELECT count(*) FROM uploads WHERE uploader = \(user)").first ?? -1
    }

    static let image = UploadAPITests.png(width: 4, height: 3)

    @Test func aUserAtTheQuotaOfPendingUploadsIsRefusedUntilOneIsSent() async throws {
        try await Self.withFlow(configure: { $0.uploads.maxPending = 3 }) { flow in
            var pending: [UploadTicket] = []
            for index in 0..<3 {
                pending.append(try await flow.upload("\(index).png", "image/png", Self.image))
            }
            let refused = try await flow.announce("3.png", "image/png", size: Self.image.count)
            #expect(refused.status == .unprocessableContent, "\(refused.text)")
            #expect(refused.headers[.contentType]?.hasPrefix("application/json") == true)
            let error = try refused.error().error
            #expect(error.code == .tooManyUploads)
            #expect(error.message.contains("3 uploads pending"))
            #expect(try await Self.uploads(of: "alice", in: flow) == 3)

            // Another user has a quota of their own.
            let bob = try await flow.announce("b.png", "image/png", size: Self.image.count, as: "bob")
            #expect(bob.status == .created, "\(bob.text)")

            // Sent with a message, an upload is no longer pending: a place is free, one only.
            #expect(try await flow.put(pending[0], Self.image).status == .ok)
            #expect(try await flow.send("one", attachments: [pending[0].uploadId]).status == .created)
            let freed = try await flow.announce("4.png", "image/png", size: Self.image.count)
            #expect(freed.status == .created, "\(freed.text)")
            let full = try await flow.announce("5.png", "image/png", size: Self.image.count)
            #expect(try full.status == .unprocessableContent && full.error().error.code == .tooManyUploads)

            // An upload that expired unsent frees its place too.
            _ = try await flow.server.store.values(
                Int.self,
                "UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = \(pending[1].uploadId) RETURNING 1")
            let afterExpiry = try await flow.announce("6.png", "image/png", size: Self.image.count)
            #expect(afterExpiry.status == .created, "\(afterExpiry.text)")
        }
    }

    @Test func announcingUploadsTooFastIs429WithRetryAfterForThatUserOnly() async throws {
        try await Self.withFlow(configure: { $0.rateLimits.upload = RateLimit(burst: 2, per: .seconds(60)) }) { flow in
            for index in 0..<2 {
                let reply = try await flow.announce("\(index).png", "image/png", size: Self.image.count)
                #expect(reply.status == .created, "\(reply.text)")
            }
            let limited = try await flow.announce("2.png", "image/png", size: Self.image.count)
            #expect(limited.status == .tooManyRequests, "\(limited.text)")
            #expect(try limited.error().error.code == .rateLimited)
            let retryAfter = try #require(limited.headers[.retryAfter].flatMap { Int($0) })
            #expect((1...60).contains(retryAfter))
            // Refused before anything was stored.
            #expect(try await Self.uploads(of: "alice", in: flow) == 2)

            // bob's bucket is his own.
            for index in 0..<2 {
                let reply = try await flow.announce("b\(index).png", "image/png", size: Self.image.count, as: "bob")
                #expect(reply.status == .created, "\(reply.text)")
            }
            // The limit counts announcements, not bytes: alice's announced uploads still take theirs.
            let ticket = try #require(
                try await flow.server.store.values(
                    UUID.self, "SELECT id FROM uploads WHERE uploader = 'alice' ORDER BY created_at LIMIT 1"
                ).first)
            let put = try await flow.server.request(
                .put, "/v1/conversations/\(flow.conversation)/uploads/\(ticket)", as: "alice", bytes: Self.image,
                headers: [.contentType: "image/png"])
            #expect(put.status == .ok, "\(put.text)")
        }
    }

    /// An upload is scoped to its conversation: its own uploader cannot
    /// send it into another one, and the refused send stores nothing and
    /// leaves the upload usable where it belongs.
    @Test func anUploadOfAnotherConversationIsRefusedAtSend() async throws {
        try await Self.withFlow { flow in
            let other = try await flow.server.createConversation(as: "alice", members: ["bob"]).id
            let elsewhere = Flow(server: flow.server, conversation: other)
            let ticket = try await elsewhere.upload("there.png", "image/png", Self.image)
            #expect(try await elsewhere.put(ticket, Self.image).status == .ok)

            let refused = try await flow.send("wrong place", attachments: [ticket.uploadId])
            #expect(refused.status == .unprocessableContent, "\(refused.text)")
            #expect(try refused.error().error.code == .invalidAttachments)
            // Its bytes cannot be put through the other conversation's path either.
            let wrongPath = try await flow.server.request(
                .put, "/v1/conversations/\(flow.conversation)/uploads/\(ticket.uploadId)", as: "alice",
                bytes: Self.image, headers: [.contentType: "image/png"])
            #expect(try wrongPath.status == .notFound && wrongPath.error().error.code == .uploadNotFound)

            let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages", as: "alice")
                .decode(MessagePage.self)
            #expect(page.messages.isEmpty)
            let sent = try await elsewhere.send("right place", attachments: [ticket.uploadId])
            #expect(sent.status == .created, "\(sent.text)")
            #expect(try sent.decode(MessageEnvelope.self).message.attachments.map(\.id) == [ticket.uploadId])
        }
    }

    /// The same over the live stream: an `error` frame for the send, nothing stored.
    @Test func aSocketSendOfAnUploadOfAnotherConversationIsAnErrorFrame() async throws {
        try await Self.withFlow { flow in
            let other = try await flow.server.createConversation(as: "alice", members: ["bob"]).id
            let elsewhere = Flow(server: flow.server, conversation: other)
            let ticket = try await elsewhere.upload("there.png", "image/png", Self.image)
            #expect(try await elsewhere.put(ticket, Self.image).status == .ok)

            let socket = StreamClient(port: try #require(flow.server.client.port), token: try await flow.server.token("alice"))
            defer { socket.close() }
            try await socket.waitUntilConnected()
            try socket.send(.send(conversationId: flow.conversation, body: "", clientId: "wrong-1", attachments: [ticket.uploadId]))
            let frame = try await socket.next { if case .error = $0 { true } else if case .ack = $0 { true } else { false } }
            guard case .error(let code, _, let ref, _) = frame else {
                Issue.record("expected an error frame, got \(frame)")
                return
            }
            #expect(code == .invalidAttachments)
            #expect(ref == "wrong-1")
            let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages", as: "alice")
                .decode(MessagePage.self)
            #expect(page.messages.isEmpty)
        }
    }

    @Test func bytesPutToAnExpiredUploadAreRefused() async throws {
        try await Self.withFlow { flow in
            let bytes = UploadAPITests.png(width: 8, height: 8, padding: 2_000)
            let ticket = try await flow.upload("late.png", "image/png", bytes)
            let half = bytes.count / 2
            #expect(try await flow.put(ticket, bytes[..<half]).status == .ok)
            _ = try await flow.server.store.values(
                Int.self,
                "UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = \(ticket.uploadId) RETURNING 1")
            let rest = try await flow.put(ticket, bytes[half...], range: "bytes \(half)-\(bytes.count - 1)/\(bytes.count)")
            #expect(rest.status == .conflict, "\(rest.text)")
            #expect(try rest.error().error.code == .uploadUnavailable)
            // Nothing past the first half was kept.
            let received = try await flow.server.store.values(
                Int.self, "SELECT received FROM uploads WHERE id = \(ticket.uploadId)")
            #expect(received == [half])

            // An expired upload that was never written to: refused from its first byte.
            let fresh = try await flow.upload("never.png", "image/png", bytes)
            _ = try await flow.server.store.values(
                Int.self,
                "UPDATE uploads SET expires_at = now() - interval '1 second' WHERE id = \(fresh.uploadId) RETURNING 1")
            let whole = try await flow.put(fresh, bytes)
            #expect(try whole.status == .conflict && whole.error().error.code == .uploadUnavailable)
        }
    }

    /// Fewer bytes than declared leave the upload incomplete: it cannot be
    /// sent, and the send stores nothing.
    @Test func anUploadWithFewerBytesThanDeclaredCannotBeSent() async throws {
        try await Self.withFlow { flow in
            let bytes = UploadAPITests.png(width: 8, height: 8, padding: 2_000)
            let ticket = try await flow.upload("short.png", "image/png", bytes)
            let put = try await flow.put(ticket, bytes.dropLast(10))
            #expect(put.status == .ok, "\(put.text)")
            let progress = try put.decode(UploadProgress.self)
            #expect(!progress.complete && progress.attachment == nil)
            #expect(progress.received == Int64(bytes.count - 10) && progress.size == Int64(bytes.count))

            let send = try await flow.send("short", attachments: [ticket.uploadId])
            #expect(send.status == .unprocessableContent, "\(send.text)")
            #expect(try send.error().error.code == .invalidAttachments)
            let page = try await flow.server.request(.get, "/v1/conversations/\(flow.conversation)/messages", as: "alice")
                .decode(MessagePage.self)
            #expect(page.messages.isEmpty)
            // The rest completes it, and then it can be sent.
            let rest = try await flow.put(
                ticket, bytes.suffix(10), range: "bytes \(bytes.count - 10)-\(bytes.count - 1)/\(bytes.count)")
            #expect(try rest.decode(UploadProgress.self).complete)
            #expect(try await flow.send("whole", attachments: [ticket.uploadId]).status == .created)
        }
    }
}
