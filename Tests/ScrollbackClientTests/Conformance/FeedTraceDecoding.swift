import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTimeline

/// Reads a trace's events back, as a replaying client does.
extension FeedTrace {
    static func opening(from json: JSON) throws -> ConversationFeed.Opening {
        switch json.type {
        case "newest": return .newest
        case "message": return .message(try json.required("seq").int64 ?? 0)
        case "first_unread": return .firstUnread
        default: throw TraceError.unknown("opening", json)
        }
    }

    static func error(from json: JSON) throws -> ScrollbackError? {
        guard !json.isNull else { return nil }
        let message = json["message"].string ?? ""
        let code = APIErrorCode(rawValue: json["code"].string ?? "")
        switch json["kind"].string {
        case "unauthorized": return .unauthorized(message: message)
        case "forbidden": return .forbidden(code: code, message: message)
        case "not_found": return .notFound(code: code, message: message)
        case "conflict": return .conflict(code: code, message: message)
        case "invalid_input": return .invalidInput(code: code, message: message)
        case "rate_limited": return .rateLimited(code: code, retryAfter: json["retry_after"].double, message: message)
        case "unavailable": return .unavailable(code: code, retryAfter: json["retry_after"].double, message: message)
        case "server":
            return .server(status: json["status"].int ?? 500, code: json["code"].string.map(APIErrorCode.init), message: message)
        case "transport": return .transport(message: message)
        case "undecodable": return .undecodable(message: message)
        case "cancelled": return .cancelled
        default: throw TraceError.unknown("error", json)
        }
    }

    static func change(from json: JSON) throws -> MessageChange? {
        guard !json.isNull else { return nil }
        let seq = try json.required("seq").int64 ?? 0
        switch json.type {
        case "edit": return .edit(seq: seq, body: json["body"].string ?? "")
        case "delete": return .delete(seq: seq)
        case "react": return .react(seq: seq, emoji: json["emoji"].string ?? "")
        case "unreact": return .unreact(seq: seq, emoji: json["emoji"].string ?? "")
        default: throw TraceError.unknown("change", json)
        }
    }

    static func entry(from json: JSON, in conversation: UUID) throws -> OutboxEntry {
        OutboxEntry(
            conversationId: conversation, clientId: try json.required("client_id").string ?? "",
            sender: json["sender"].string ?? "", body: json["body"].string ?? "",
            attachments: try json["attachments"].array.map { try $0.wire(Attachment.self) },
            failure: json["failure"].string, change: try change(from: json["change"]))
    }

    static func window(from json: JSON) throws -> StoredWindow? {
        guard !json.isNull else { return nil }
        return StoredWindow(
            messages: try json["messages"].array.map { try $0.wire(Message.self) },
            version: try json.required("version").int64 ?? 0, lastSeq: try json.required("last_seq").int64 ?? 0,
            hasOlder: json["has_older"].bool ?? false, readSeqs: json["read_seqs"].object.compactMapValues(\.int64))
    }

    static func request(from json: JSON) throws -> TimelineEffect {
        switch json.type {
        case "older": return .loadOlder(before: try json.required("before").int64 ?? 0)
        case "newer": return .loadNewer(after: try json.required("after").int64 ?? 0)
        case "changes": return .catchUp(sinceVersion: try json.required("since_version").int64 ?? 0)
        case "fill_gap":
            return .fillGap(after: try json.required("after").int64 ?? 0, through: try json.required("through").int64 ?? 0)
        default: throw TraceError.unknown("request", json)
        }
    }

    /// An answer: its value, or its error; nil when it was cancelled.
    static func answer<Value>(from json: JSON, _ value: (JSON) throws -> Value) throws -> Result<Value, ScrollbackError>? {
        guard !json.isNull else { return nil }
        if !json["error"].isNull, let failure = try error(from: json["error"]) { return .failure(failure) }
        return .success(try value(json))
    }

    static func sendResult(from json: JSON) throws -> ScrollbackClient.SendResult {
        ScrollbackClient.SendResult(
            message: try json.required("message").wire(Message.self), replayed: json["replayed"].bool ?? false)
    }

    static func timer(from json: JSON) throws -> LiveProtocol.Timer {
        let attempt = try json.required("attempt").int ?? 0
        switch json.type {
        case "subscribe_deadline": return .subscribeDeadline(attempt: attempt)
        case "reconnect": return .reconnect(attempt: attempt)
        default: throw TraceError.unknown("timer", json)
        }
    }

    static func input(from json: JSON) throws -> LiveProtocol.Input {
        switch json.type {
        case "start": return .start
        case "opened": return .opened
        case "frame": return .received(try json.required("frame").wire(ServerFrame.self))
        case "page": return .pageReceived(try json.required("page").wire(MessagePage.self))
        case "changes": return .changesReceived(try json.required("changes").wire(ChangeSet.self))
        case "fetch_failed": return .fetchFailed(try error(from: json["error"]) ?? .cancelled)
        case "closed": return .closed(code: json["code"].int, reason: json["reason"].string)
        case "failed": return .failed(reason: json["reason"].string ?? "")
        case "token_unavailable": return .tokenUnavailable(reason: json["reason"].string ?? "")
        case "timer": return .timerFired(try timer(from: json.required("timer")))
        case "network_available": return .networkAvailable
        case "backgrounded": return .backgrounded
        case "foregrounded": return .foregrounded
        case "cancel": return .cancel
        default: throw TraceError.unknown("socket input", json)
        }
    }

    static func liveEvent(from json: JSON) throws -> LiveEvent {
        let user = json["user_id"].string ?? ""
        switch json.type {
        case "message": return .message(try json.required("message").wire(Message.self))
        case "updated": return .updated(try json.required("message").wire(Message.self))
        case "read": return .read(userId: user, seq: try json.required("seq").int64 ?? 0)
        case "typing": return .typing(userId: user)
        case "presence": return .presence(try json.required("presence").wire(MemberPresence.self))
        case "member_updated":
            guard let role = MemberRole(rawValue: json["role"].string ?? "") else { throw TraceError.unknown("role", json) }
            return .memberUpdated(userId: user, role: role)
        case "connected":
            return .connected(lastSeq: try json.required("last_seq").int64 ?? 0, version: try json.required("version").int64 ?? 0)
        case "disconnected": return .disconnected(reason: json["reason"].string ?? "")
        case "member_removed": return .memberRemoved
        default: throw TraceError.unknown("live event", json)
        }
    }

    /// An event of a trace; `pendingWrites` are the storage calls asked for
    /// and not answered yet, oldest first (a `stored` event answers the oldest).
    static func event(from json: JSON, in conversation: UUID, pendingWrites: inout [StorageWrite]) throws -> FeedEvent {
        let clientId = json["client_id"].string ?? ""
        switch json.type {
        case "start": return .start(try opening(from: json.required("opening")))
        case "jump": return .jump(try opening(from: json.required("opening")))
        case "scrolled": return .view(.scrolled(offsetFromBottom: try json.required("offset_from_bottom").double ?? 0))
        case "viewport_resized": return .view(.viewportResized(height: try json.required("height").double ?? 0))
        case "height_measured":
            let id: TimelineItem.ID = json["seq"].int64.map { .seq($0) } ?? .local(clientId: clientId)
            return .view(.heightMeasured(id, try json.required("height").double ?? 0))
        case "load_older": return .loadOlder
        case "load_newer": return .loadNewer
        case "send":
            return .send(
                PendingSend(
                    clientId: clientId, body: json["body"].string ?? "", sender: json["sender"].string ?? "",
                    attachments: try json["attachments"].array.map { try $0.wire(Attachment.self) }))
        case "change":
            guard let what = try change(from: json["change"]) else { throw TraceError.missing("change", in: json) }
            return .change(what, clientId: clientId)
        case "retry": return .retry(clientId: clientId)
        case "discard": return .discard(clientId: clientId)
        case "marked_read": return .markedRead(try json.required("marker").wire(ReadMarker.self))
        case "stop": return .stop
        case "restored":
            return .restored(
                try opening(from: json.required("opening")), window: try window(from: json["window"]),
                outbox: try json["outbox"].array.map { try entry(from: $0, in: conversation) }, failure: json["failure"].string)
        case "stored":
            guard !pendingWrites.isEmpty else { throw TraceError(description: "a stored event with no write asked for") }
            return .stored(pendingWrites.removeFirst(), failure: json["failure"].string)
        case "opened":
            let first = try answer(from: json["answer"]) { answer in
                FirstPage(
                    page: try answer.required("page").wire(MessagePage.self), focus: answer["focus"].int64,
                    firstUnread: answer["first_unread"].int64, readSeq: answer["read_seq"].int64)
            }
            return .opened(
                try opening(from: json.required("opening")), jump: json["jump"].int ?? 0,
                initial: json["initial"].bool ?? false, first)
        case "marker_read":
            return .markerRead(
                try json.required("conversation").wire(Conversation.self), try opening(from: json.required("opening")))
        case "fetched":
            let fetched = try answer(from: json["answer"]) { answer -> TimelineAction in
                if !answer["changes"].isNull { return .changesApplied(try answer["changes"].wire(ChangeSet.self)) }
                return .pageLoaded(try answer.required("page").wire(MessagePage.self))
            }
            return .fetched(try request(from: json.required("request")), window: json["window"].int ?? 0, fetched)
        case "filled":
            let page = try answer(from: json["answer"]) { try $0.required("page").wire(MessagePage.self) }
            return .filled(
                fill: json["fill"].int ?? 0, after: try json.required("after").int64 ?? 0, window: json["window"].int ?? 0, page)
        case "presence_read":
            let members = try answer(from: json["answer"]) { try $0.required("members").wire([MemberPresence].self) }
            return .presenceRead(read: json["read"].int ?? 0, members)
        case "sent":
            return .sent(try entry(from: json.required("entry"), in: conversation), try answer(from: json["answer"], sendResult))
        case "socket": return .live(try input(from: json.required("input")))
        case "subscription_ended": return .subscriptionEnded(try error(from: json["error"]))
        default: throw TraceError.unknown("event", json)
        }
    }
}
