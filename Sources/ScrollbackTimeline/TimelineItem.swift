import Foundation
import ScrollbackLayout
import ScrollbackModels

/// One row of a conversation's timeline: a stored message, or a message this
/// client is sending (its local echo) until the server acknowledges it.
public struct TimelineItem: Sendable, Equatable, Identifiable {
    /// A row's identity for a list's diffing. It stays the same for the whole
    /// life of the row: a local echo that becomes a stored message keeps its
    /// `local` id, so the list updates the row in place instead of replacing it.
    public enum ID: Hashable, Sendable {
        case seq(Int64)
        case local(clientId: String)
    }

    public enum State: Sendable, Equatable {
        /// Stored by the server.
        case stored(Message)
        /// Sent, not acknowledged yet.
        case sending(PendingSend)
        /// The send failed; `reason` says why (retry with the same `clientId`).
        case failed(PendingSend, reason: String)
    }

    public let id: ID
    public var state: State

    public init(id: ID, state: State) {
        self.id = id
        self.state = state
    }

    /// The stored message; nil for a local echo.
    public var message: Message? {
        if case .stored(let message) = state { message } else { nil }
    }

    public var seq: Int64? { message?.seq }

    /// The send of a local echo (sending or failed); nil for a stored message.
    public var pendingSend: PendingSend? {
        switch state {
        case .stored: nil
        case .sending(let send), .failed(let send, _): send
        }
    }

    /// The `client_id` of a local echo, or of a stored message sent with one.
    public var clientId: String? { message?.clientId ?? pendingSend?.clientId }

    /// What the row shows.
    public var body: String { message?.body ?? pendingSend?.body ?? "" }

    /// The files the row shows, in order, with the pixel sizes of pictures.
    public var attachments: [Attachment] { message?.attachments ?? pendingSend?.attachments ?? [] }

    /// What the row's estimated height is made of: its text and its
    /// attachments, or one line of "Message deleted" for a deleted message.
    /// ``TimelineLayoutSettings/estimate(_:)`` sizes it.
    public var layoutMessage: LayoutMessage {
        if message?.deleted == true { return LayoutMessage(text: "Message deleted") }
        return LayoutMessage(text: body, attachments: attachments.map(LayoutAttachment.init))
    }

    public var isPending: Bool { message == nil }

    /// A system message (`Message.isSystem`): the operator's notice, sent
    /// by no member. A chat screen shows it apart (centered, without a
    /// sender, an avatar or a bubble) and offers no edit.
    public var isSystem: Bool { message?.isSystem ?? false }
}

/// A message on its way to the server.
public struct PendingSend: Sendable, Equatable {
    public var clientId: String
    public var body: String
    public var sender: String
    /// The uploads it sends, as their completed uploads described them
    /// (``UploadProgress/attachment``), so the echo is as tall as the message.
    public var attachments: [Attachment]

    public init(clientId: String, body: String, sender: String, attachments: [Attachment] = []) {
        self.clientId = clientId
        self.body = body
        self.sender = sender
        self.attachments = attachments
    }
}

extension LayoutAttachment {
    /// How the height model sees an attachment.
    init(_ attachment: Attachment) {
        self.init(kindName: attachment.kind.rawValue, pixelWidth: attachment.width, pixelHeight: attachment.height)
    }
}
