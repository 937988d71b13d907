import Foundation
import HTTPTypes
import NIOHTTP1
import ScrollbackModels
import ScrollbackTestSupport
import Testing

/// An app's own `data` and message `type`: stored as sent, returned
/// wherever the object is, never read by the server; bad data is a 422 that
/// stores nothing.
@Suite struct CustomDataAPITests {
    struct Order: Codable, Equatable {
        var id: String
        var status: String
        var total: Double
        var items: [String]
    }

    static let order = Order(id: "o-17", status: "shipped", total: 12.5, items: ["tea", "cups"])

    @Test func dataAndTypeRoundTripThroughSendPageChangesThreadAndEdit() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let path = "/v1/conversations/\(conversation.id)/messages"
            let data = try CustomData(encoding: Self.order)
            let sent = try await server.request(
                .post, path, as: "alice",
                json: SendMessageRequest(body: "Your order shipped", data: data, type: "order_status"))
            #expect(sent.status == .created, "\(sent.text)")
            let message = try sent.decode(MessageEnvelope.self).message
            #expect(message.type == "order_status")
            #expect(try message.data(as: Order.self) == Self.order)

            // A message without data has no `data` key at all.
            let plain = try await server.send("plain", to: conversation.id, as: "bob")
            #expect(!plain.text.contains(#""data""#) && !plain.text.contains(#""type""#))

            let page = try await server.request(.get, path, as: "bob").decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == [2, 1])
            #expect(page.messages[1].data == data && page.messages[1].type == "order_status")
            #expect(page.messages[0].data == nil && page.messages[0].type == nil)

            let changes = try await server.request(.get, "/v1/conversations/\(conversation.id)/changes?since_version=0", as: "bob")
                .decode(ChangeSet.self)
            #expect(changes.messages.first { $0.seq == 1 }?.data == data)

            // A reply with data, read through the thread.
            let replyData = try CustomData(["choice": .integer(2), "nested": .object(["ok": .bool(true)])])
            let reply = try await server.request(
                .post, path, as: "bob", json: SendMessageRequest(body: "", replyTo: 1, data: replyData, type: "poll.vote"))
            #expect(reply.status == .created, "\(reply.text)")
            let thread = try await server.request(.get, "\(path)/1/thread", as: "alice").decode(ThreadPage.self)
            #expect(thread.root.data == data)
            #expect(thread.messages.map(\.data) == [replyData] && thread.messages.map(\.type) == ["poll.vote"])

            // An edit of the data alone keeps the body; of the body alone keeps the data.
            let newData = try CustomData(["status": .string("delivered")])
            let edited = try await server.request(.patch, "\(path)/1", as: "alice", rawBody: #"{"data": {"status": "delivered"}}"#)
            #expect(edited.status == .ok, "\(edited.text)")
            let afterData = try edited.decode(MessageEnvelope.self).message
            #expect(afterData.data == newData && afterData.body == "Your order shipped" && afterData.editedAt != nil)
            #expect(afterData.type == "order_status" && afterData.version > message.version)
            let rewritten = try await server.request(.patch, "\(path)/1", as: "alice", json: EditMessageRequest(body: "Delivered"))
                .decode(MessageEnvelope.self).message
            #expect(rewritten.body == "Delivered" && rewritten.data == newData)
            // `"data": null` removes it.
            let cleared = try await server.request(.patch, "\(path)/1", as: "alice", rawBody: #"{"data": null}"#)
                .decode(MessageEnvelope.self).message
            #expect(cleared.data == nil && cleared.body == "Delivered")
            let empty = try await server.request(.patch, "\(path)/1", as: "alice", rawBody: "{}")
            #expect(empty.status == .badRequest)
            let latest = try await server.request(.get, "\(path)?limit=3", as: "alice").decode(MessagePage.self)
            #expect(latest.messages.first { $0.seq == 1 }?.data == nil)
        }
    }

    @Test func badDataIsRefusedWith422AndNothingIsStored() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            let path = "/v1/conversations/\(conversation.id)/messages"
            #expect(try await server.send("first", to: conversation.id, as: "alice").status == .created)
            let big = String(repeating: "x", count: APILimits.maxCustomDataBytes)
            let longKey = String(repeating: "k", count: APILimits.maxCustomDataKeyLength + 1)
            let cases: [(String, String, APIErrorCode, String)] = [
                ("an array", #"{"body": "hi", "data": [1, 2]}"#, .invalidData, "object"),
                ("a string", #"{"body": "hi", "data": "text"}"#, .invalidData, "object"),
                ("a number", #"{"body": "hi", "data": 7}"#, .invalidData, "object"),
                ("too large", #"{"body": "hi", "data": {"a": "\#(big)"}}"#, .invalidData, "\(APILimits.maxCustomDataBytes)"),
                ("too deep", #"{"body": "hi", "data": {"a": {"b": {"c": {"d": {"e": 1}}}}}}"#, .invalidData, "\(APILimits.maxCustomDataDepth)"),
                ("too deep in arrays", #"{"body": "hi", "data": {"a": [[[[1]]]]}}"#, .invalidData, "\(APILimits.maxCustomDataDepth)"),
                ("a long key", #"{"body": "hi", "data": {"\#(longKey)": 1}}"#, .invalidData, "\(APILimits.maxCustomDataKeyLength)"),
                ("a NUL", #"{"body": "hi", "data": {"a": "x\u0000y"}}"#, .invalidData, "U+0000"),
                ("a lone surrogate", #"{"body": "hi", "data": {"a": "\ud800"}}"#, .invalidData, "UTF-8"),
                ("a type with capitals", #"{"body": "hi", "type": "Order"}"#, .invalidMessageType, "a-z"),
                ("an empty type", #"{"body": "hi", "type": ""}"#, .invalidMessageType, "a-z"),
                ("a type from a digit", #"{"body": "hi", "type": "1x"}"#, .invalidMessageType, "a-z"),
                ("a long type", #"{"body": "hi", "type": "\#(String(repeating: "t", count: 65))"}"#, .invalidMessageType, "64"),
            ]
            for (name, body, code, limit) in cases {
                let reply = try await server.request(.post, path, as: "alice", rawBody: body)
                #expect(reply.status == .unprocessableContent, "\(name): \(reply.status) \(reply.text)")
                let error = try reply.error()
                #expect(error.error.code == code, "\(name)")
                #expect(error.error.message.contains(limit), "\(name): \(error.error.message)")
                // An edit with the same data is refused alike and changes nothing.
                if code == .invalidData, let data = body.range(of: #""data": "#) {
                    let edit = "{" + body[data.lowerBound...]
                    let refused = try await server.request(.patch, "\(path)/1", as: "alice", rawBody: String(edit))
                    #expect(try refused.status == .unprocessableContent && refused.error().error.code == .invalidData, "\(name)")
                }
            }
            // Exactly at the limits is fine.
            let deepest = #"{"body": "hi", "data": {"a": {"b": {"c": {"d": 1}}}}}"#
            #expect(try await server.request(.post, path, as: "alice", rawBody: deepest).status == .created)
            let key = String(repeating: "k", count: APILimits.maxCustomDataKeyLength)
            let filler = String(repeating: "x", count: APILimits.maxCustomDataBytes - #"{"":""}"#.utf8.count - key.utf8.count)
            let largest = #"{"body": "hi", "data": {"\#(key)": "\#(filler)"}}"#
            let stored = try await server.request(.post, path, as: "alice", rawBody: largest)
            #expect(stored.status == .created, "\(stored.text)")
            #expect(try stored.decode(MessageEnvelope.self).message.data?.json.utf8.count == APILimits.maxCustomDataBytes)
            let page = try await server.request(.get, path, as: "alice").decode(MessagePage.self)
            #expect(page.messages.map(\.seq) == [3, 2, 1])
            #expect(page.messages.last?.body == "first" && page.messages.last?.data == nil && page.messages.last?.editedAt == nil)
        }
    }

    @Test func conversationDataAndDescriptionRoundTripThroughCreatePatchAndList() async throws {
        try await TestServer.run { server in
            let data = try CustomData(["theme": .string("green"), "pinned": .array([.integer(1), .integer(4)])])
            let created = try await server.request(
                .post, "/v1/conversations", as: "alice",
                json: CreateConversationRequest(title: "Shop", members: ["bob"], description: "Orders and returns", data: data))
            #expect(created.status == .created, "\(created.text)")
            let conversation = try created.decode(Conversation.self)
            #expect(conversation.description == "Orders and returns" && conversation.data == data)

            let list = try await server.request(.get, "/v1/conversations", as: "bob").decode(ConversationList.self)
            #expect(list.conversations.map(\.description) == ["Orders and returns"])
            #expect(list.conversations.map(\.data) == [data])

            let path = "/v1/conversations/\(conversation.id)"
            // A member may not change them; the owner may.
            let refused = try await server.request(.patch, path, as: "bob", rawBody: #"{"description": "mine"}"#)
            #expect(refused.status == .forbidden)
            let patched = try await server.request(.patch, path, as: "alice", rawBody: #"{"description": "Returns only", "data": {"theme": "blue"}}"#)
            #expect(patched.status == .ok, "\(patched.text)")
            let updated = try patched.decode(Conversation.self)
            let blue = try CustomData(["theme": .string("blue")])
            #expect(updated.description == "Returns only" && updated.data == blue)
            #expect(updated.title == "Shop")
            // Leaving a field out keeps it; null removes it.
            let cleared = try await server.request(.patch, path, as: "alice", rawBody: #"{"data": null}"#)
                .decode(Conversation.self)
            #expect(cleared.data == nil && cleared.description == "Returns only")
            let shown = try await server.request(.get, path, as: "bob").decode(Conversation.self)
            #expect(shown.description == "Returns only" && shown.data == nil)

            let tooLong = String(repeating: "d", count: APILimits.maxDescriptionLength + 1)
            let badCases: [(String, APIErrorCode)] = [
                (#"{"description": "\#(tooLong)"}"#, .invalidDescription),
                (#"{"description": "a\u0000b"}"#, .invalidDescription),
                (#"{"data": [1]}"#, .invalidData),
                (#"{"data": {"a": {"b": {"c": {"d": {"e": 1}}}}}}"#, .invalidData),
            ]
            for (body, code) in badCases {
                let reply = try await server.request(.patch, path, as: "alice", rawBody: body)
                #expect(try reply.status == .unprocessableContent && reply.error().error.code == code, "\(body)")
                let create = try await server.request(.post, "/v1/conversations", as: "alice", rawBody: body)
                #expect(try create.status == .unprocessableContent && create.error().error.code == code, "\(body)")
            }
            let after = try await server.request(.get, "/v1/conversations", as: "alice").decode(ConversationList.self)
            #expect(after.conversations.count == 1 && after.conversations[0].description == "Returns only")
        }
    }

    /// Many clients edit one message's data at once: it ends with one of
    /// the values written, and each edit took its own version.
    @Test func concurrentEditsOfDataEndWithOneOfTheWrittenValues() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice")
            let path = "/v1/conversations/\(conversation.id)/messages"
            let first = try await server.request(.post, path, as: "alice", rawBody: #"{"body": "count", "data": {"n": 0}}"#)
                .decode(MessageEnvelope.self).message
            let writers = 24
            let versions = try await withThrowingTaskGroup(of: Int64.self) { group in
                for n in 1...writers {
                    group.addTask {
                        let reply = try await server.request(.patch, "\(path)/1", as: "alice", rawBody: #"{"data": {"n": \#(n)}}"#)
                        #expect(reply.status == .ok, "\(reply.text)")
                        return try reply.decode(MessageEnvelope.self).message.version
                    }
                }
                return try await group.reduce(into: [Int64]()) { $0.append($1) }
            }
            #expect(Set(versions).count == writers)
            let page = try await server.request(.get, path, as: "alice").decode(MessagePage.self)
            let message = try #require(page.messages.first)
            #expect(message.version == versions.max() && message.version == first.version + Int64(writers))
            #expect(page.version == message.version)
            guard case .integer(let n)? = message.data?.fields["n"] else {
                Issue.record("no data after the edits: \(String(describing: message.data))")
                return
            }
            #expect((1...Int64(writers)).contains(n))
        }
    }

    @Test func liveFramesCarryDataAndTypeOfSendsAndEdits() async throws {
        try await LiveCluster.run { cluster in
            let id = try await cluster.conversation("alice", members: ["bob"])
            let alice = try await cluster.connect("alice")
            let bob = try await cluster.connect("bob")
            try await cluster.subscribe(bob, to: id)
            let data = try CustomData(encoding: Self.order)
            try alice.send(.send(conversationId: id, body: "shipped", clientId: "o1", data: data, messageType: "order_status"))
            let ack = try await alice.next { if case .ack = $0 { true } else { $0.isError } }
            guard case .ack(_, let acked, _) = ack else {
                Issue.record("expected an ack, got \(ack)")
                return
            }
            #expect(acked.data == data && acked.type == "order_status")
            let delivered = try await bob.messages(1)
            #expect(delivered.map(\.data) == [data] && delivered.map(\.type) == ["order_status"])
            #expect(try delivered.first?.data(as: Order.self) == Self.order)

            // Bad data over the socket is an error frame naming the limit; nothing is sent.
            try alice.send(.send(conversationId: id, body: "x", clientId: "o2", messageType: "Bad Type"))
            let refused = try await alice.next { $0.isError }
            guard case .error(let code, _, _, _) = refused else { return }
            #expect(code == .invalidMessageType)

            let edited = try CustomData(["status": .string("delivered")])
            let patched = try await cluster.request(
                .PATCH, "/v1/conversations/\(id)/messages/1", as: "alice", body: #"{"data": {"status": "delivered"}}"#)
            #expect(patched.status == 200)
            let update = try await bob.next { if case .messageUpdated = $0 { true } else { false } }
            guard case .messageUpdated(let message) = update else { return }
            #expect(message.data == edited && message.body == "shipped" && message.type == "order_status")
            #expect(await bob.drain(for: .milliseconds(300)).compactMap(\.newMessage).isEmpty)
        }
    }

    @Test func webhooksCarryTheDataOfMessagesAndConversations() async throws {
        let receiver = WebhookReceiver()
        try await WebhookTests.run(receiver) { server in
            let conversationData = try CustomData(["shop": .string("north")])
            let conversation = try await server.request(
                .post, "/v1/conversations", as: "alice",
                json: CreateConversationRequest(title: "t", members: ["bob"], description: "About orders", data: conversationData)
            ).decode(Conversation.self)
            let data = try CustomData(encoding: Self.order)
            let sent = try await server.request(
                .post, "/v1/conversations/\(conversation.id)/messages", as: "alice",
                json: SendMessageRequest(body: "shipped", data: data, type: "order_status"))
            #expect(sent.status == .created)
            let memberData = try CustomData(["seat": .integer(7)])
            let patched = try await server.request(
                .patch, "/v1/conversations/\(conversation.id)/members/bob", as: "bob", rawBody: #"{"data": {"seat": 7}}"#)
            #expect(patched.status == .ok)
            let deliveries = try await receiver.wait("five events") { $0.count >= 5 }
            let events = try deliveries.map { try $0.event }
            let created = events.compactMap { event -> ConversationEventData? in
                if case .conversation(let conversation) = event.data { conversation } else { nil }
            }
            #expect(created.map(\.description) == ["About orders"] && created.map(\.data) == [conversationData])
            let messages = events.compactMap { event -> Message? in
                if case .message(let message) = event.data { message } else { nil }
            }
            #expect(messages.map(\.data) == [data] && messages.map(\.type) == ["order_status"])
            let updated = events.filter { $0.type == .memberUpdated }.compactMap { event -> MemberEventData? in
                if case .member(let member) = event.data { member } else { nil }
            }
            #expect(updated == [MemberEventData(userId: "bob", role: .member, data: memberData)])
        }
    }

    /// An import takes a conversation's description and data and each
    /// message's data and type; a user's export gives their messages' back.
    @Test func importAndExportCarryDataAndType() async throws {
        try await LiveCluster.run { cluster in
            let server = try await cluster.tokens.serverToken(named: "migration", ttl: 600)
            let id = UUID()
            let data = try CustomData(encoding: Self.order)
            var conversation = ImportLine.conversation(id, createdBy: "alice", title: "Old shop", createdAt: ImportAPITests.start)
            conversation.description = "Imported"
            conversation.data = try CustomData(["legacy": .bool(true)])
            var first = ImportLine.message("m-1", in: id, sender: "bob", body: "order", createdAt: ImportAPITests.start)
            first.data = data
            first.messageType = "order_status"
            let lines = [
                conversation, .member("alice", of: id, role: .owner), .member("bob", of: id), first,
                .message("m-2", in: id, sender: "alice", body: "thanks", createdAt: ImportAPITests.start.addingTimeInterval(60)),
            ]
            let reply = try await cluster.request(.POST, "/v1/admin/import", token: server, body: try ImportAPITests.ndjson(lines))
            #expect(reply.status == 200)
            #expect(try reply.decode(ImportReport.self).messages == 2)
            let page = try await cluster.request(.GET, "/v1/conversations/\(id)/messages", as: "bob").decode(MessagePage.self)
            #expect(page.messages.map(\.data) == [nil, data] && page.messages.map(\.type) == [nil, "order_status"])
            let shown = try await cluster.request(.GET, "/v1/conversations/\(id)", as: "bob").decode(Conversation.self)
            #expect(shown.description == "Imported" && shown.data == conversation.data)

            // A line with bad data is a problem of its line, naming the limit; nothing is stored.
            let other = UUID()
            let bad = [
                #"{"type": "conversation", "id": "\#(other)", "created_by": "alice"}"#,
                #"{"type": "message", "conversation_id": "\#(other)", "external_id": "b-1", "sender": "alice", "body": "x", "created_at": "2020-01-01T00:00:00Z", "data": [1]}"#,
                #"{"type": "message", "conversation_id": "\#(other)", "external_id": "b-2", "sender": "alice", "body": "x", "created_at": "2020-01-01T00:00:01Z", "message_type": "Not A Type"}"#,
            ].joined(separator: "\n")
            let refused = try await cluster.request(.POST, "/v1/admin/import", token: server, body: bad)
            let report = try refused.decode(ImportReport.self)
            #expect(report.problems.map(\.line) == [2, 3], "\(report)")
            #expect(report.problems.first?.message.contains("object") == true)
            #expect(try await cluster.store.values(Int64.self, "SELECT count(*) FROM conversations WHERE id = \(other)") == [0])

            let export = try await cluster.request(.GET, "/v1/admin/users/bob/export", token: server)
            let records = try PrivacyAPITests.lines(export)
            let exported = records.compactMap { if case .message(let m) = $0 { m } else { nil } }
            #expect(exported.map(\.data) == [data] && exported.map(\.type) == ["order_status"])
        }
    }

    /// A member sets their own membership's data; the owner or an admin
    /// anyone's; another member no one else's.
    @Test func memberDataIsSetByTheMemberOrTheOwnerAndListedWithTheMembers() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob", "carol"])
            let path = "/v1/conversations/\(conversation.id)/members"
            let own = try await server.request(.patch, "\(path)/bob", as: "bob", rawBody: #"{"data": {"nickname": "B"}}"#)
            #expect(own.status == .ok, "\(own.text)")
            #expect(try own.decode(MemberList.self).members.first { $0.userId == "bob" }?.data == CustomData(["nickname": .string("B")]))
            let other = try await server.request(.patch, "\(path)/carol", as: "bob", rawBody: #"{"data": {"nickname": "C"}}"#)
            #expect(other.status == .forbidden)
            let byOwner = try await server.request(.patch, "\(path)/carol", as: "alice", rawBody: #"{"data": {"seat": 3}}"#)
            #expect(byOwner.status == .ok, "\(byOwner.text)")
            let bad = try await server.request(.patch, "\(path)/bob", as: "bob", rawBody: #"{"data": ["x"]}"#)
            #expect(try bad.status == .unprocessableContent && bad.error().error.code == .invalidData)
            let members = try await server.request(.get, path, as: "carol").decode(MemberList.self).members
            #expect(members.map(\.userId) == ["alice", "bob", "carol"])
            #expect(try members.map(\.data) == [nil, CustomData(["nickname": .string("B")]), CustomData(["seat": .integer(3)])])
            #expect(members.map(\.role) == [.owner, .member, .member])
            let cleared = try await server.request(.patch, "\(path)/bob", as: "bob", rawBody: #"{"data": null}"#)
            #expect(try cleared.decode(MemberList.self).members.first { $0.userId == "bob" }?.data == nil)
            // Roles change as before, data kept.
            let promoted = try await server.request(.patch, "\(path)/carol", as: "alice", json: UpdateMemberRequest(role: .admin))
            #expect(try promoted.decode(MemberList.self).members.first { $0.userId == "carol" }.map { ($0.role, $0.data) }
                ?? (.member, nil) == (.admin, CustomData(["seat": .integer(3)])))
        }
    }
}
