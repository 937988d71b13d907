import Foundation
import ScrollbackModels
import ScrollbackTimeline

extension Inbox {
    /// The users rows of the list name: each last sender, and both members
    /// of each one-to-one (the viewer among them: an inbox does not know
    /// who it is for, and their own profile costs one entry).
    static func namedUsers(_ rows: [Conversation]) -> [String] {
        // No member has the empty id, so nobody is taken for the viewer.
        ConversationList.namedUsers(rows, viewer: UserID(rawValue: "")).map(\.rawValue)
    }
}

extension TimelineItem {
    /// The user who wrote the row: a message's sender ("" for the
    /// system), or the sender of a local echo.
    public var senderId: String {
        switch state {
        case .stored(let message): message.sender
        case .sending(let send), .failed(let send, _): send.sender
        }
    }

    /// The users the rows name: each sender and each sender of a message
    /// replied to (the system is no one).
    static func namedUsers(_ items: [TimelineItem]) -> Set<String> {
        Set(Message.namedUsers(items.lazy.map { ($0.senderId, $0.message?.replyTo?.sender) }).map(\.rawValue))
    }
}
