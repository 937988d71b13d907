import Foundation
import ScrollbackModels
import Testing

/// Every wire type against a hand-written fixture: encoding the fixed value
/// with the wire encoder gives the fixture byte for byte, and decoding the
/// fixture gives the value back. A field left out of a hand-written
/// `encode(to:)`, a renamed key or a changed timestamp format fails here
/// before a client notices.
@Suite struct GoldenFixtureTests {
    @Test(arguments: Golden.all)
    func encodingGivesTheFixtureAndDecodingGivesTheValueBack(_ golden: Golden) throws {
        let fixture = try Golden.fixture(named: golden.name)
        let encoded = try golden.encode()
        #expect(
            encoded == fixture,
            "encoded:\n\(String(decoding: encoded, as: UTF8.self))\nfixture:\n\(String(decoding: fixture, as: UTF8.self))")
        #expect(try golden.decodesToTheValue(fixture))
        if let written = golden.written {
            #expect(
                written == fixture,
                "written:\n\(String(decoding: written, as: UTF8.self))\nfixture:\n\(String(decoding: fixture, as: UTF8.self))")
        }
    }

    /// The types the server writes directly are all among the fixtures.
    @Test func everyDirectlyWrittenTypeHasAFixture() {
        let written = Set(Golden.all.filter { $0.written != nil }.map(\.typeName))
        #expect(
            written == [
                "Message", "MessageEnvelope", "MessagePage", "ChangeSet", "Conversation", "ConversationList",
                "ReadMarker", "APIErrorBody", "PageLayoutHints", "ServerFrame", "MentionPage", "ThreadPage",
            ])
    }

    @Test func everyFixtureFileHasAGoldenValue() throws {
        let directory = try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil))
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }
            .map { String($0.dropLast(".json".count)) }
        #expect(Set(files) == Set(Golden.all.map(\.name)))
        #expect(Golden.all.count == Set(Golden.all.map(\.name)).count, "two golden values share a fixture")
    }
}

/// One fixed value of a wire type and the fixture it must encode to.
struct Golden: Sendable, CustomTestStringConvertible {
    let name: String
    let encode: @Sendable () throws -> Data
    let decodesToTheValue: @Sendable (Data) throws -> Bool
    /// The value's JSON from its own writer, for the types that have one.
    let written: Data?
    let typeName: String

    init<Value: Codable & Equatable & Sendable>(_ name: String, _ value: Value) {
        self.name = name
        self.encode = { try ScrollbackJSON.encoder().encode(value) }
        self.decodesToTheValue = { try ScrollbackJSON.decoder().decode(Value.self, from: $0) == value }
        self.written = (value as? any JSONWritable).map { Data($0.jsonBytes) }
        self.typeName = "\(Value.self)"
    }

    var testDescription: String { name }

    static func fixture(named name: String) throws -> Data {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"),
            "no fixture \(name).json")
        return try Data(contentsOf: url)
    }

    static let all: [Golden] = [
        Golden("message", Values.message),
        Golden("mute_state", MuteState(conversationId: Values.conversationID, muted: true, mutedUntil: Values.createdAt)),
        Golden("conversation_presence", ConversationPresence(members: [
            MemberPresence(userId: "alice", online: true, lastSeenAt: nil),
            MemberPresence(userId: "bob", online: false, lastSeenAt: Values.createdAt),
        ])),
        Golden("webhook_event_message", WebhookEvent(
            id: "41", type: .messageCreated, createdAt: Values.createdAt, conversationId: Values.conversationID,
            version: 44, seq: 42, data: .message(Values.message))),
        Golden("webhook_event_read", WebhookEvent(
            id: "42", type: .readMoved, createdAt: Values.createdAt, conversationId: Values.conversationID,
            version: nil, seq: 40, data: .member(MemberEventData(userId: "bob", readSeq: 40)))),
        Golden("push_notification", PushNotification(
            id: "41:bob", eventId: "41", type: .message, userId: "bob",
            devices: [PushDevice(deviceId: "iphone-1", platform: .apns, token: "a1b2c3")],
            conversationId: Values.conversationID, seq: 42, sender: "alice", excerpt: "On my way", mention: false,
            attachments: 0, counts: UnreadCounts(unreadMessages: 3, unreadConversations: 2))),
        Golden("message_deleted", Values.deletedMessage),
        Golden("message_reply", Values.reply),
        Golden("message_thread_root", Values.threadRoot),
        Golden("thread_page", ThreadPage(
            root: Values.threadRoot, messages: [Values.reply], hasOlder: false, hasNewer: true, version: 47,
            users: ProfileSet([Values.alice, .bare("bob")]))),
        Golden("send_message_request_reply", SendMessageRequest(body: "On my way", clientId: "c-7f3a", replyTo: 40)),
        Golden("client_frame_send_reply", ClientFrame.send(conversationId: Values.conversationID, body: "On my way", clientId: "c-7f3a", replyTo: 40)),
        Golden("message_envelope", MessageEnvelope(message: Values.message)),
        Golden("message_page", Values.page),
        Golden("message_page_with_layout", Values.pageWithLayout),
        Golden("user_envelope", UserEnvelope(user: Values.alice)),
        Golden("user_list", UserList(users: [Values.alice, .bare("bob")], nextCursor: "dTphbGljZR9hbGljZQ")),
        Golden("user_list_last_page", UserList(users: [])),
        Golden(
            "set_profile_request",
            SetProfileRequest(displayName: "Alice Liddell", avatar: Values.alice.avatar, data: Values.alice.data)),
        Golden("server_frame_user_updated", ServerFrame.userUpdated(Values.alice)),
        Golden(
            "server_frame_conversation_updated",
            ServerFrame.conversationUpdated(
                ConversationDetails(
                    conversationId: Values.conversationID, title: "Lunch", description: nil,
                    image: ProfileImage(url: "https://cdn.example/lunch.png", width: 64, height: 48, blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj"),
                    data: try! CustomData(json: Array(#"{"venue":7}"#.utf8)), slowModeSeconds: 30, detailsVersion: 4),
                cursor: nil)),
        Golden(
            "server_frame_conversation_updated_inbox",
            ServerFrame.conversationUpdated(
                ConversationDetails(conversationId: Values.conversationID, title: nil, detailsVersion: 5), cursor: "4711")),
        Golden("page_layout_hints", Values.hints),
        Golden("change_set", ChangeSet(
            messages: [Values.deletedMessage, Values.message], hasMore: true, version: 9,
            users: ProfileSet([Values.alice, .bare("bob")]))),
        Golden("conversation", Values.conversation),
        Golden("conversation_empty", Values.emptyConversation),
        Golden(
            "conversation_list",
            ConversationList(conversations: [Values.conversation, Values.emptyConversation], nextCursor: "YToxMg")),
        Golden(
            "conversation_list_last_page", ConversationList(conversations: [], nextCursor: nil, activityChanged: true)),
        Golden(
            "read_marker",
            ReadMarker(conversationId: Values.conversationID, readSeq: 41, unreadCount: 1, unreadMentions: 1)),
        Golden(
            "mention_page",
            MentionPage(
                mentions: [Mention(conversationId: Values.conversationID, seq: 42, message: Values.message, read: false)],
                next: "bToxMDI0")),
        Golden("mention_page_last", MentionPage(mentions: [], next: nil)),
        Golden("send_message_request", SendMessageRequest(body: "On my way", clientId: "c-7f3a")),
        Golden("send_message_request_without_client_id", SendMessageRequest(body: "On my way")),
        Golden("edit_message_request", EditMessageRequest(body: "On my way!")),
        Golden("create_conversation_request", CreateConversationRequest(title: "Trip", members: ["bob", "carol"])),
        Golden("create_conversation_request_empty", CreateConversationRequest()),
        Golden("add_member_request", AddMemberRequest(userId: "dave@example.com")),
        Golden("read_marker_request", ReadMarkerRequest(seq: 41)),
        Golden("layout_request", Values.layoutRequest),
        Golden("layout_request_minimal", LayoutRequest(viewportHeight: 640, itemHeights: [100, 50])),
        Golden("layout_request_items", Values.layoutRequestItems),
        Golden("layout_response", Values.layoutResponse),
        Golden("layout_response_without_visible", Values.layoutResponseWithoutVisible),
        Golden("search_results", Values.searchResults),
        Golden("search_results_last_page", SearchResults(hits: [], next: nil)),
        Golden("api_error_body", APIErrorBody(code: .conversationNotFound, message: "No conversation with this id.")),
        // The live stream's frames, both ways.
        Golden("client_frame_auth", ClientFrame.auth(token: "eyJhbGciOiJIUzI1NiJ9.e30.sig")),
        Golden("client_frame_subscribe", ClientFrame.subscribe(conversationId: Values.conversationID, afterSeq: 41)),
        Golden("client_frame_subscribe_live", ClientFrame.subscribe(conversationId: Values.conversationID, afterSeq: nil)),
        Golden(
            "client_frame_subscribe_with_presence",
            ClientFrame.subscribe(conversationId: Values.conversationID, afterSeq: 41, presence: true)),
        Golden("client_frame_unsubscribe", ClientFrame.unsubscribe(conversationId: Values.conversationID)),
        Golden(
            "client_frame_send",
            ClientFrame.send(conversationId: Values.conversationID, body: "On my way", clientId: "c-7f3a")),
        Golden("client_frame_read", ClientFrame.read(conversationId: Values.conversationID, seq: 41)),
        Golden("client_frame_typing", ClientFrame.typing(conversationId: Values.conversationID)),
        Golden("client_frame_subscribe_inbox", ClientFrame.subscribeInbox(after: "1048576")),
        Golden("client_frame_subscribe_inbox_live", ClientFrame.subscribeInbox(after: nil)),
        Golden("client_frame_unsubscribe_inbox", ClientFrame.unsubscribeInbox),
        Golden("client_frame_ping", ClientFrame.ping),
        Golden(
            "server_frame_subscribed", ServerFrame.subscribed(conversationId: Values.conversationID, lastSeq: 42, version: 44)),
        Golden("server_frame_message", ServerFrame.message(Values.message)),
        Golden("server_frame_message_updated", ServerFrame.messageUpdated(Values.deletedMessage)),
        Golden("server_frame_ack", ServerFrame.ack(clientId: "c-7f3a", message: Values.message, replayed: false)),
        Golden("server_frame_read", ServerFrame.read(conversationId: Values.conversationID, userId: "bob", seq: 41)),
        Golden("server_frame_typing", ServerFrame.typing(conversationId: Values.conversationID, userId: "bob")),
        Golden("server_frame_member_removed", ServerFrame.memberRemoved(conversationId: Values.conversationID)),
        Golden(
            "server_frame_member_updated",
            ServerFrame.memberUpdated(conversationId: Values.conversationID, userId: "bob", role: .admin)),
        Golden(
            "member_list",
            MemberList(members: [
                ConversationMember(userId: "alice", role: .owner), ConversationMember(userId: "bob", role: .admin),
                ConversationMember(userId: "carol", role: .member),
            ])),
        Golden("update_member_request", UpdateMemberRequest(role: .owner)),
        Golden("update_conversation_request", UpdateConversationRequest(title: .some(nil), slowModeSeconds: 30)),
        Golden(
            "ban_list",
            BanList(bans: [
                Ban(userId: "mallory", bannedBy: "alice", bannedAt: Values.createdAt, until: nil),
                Ban(userId: "trent", bannedBy: "bob", bannedAt: Values.sentAt, until: Values.editedAt),
            ])),
        Golden(
            "server_frame_presence_online",
            ServerFrame.presence(
                conversationId: Values.conversationID, MemberPresence(userId: "bob", online: true, lastSeenAt: nil))),
        Golden(
            "server_frame_presence_offline",
            ServerFrame.presence(
                conversationId: Values.conversationID,
                MemberPresence(userId: "bob", online: false, lastSeenAt: Values.editedAt))),
        Golden(
            "server_frame_error",
            ServerFrame.error(code: .idempotencyConflict, message: "This client_id was already used.", ref: "c-7f3a")),
        Golden(
            "server_frame_error_without_ref",
            ServerFrame.error(code: .unknownFrameType, message: "Unknown frame type.", ref: nil)),
        Golden(
            "server_frame_error_rate_limited",
            ServerFrame.error(
                code: .rateLimited, message: "You are sending too fast: retry in 2 s.", ref: "c-7f3a", retryAfter: 2)),
        Golden(
            "server_frame_resync_required", ServerFrame.resyncRequired(conversationId: Values.conversationID, lastSeq: 1042)),
        Golden("server_frame_inbox_subscribed", ServerFrame.inboxSubscribed(cursor: "1048576")),
        Golden(
            "server_frame_conversation_activity",
            ServerFrame.conversationActivity(InboxActivity(Values.conversation), cursor: "1048576")),
        Golden("server_frame_member_added", ServerFrame.memberAdded(Values.emptyConversation, cursor: "1048576")),
        Golden(
            "server_frame_inbox_read",
            ServerFrame.inboxRead(
                conversationId: Values.conversationID, userId: "alice", seq: 42, unreadCount: 0, cursor: "1048576")),
        Golden(
            "server_frame_inbox_member_removed",
            ServerFrame.inboxMemberRemoved(conversationId: Values.conversationID, cursor: "1048576")),
        Golden("server_frame_inbox_resync_required", ServerFrame.inboxResyncRequired(cursor: "1048576")),
        Golden("server_frame_pong", ServerFrame.pong),
    ]
}

/// The fixed values behind the fixtures.
enum Values {
    static let conversationID = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!
    /// 2026-11-22T05:36:39.125Z: whole milliseconds that a Double holds exactly.
    static let sentAt = Date(timeIntervalSince1970: 1_795_325_799.125)
    /// 2026-11-22T05:40:00.500Z
    static let editedAt = Date(timeIntervalSince1970: 1_795_326_000.5)
    /// 2026-11-21T18:00:00.000Z
    static let createdAt = Date(timeIntervalSince1970: 1_795_284_000)

    static let message = Message(
        conversationId: conversationID, seq: 42, sender: "alice", body: "On my way", clientId: "c-7f3a",
        createdAt: sentAt, version: 44, editedAt: editedAt, deleted: false)
    /// A reply whose parent was deleted, with reactions.
    static let reply = Message(
        conversationId: conversationID, seq: 43, sender: "carol", body: "See you there 🎉", clientId: "c-9b1e",
        createdAt: sentAt, version: 45, replyTo: ReplyPreview(seq: 40, sender: "bob", excerpt: nil, deleted: true),
        threadRoot: 40,
        reactions: [ReactionSummary(emoji: "👍🏽", count: 2, me: true), ReactionSummary(emoji: "❤️", count: 1, me: false)])
    /// A message that started a thread.
    static let threadRoot = Message(
        conversationId: conversationID, seq: 40, sender: "bob", body: "Lunch at noon?", clientId: nil,
        createdAt: sentAt, version: 47,
        thread: ThreadSummary(replyCount: 3, lastReplyAt: editedAt, participants: ["carol", "alice"]))
    static let deletedMessage = Message(
        conversationId: conversationID, seq: 41, sender: "bob", body: "", clientId: nil, createdAt: sentAt,
        version: 43, editedAt: nil, deleted: true)

    static let alice = UserProfile(
        id: "alice", displayName: "Alice Liddell",
        avatar: ProfileImage(
            url: "https://cdn.example/alice.jpg", width: 256, height: 256, blurhash: "LEHV6nWB2yk8pyo0adR*.7kCMdnj"),
        data: try! CustomData(["plan": .string("pro"), "team": .integer(12)]), version: 7)
    static let page = MessagePage(
        messages: [message, deletedMessage], hasOlder: true, hasNewer: false, lastSeq: 42, version: 44,
        users: ProfileSet([alice, .bare("bob")]))
    static let hints = PageLayoutHints(
        viewportHeight: 640, viewportWidth: 390, itemHeights: [38, 60], contentHeight: 106, bottomPadding: 534,
        metrics: PageLayoutHints.Metrics(
            fontSize: 17, lineHeight: 22, averageCharacterWidth: 8.5, horizontalPadding: 12, verticalPadding: 8,
            maxWidthFraction: 0.75, maxAttachmentHeight: 320, attachmentRowHeight: 56, attachmentSpacing: 4, spacing: 8))
    static let pageWithLayout = MessagePage(
        messages: [message, deletedMessage], hasOlder: true, hasNewer: false, lastSeq: 42, version: 44, layout: hints)

    static let conversation = Conversation(
        id: conversationID, title: "Trip", createdBy: "alice", createdAt: createdAt, lastSeq: 42,
        members: ["alice", "bob"], readSeq: 40, unreadCount: 1, unreadMentions: 1, lastMessage: message, version: 44,
        activity: 9120, muted: true, mutedUntil: createdAt)
    static let emptyConversation = Conversation(
        id: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!, title: nil, createdBy: "bob",
        createdAt: createdAt, lastSeq: 0, members: ["bob"], activity: 9118)

    static let searchResults = SearchResults(
        hits: [
            SearchHit(
                conversationId: conversationID, seq: 42, message: message,
                snippet: SearchSnippet(text: "On my way", highlights: [SearchHighlight(start: 6, length: 3)]))
        ],
        next: "czo2Zjk2MTlmZi04Yjg2LWQwMTEtYjQyZC0wMGMwNGZjOTY0ZmY6NDI")

    static let layoutRequest = LayoutRequest(
        viewportHeight: 640, itemHeights: [100, 50.5], spacing: 10, topInset: 4, bottomInset: 6, scrollOffset: 0,
        prefetchThreshold: 320)
    static let layoutRequestItems = LayoutRequest(
        viewportHeight: 640,
        items: [
            .init(text: "Look!", attachments: [.init(kind: .image, width: 1200, height: 900), .init(kind: .file)]),
            .init(text: "On my way"),
        ],
        viewportWidth: 390, metrics: ["line_height": 20, "max_attachment_height": 300], spacing: 8)
    static let layoutResponse = LayoutResponse(
        contentHeight: 160, bottomPadding: 480, isScrollable: false,
        items: [
            .init(index: 0, offsetFromBottom: 480, offsetFromTop: 60, height: 100),
            .init(index: 1, offsetFromBottom: 590, offsetFromTop: 0, height: 50),
        ],
        visible: .init(first: 0, last: 1), loadOlder: true)
    static let layoutResponseWithoutVisible = LayoutResponse(
        contentHeight: 0, bottomPadding: 640, isScrollable: false, items: [], visible: nil, loadOlder: false)
}
