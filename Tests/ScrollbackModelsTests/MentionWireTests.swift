import Foundation
import ScrollbackModels
import Testing

/// `unread_mentions` is new: what a server from before it sends still decodes, as 0.
@Suite struct MentionWireTests {
    static func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try ScrollbackJSON.decoder().decode(T.self, from: Data(json.utf8))
    }

    @Test func unreadMentionsMayBeAbsent() throws {
        let conversation = try Self.decode(
            Conversation.self,
            #"{"id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","title":null,"created_by":"bob","created_at":"2026-11-21T18:00:00.000Z","last_seq":0,"members":["bob"],"read_seq":0,"unread_count":0}"#
        )
        #expect(conversation.unreadMentions == 0)
        let marker = try Self.decode(
            ReadMarker.self, #"{"conversation_id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","read_seq":4,"unread_count":1}"#)
        #expect(marker.unreadMentions == 0 && marker.unreadCount == 1)
        let read = try Self.decode(
            ServerFrame.self,
            #"{"conversation_id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","cursor":"7","seq":2,"type":"read","unread_count":0,"user_id":"alice"}"#
        )
        #expect(
            read
                == .inboxRead(
                    conversationId: UUID(uuidString: "6f9619ff-8b86-d011-b42d-00c04fc964ff")!, userId: "alice", seq: 2,
                    unreadCount: 0, unreadMentions: 0, cursor: "7"))
        let activity = try Self.decode(
            ServerFrame.self,
            #"{"activity":1,"conversation_id":"6f9619ff-8b86-d011-b42d-00c04fc964ff","cursor":"7","last_message":null,"last_seq":0,"read_seq":0,"type":"conversation_activity","unread_count":0,"version":0}"#
        )
        guard case .conversationActivity(let line, _) = activity else {
            Issue.record("expected conversation_activity")
            return
        }
        #expect(line.unreadMentions == 0)
    }
}
