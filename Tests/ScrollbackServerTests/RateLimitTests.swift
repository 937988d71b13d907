import Foundation
import HTTPTypes
import NIOConcurrencyHelpers
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// One user cannot flood a conversation or the database: over a limit the
/// answer is 429 `rate_limited` with `Retry-After` (an `error` frame with
/// `retry_after` on the socket), nothing of it is stored, and other users
/// are not affected.
@Suite struct RateLimitTests {
    static func limited(_ configuration: inout ScrollbackConfiguration) {
        configuration.rateLimits = RateLimits()
        configuration.rateLimits.send = RateLimit(burst: 30, per: .seconds(10))
    }

    static func fewSendsAndSubscribes(_ configuration: inout ScrollbackConfiguration) {
        configuration.rateLimits = RateLimits()
        configuration.rateLimits.send = RateLimit(burst: 3, per: .seconds(30))
        configuration.rateLimits.subscribe = RateLimit(burst: 2, per: .seconds(30))
    }

    @Test func aBurstOf600SendsGets429sWithRetryAfterAndNo5xxWhileAnotherUserSends() async throws {
        try await TestServer.run(configure: Self.limited) { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let path = "/v1/conversations/\(conversation.id)/messages"
            let aliceToken = try await server.token("alice")
            let started = ContinuousClock.now
            // 600 sends from alice, 20 at a time, while bob sends 10.
            let statuses = try await withThrowingTaskGroup(of: (String, HTTPResponse.Status, String?, APIErrorCode?).self) { group in
                var all: [(String, HTTPResponse.Status, String?, APIErrorCode?)] = []
                for index in 0..<600 {
                    if index >= 20, let outcome = try await group.next() { all.append(outcome) }
                    group.addTask {
                        let reply = try await server.client.execute(
                            uri: path, method: .post,
                            headers: [.authorization: "Bearer \(aliceToken)", .contentType: "application/json"],
                            body: .init(string: #"{"body":"flood \#(index)"}"#)
                        ) { response in
                            TestServer.Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
                        }
                        let code = reply.status == .tooManyRequests ? try reply.error().error.code : nil
                        return ("alice", reply.status, reply.headers[.retryAfter], code)
                    }
                }
                for index in 0..<10 {
                    let reply = try await server.send("bob \(index)", to: conversation.id, as: "bob")
                    all.append(("bob", reply.status, nil, nil))
                }
                for try await outcome in group { all.append(outcome) }
                return all
            }
            let elapsed = ContinuousClock.now - started
            let alice = statuses.filter { $0.0 == "alice" }
            let created = alice.filter { $0.1 == .created }.count
            let refused = alice.filter { $0.1 == .tooManyRequests }
            #expect(alice.count == 600)
            #expect(created + refused.count == 600, "every send is stored or refused with 429: \(Set(alice.map(\.1.code)))")
            #expect(!statuses.contains { $0.1.code >= 500 })
            // The burst, and what refills at 3 a second while the flood lasts.
            let allowed = 30 + Int((elapsed / .seconds(1) * 3).rounded(.up))
            #expect(created >= 30 && created <= allowed, "\(created) stored in \(elapsed)")
            for (_, _, retryAfter, code) in refused {
                #expect(code == .rateLimited)
                #expect(retryAfter.flatMap(Int.init).map { $0 >= 1 && $0 <= 10 } == true, "Retry-After: \(retryAfter ?? "none")")
            }
            #expect(statuses.filter { $0.0 == "bob" }.allSatisfy { $0.1 == .created }, "bob is not limited by alice's flood")
            // Nothing refused reached the database: it holds exactly what was answered 201.
            let page = try await server.store.page(of: conversation.id, for: "alice", anchor: .newest, limit: 200)
            #expect(page.lastSeq == Int64(created + 10))
            // After Retry-After, alice may send again.
            try await Task.sleep(for: .seconds(1.1))
            #expect(try await server.send("after the wait", to: conversation.id, as: "alice").status == .created)
        }
    }

    @Test func eachLimitedHTTPActionHasItsOwnBucket() async throws {
        try await TestServer.run(configure: { configuration in
            configuration.rateLimits = RateLimits()
            configuration.rateLimits.conversation = RateLimit(burst: 2, per: .seconds(60))
            configuration.rateLimits.member = RateLimit(burst: 2, per: .seconds(60))
            configuration.rateLimits.typing = RateLimit(burst: 2, per: .seconds(60))
        }) { server in
            let first = try await server.createConversation(as: "alice")
            let second = try await server.createConversation(as: "alice")
            let third = try await server.request(.post, "/v1/conversations", as: "alice", rawBody: "{}")
            #expect(third.status == .tooManyRequests)
            #expect(try third.error().error.code == .rateLimited)
            // Up to the 30 s one conversation takes to refill (less the test's own time so far).
            #expect(third.headers[.retryAfter].flatMap(Int.init).map { (1...30).contains($0) } == true)
            // Another user creates freely; alice's other actions have their own buckets.
            let bobs = try await server.createConversation(as: "bob")
            let added = try await server.request(
                .post, "/v1/conversations/\(bobs.id)/members", as: "bob", rawBody: #"{"user_id":"alice"}"#)
            #expect(added.status == .ok)
            for (index, expected) in [HTTPResponse.Status.ok, .ok, .tooManyRequests].enumerated() {
                let reply = try await server.request(
                    .post, "/v1/conversations/\(first.id)/members", as: "alice", rawBody: #"{"user_id":"m\#(index)"}"#)
                #expect(reply.status == expected, "member \(index): \(reply.text)")
            }
            // Typing notices that go out count, one per conversation here
            // (a second one in the same conversation within 2 s is dropped, 204).
            for (index, (id, expected)) in [
                (first.id, HTTPResponse.Status.noContent), (first.id, .noContent), (second.id, .noContent),
                (bobs.id, .tooManyRequests),
            ].enumerated() {
                let reply = try await server.request(.post, "/v1/conversations/\(id)/typing", as: "alice")
                #expect(reply.status == expected, "typing \(index)")
            }
            // The refused member was not added.
            let conversation = try await server.store.conversation(first.id, for: "alice")
            #expect(conversation.members == ["alice", "m0", "m1"])
            let list = try await server.request(.get, "/v1/conversations", as: "alice").decode(ConversationList.self)
            #expect(list.conversations.count == 3)  // her two and bob's
        }
    }

    @Test func theSocketAnswersAnErrorFrameWithRetryAfterAndStaysOpen() async throws {
        try await LiveCluster.run(configure: Self.fewSendsAndSubscribes) { cluster in
            let id = try await cluster.conversation("alice", members: [])
            let alice = try await cluster.connect("alice")
            for index in 0..<3 {
                try alice.send(.send(conversationId: id, body: "hi \(index)", clientId: "c\(index)"))
                guard case .ack = try await alice.next() else { Issue.record("send \(index) was not acknowledged"); return }
            }
            try alice.send(.send(conversationId: id, body: "one too many", clientId: "c3"))
            let refused = try await alice.next()
            guard case .error(let code, _, let ref, let retryAfter) = refused else {
                Issue.record("expected an error frame, got \(refused)")
                return
            }
            #expect(code == .rateLimited)
            #expect(ref == "c3")
            // Up to the 10 s one send takes to refill.
            #expect(retryAfter.map { (1...10).contains($0) } == true, "\(String(describing: retryAfter))")
            // Subscribes have a bucket of their own.
            try await cluster.subscribe(alice, to: id)
            try await cluster.subscribe(alice, to: id)
            try alice.send(.subscribe(conversationId: id, afterSeq: nil))
            #expect(try await alice.next().errorCode == .rateLimited)
            // The socket stays open, and the refused send was not stored.
            try alice.send(.ping)
            #expect(try await alice.next() == .pong)
            let page = try await cluster.store.page(of: id, for: "alice", anchor: .newest, limit: 10)
            #expect(page.lastSeq == 3)
        }
    }

    @Test func socketTypingAndInboxSubscribesAreLimitedWithRetryAfterAndTheSocketStaysOpen() async throws {
        try await LiveCluster.run(configure: { configuration in
            configuration.rateLimits = RateLimits()
            configuration.rateLimits.typing = RateLimit(burst: 2, per: .seconds(30))
            configuration.rateLimits.subscribe = RateLimit(burst: 2, per: .seconds(30))
        }) { cluster in
            var ids: [UUID] = []
            for _ in 0..<3 { ids.append(try await cluster.conversation("alice", members: ["bob"])) }
            // Bob watches the second and the third (his own subscribes fill his bucket).
            let bob = try await cluster.connect("bob")
            for id in ids.dropFirst() { try await cluster.subscribe(bob, to: id) }
            let alice = try await cluster.connect("alice")
            // Typing in three conversations: the socket's 2 s pacing is per
            // conversation, so only the bucket (2) refuses the third.
            for id in ids { try alice.send(.typing(conversationId: id)) }
            let refused = try await alice.next { if case .error = $0 { true } else { false } }
            guard case .error(let code, _, let ref, let retryAfter) = refused else { return }
            #expect(code == .rateLimited)
            #expect(ref == ids[2].uuidString.lowercased(), "the first error is the third typing's")
            // Up to the 15 s one typing notice takes to refill.
            #expect(retryAfter.map { (1...15).contains($0) } == true, "\(String(describing: retryAfter))")
            // The second was announced, the refused third was not.
            let announced = try await bob.next { if case .typing = $0 { true } else { false } }
            #expect(announced == .typing(conversationId: ids[1], userId: "alice"))
            #expect(await bob.drain(for: .milliseconds(500)).allSatisfy { if case .typing = $0 { false } else { true } })

            // Inbox subscribes share the subscribe bucket.
            for _ in 0..<2 {
                try alice.send(.subscribeInbox(after: nil))
                _ = try await alice.next { if case .inboxSubscribed = $0 { true } else { false } }
            }
            try alice.send(.subscribeInbox(after: nil))
            let inboxRefused = try await alice.next { frame in
                switch frame {
                case .error, .inboxSubscribed: true
                default: false
                }
            }
            guard case .error(let inboxCode, _, _, let inboxRetryAfter) = inboxRefused else {
                Issue.record("expected an error frame, got \(inboxRefused)")
                return
            }
            #expect(inboxCode == .rateLimited)
            #expect(inboxRetryAfter.map { (1...15).contains($0) } == true, "\(String(describing: inboxRetryAfter))")
            // The socket stays open.
            try alice.send(.ping)
            #expect(try await alice.next { $0 == .pong } == .pong)
        }
    }

    @Test func aTokenBucketRefillsAtItsRateAndSaysHowLongToWait() {
        var bucket = TokenBucket(limit: RateLimit(burst: 3, per: .seconds(3)), now: .zero)
        for _ in 0..<3 { #expect(bucket.take(now: .zero) == nil) }
        #expect(bucket.take(now: .zero) == .seconds(1))
        #expect(bucket.take(now: .milliseconds(400)) == .milliseconds(600))
        #expect(bucket.take(now: .seconds(1)) == nil)
        #expect(!bucket.isFull(now: .seconds(3)))
        #expect(bucket.isFull(now: .seconds(4)))
        // Never more than the burst, however long it rested.
        for _ in 0..<3 { #expect(bucket.take(now: .seconds(100)) == nil) }
        #expect(bucket.take(now: .seconds(100)) != nil)
        #expect(RateLimiter.wholeSeconds(.milliseconds(1)) == 1)
        #expect(RateLimiter.wholeSeconds(.milliseconds(2001)) == 3)
    }

    @Test func theLimiterForgetsFullBucketsAndCountsRefusals() throws {
        let refusals = NIOLockedValueBox<[RateLimitedAction]>([])
        var limits = RateLimits.off
        limits.send = RateLimit(burst: 1, per: .milliseconds(1))
        let limiter = RateLimiter(limits: limits) { action in refusals.withLockedValue { $0.append(action) } }
        for index in 0..<(RateLimiter.sweepEvery - 1) {
            try limiter.check(.send, for: UserID(rawValue: "u\(index)"))
        }
        // Off: never counted, never refused.
        for _ in 0..<5 { try limiter.check(.typing, for: "u0") }
        #expect(limiter.bucketCount > 1000)
        Thread.sleep(forTimeInterval: 0.01)
        try limiter.check(.send, for: "last")  // the sweep: every other bucket refilled
        #expect(limiter.bucketCount <= 1)
        try limiter.check(.send, for: "again")
        #expect(throws: APIError.self) { try limiter.check(.send, for: "again") }
        #expect(refusals.withLockedValue { $0 } == [.send])
    }
}
