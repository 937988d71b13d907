import Foundation
import ScrollbackModels
import Testing

@testable import scrollback

/// What `scrollback chat` prints for messages with attachments.
@Suite struct ChatLinesTests {
    static let conversation = UUID()

    static func message(_ body: String, attachments: [ScrollbackModels.Attachment], deleted: Bool = false) -> Message {
        Message(
            conversationId: conversation, seq: 7, sender: "alice", body: body, clientId: nil,
            createdAt: Date(timeIntervalSince1970: 1_780_000_000), version: 7, deleted: deleted,
            attachments: attachments)
    }

    static let photo = ScrollbackModels.Attachment(
        id: UUID(), kind: .image, contentType: "image/png", size: 29, filename: "cat.png", width: 640, height: 480,
        url: "/v1/x")
    static let notes = ScrollbackModels.Attachment(
        id: UUID(), kind: .file, contentType: "application/pdf", size: 2048, filename: "notes.pdf", url: "/v1/y")

    @Test func eachAttachmentIsALineUnderItsMessage() {
        let lines = ConversationPrinter.line(Self.message("look", attachments: [Self.photo, Self.notes]))
            .split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].hasSuffix("alice: look"))
        #expect(lines[1] == "      [image] cat.png, 640×480, image/png, 29 bytes")
        #expect(lines[2] == "      [file] notes.pdf, application/pdf, 2048 bytes")
        // A message that is only a photo still says who sent what.
        #expect(ConversationPrinter.line(Self.message("", attachments: [Self.photo])).contains("[image] cat.png"))
    }

    /// A message of a user the reader blocked shows folded, with who sent it.
    @Test func aBlockedSendersMessageShowsFolded() {
        var message = Self.message("buy cheap watches", attachments: [])
        message.blockedSender = true
        let line = ConversationPrinter.line(message)
        #expect(line.hasSuffix("alice: (hidden: you blocked alice)"))
        #expect(!line.contains("watches"))
    }

    /// `/dm` and `/block` take the rest of the line: a user id may hold spaces.
    @Test func aCommandsUserIsTheRestOfTheLine() {
        #expect(Chat.rest(of: "/dm a user: with spaces") == "a user: with spaces")
        #expect(Chat.rest(of: "/block   auth0|5f7c8ec7c33c6c004bbafe82  ") == "auth0|5f7c8ec7c33c6c004bbafe82")
        #expect(Chat.rest(of: "/dm") == nil && Chat.rest(of: "/dm   ") == nil)
    }
}
