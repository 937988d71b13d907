import Foundation
import ScrollbackModels
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// A conversation's details (title, description, image, data, slow mode)
/// told live: `conversation_updated` to its subscribers and its members'
/// inboxes on every instance, and to an inbox that resumes after a change
/// made while it was away; never to anyone else.
@Suite struct ConversationDetailsLiveTests {
    static func details(_ frame: ServerFrame, inbox: Bool) -> ConversationDetails? {
        guard case .conversationUpdated(let details, let cursor) = frame, (cursor != nil) == inbox else { return nil }
        return details
    }

    static func patch(_ id: UUID, _ body: String, in cluster: LiveCluster, on index: Int = 0) async throws {
        let reply = try await cluster.request(.PATCH, "/v1/conversations/\(id)", as: "alice", body: body, on: index)
        #expect(reply.status == 200, "\(String(decoding: reply.body, as: UTF8.self))")
    }

    @Test func aChangeOnOneInstanceReachesSubscribersAndInboxesOnAnotherAndAResumedInbox() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let elsewhere = try await cluster.conversation("carol", members: ["dave"])
            let bob = try await cluster.connect("bob", to: 1)
            defer { bob.close() }
            _ = try await cluster.subscribe(bob, to: id)
            try bob.send(.subscribeInbox(after: nil))
            _ = try await bob.next { if case .inboxSubscribed = $0 { true } else { false } }
            let carol = try await cluster.connect("carol", to: 1)
            defer { carol.close() }
            _ = try await cluster.subscribe(carol, to: elsewhere)
            try carol.send(.subscribeInbox(after: nil))
            _ = try await carol.next { if case .inboxSubscribed = $0 { true } else { false } }

            let start = ContinuousClock.now
            try await Self.patch(
                id, #"{"title": "Lunch", "description": "Fridays", "data": {"venue": 7}}"#, in: cluster, on: 0)
            var live: ConversationDetails?
            var inboxed: ConversationDetails?
            var cursor: String?
            while live == nil || inboxed == nil {
                let frame = try await bob.next(where: { if case .conversationUpdated = $0 { true } else { false } })
                if let details = Self.details(frame, inbox: false) { live = details }
                if let details = Self.details(frame, inbox: true), case .conversationUpdated(_, let at) = frame {
                    inboxed = details
                    cursor = at
                }
            }
            #expect(ContinuousClock.now - start < .seconds(2))
            for details in [live, inboxed] {
                #expect(details?.conversationId == id && details?.title == "Lunch" && details?.description == "Fridays")
                #expect(details?.data == (try? CustomData(json: Array(#"{"venue": 7}"#.utf8))))
                #expect(details?.detailsVersion == 1)
            }
            // Nobody else's business.
            let carolFrames = await carol.drain(for: .milliseconds(300))
            #expect(!carolFrames.contains { if case .conversationUpdated = $0 { true } else { false } })

            // The same values again change nothing; a cleared description is null, the next version.
            try await Self.patch(id, #"{"title": "Lunch"}"#, in: cluster, on: 1)
            try await Self.patch(id, #"{"description": null}"#, in: cluster, on: 1)
            let cleared = try await bob.next(where: { Self.details($0, inbox: false) != nil })
            #expect(Self.details(cleared, inbox: false)?.detailsVersion == 2)
            #expect(Self.details(cleared, inbox: false)?.description == nil)
            #expect(Self.details(cleared, inbox: false)?.title == "Lunch")

            // Away from the inbox: a change made meanwhile comes on resume.
            bob.close()
            try await Self.patch(id, #"{"title": "Brunch", "slow_mode_seconds": 30}"#, in: cluster, on: 0)
            let back = try await cluster.connect("bob", to: 0)
            defer { back.close() }
            try back.send(.subscribeInbox(after: cursor))
            let resumed = try await back.next(where: { frame in
                Self.details(frame, inbox: true).map { $0.title == "Brunch" } ?? false
            })
            #expect(Self.details(resumed, inbox: true)?.slowModeSeconds == 30)
            #expect(Self.details(resumed, inbox: true)?.detailsVersion == 3)

            // The row of the list agrees.
            let reply = try await cluster.request(.GET, "/v1/conversations/\(id)", as: "bob")
            let row = try reply.decode(Conversation.self)
            #expect(row.title == "Brunch" && row.description == nil && row.slowModeSeconds == 30)
        }
    }

    /// A conversation's picture is a detail: setting it is told, with the
    /// picture's box.
    @Test func aPictureSetByTheOperatorIsTold() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let bob = try await cluster.connect("bob")
            defer { bob.close() }
            _ = try await cluster.subscribe(bob, to: id)
            let image = ProfileImage(url: "https://cdn.example/lunch.png", width: 64, height: 64, blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj")
            _ = try await cluster.store.setConversationImage(id, kept: nil, image: image, by: .system)
            let frame = try await bob.next(where: { Self.details($0, inbox: false) != nil })
            #expect(Self.details(frame, inbox: false)?.image == image)
        }
    }
}
