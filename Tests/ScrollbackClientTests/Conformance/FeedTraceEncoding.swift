import Foundation
@testable import ScrollbackClient
import ScrollbackModels
import ScrollbackTimeline

/// How a conversation feed's events, effects and visible state are written
/// in a trace (conformance/README.md): in the wire's words, so that any
/// client can read them.
enum FeedTrace {
    typealias JSON = TraceJSON

    static func opening(_ opening: ConversationFeed.Opening) -> JSON {
        switch opening {
        case .newest: ["type": "newest"]
        case .message(let seq): ["type": "message", "seq": JSON(seq)]
        case .firstUnread: ["type": "first_unread"]
        }
    }

    static func error(_ error: ScrollbackError?) -> JSON {
        guard let error else { return nil }
        let kind: String
        var object: [String: JSON] = ["message": JSON(error.localizedDescription), "code": JSON(error.code?.rawValue)]
        switch error {
        case .unauthorized: kind = "unauthorized"
        case .forbidden: kind = "forbidden"
        case .notFound: kind = "not_found"
        case .conflict: kind = "conflict"
        case .invalidInput: kind = "invalid_input"
        case .rateLimited(_, let after, _):
            kind = "rate_limited"
            object["retry_after"] = after.map { JSON($0) } ?? .null
        case .unavailable(_, let after, _):
            kind = "unavailable"
            object["retry_after"] = after.map { JSON($0) } ?? .null
        case .server(let status, _, _):
            kind = "server"
            object["status"] = JSON(status)
        case .transport: kind = "transport"
        case .undecodable: kind = "undecodable"
        case .cancelled: kind = "cancelled"
        }
        object["kind"] = JSON(kind)
        return .object(object)
    }

    static func change(_ change: MessageChange?) -> JSON {
        switch change {
        case nil: nil
        case .edit(let seq, let body): ["type": "edit", "seq": JSON(seq), "body": JSON(body)]
        case .delete(let seq): ["type": "delete", "seq": JSON(seq)]
        case .react(let seq, let emoji): ["type": "react", "seq": JSON(seq), "emoji": JSON(emoji)]
        case .unreact(let seq, let emoji): ["type": "unreact", "seq": JSON(seq), "emoji": JSON(emoji)]
        }
    }

    static func entry(_ entry: OutboxEntry) -> JSON {
        [
            "client_id": JSON(entry.clientId), "sender": JSON(entry.sender), "body": JSON(entry.body),
            "attachments": JSON(entry.attachments.map(JSON.wire)), "failure": JSON(entry.failure),
            "change": change(entry.change),
        ]
    }

    static func readSeqs(_ seqs: [String: Int64]) -> JSON { .object(seqs.mapValues { JSON($0) }) }

    static func window(_ window: StoredWindow?) -> JSON {
        guard let window else { return nil }
        return [
            "messages": JSON(window.messages.map(JSON.wire)), "version": JSON(window.version),
            "last_seq": JSON(window.lastSeq), "has_older": .bool(window.hasOlder), "read_seqs": readSeqs(window.readSeqs),
        ]
    }

    static func write(_ write: StorageWrite) -> JSON {
        switch write {
        case .put(let entry): ["type": "put", "entry": Self.entry(entry)]
        case .remove(let ids): ["type": "remove", "client_ids": JSON(ids.map(JSON.string))]
        case .forget: ["type": "forget"]
        case .save(let changes, _):
            [
                "type": "save", "messages": JSON(changes.messages.map(JSON.wire)),
                "segments": JSON(changes.segments.map { [JSON($0.lowerBound), JSON($0.upperBound)] }),
                "version": JSON(changes.version), "last_seq": JSON(changes.lastSeq), "has_older": .bool(changes.hasOlder),
                "read_seqs": changes.readSeqs.map(readSeqs) ?? .null,
                "acknowledged": JSON(changes.acknowledged.map(JSON.string)),
            ]
        }
    }

    static func request(_ effect: TimelineEffect) -> JSON {
        switch effect {
        case .loadOlder(let before): ["type": "older", "before": JSON(before)]
        case .loadNewer(let after): ["type": "newer", "after": JSON(after)]
        case .catchUp(let version): ["type": "changes", "since_version": JSON(version)]
        case .fillGap(let after, let through): ["type": "fill_gap", "after": JSON(after), "through": JSON(through)]
        }
    }

    static func action(_ action: TimelineAction) -> JSON {
        switch action {
        case .pageLoaded(let page): ["page": .wire(page)]
        case .changesApplied(let changes): ["changes": .wire(changes)]
        default: ["unexpected": JSON("\(action)")]
        }
    }

    static func sendResult(_ result: ScrollbackClient.SendResult) -> JSON {
        ["message": .wire(result.message), "replayed": .bool(result.replayed)]
    }

    /// An answer: its value, or its error; null when it was cancelled.
    static func answer<Value>(_ answer: Result<Value, ScrollbackError>?, _ value: (Value) -> JSON) -> JSON {
        switch answer {
        case nil: nil
        case .success(let success): value(success)
        case .failure(let failure): ["error": error(failure)]
        }
    }

    static func timer(_ timer: LiveProtocol.Timer) -> JSON {
        switch timer {
        case .subscribeDeadline(let attempt): ["type": "subscribe_deadline", "attempt": JSON(attempt)]
        case .reconnect(let attempt): ["type": "reconnect", "attempt": JSON(attempt)]
        }
    }

    static func milliseconds(_ duration: Duration) -> JSON {
        JSON(Int64(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000))
    }

    static func input(_ input: LiveProtocol.Input) -> JSON {
        switch input {
        case .start: ["type": "start"]
        case .opened: ["type": "opened"]
        case .received(let frame): ["type": "frame", "frame": .wire(frame)]
        case .pageReceived(let page): ["type": "page", "page": .wire(page)]
        case .changesReceived(let changes): ["type": "changes", "changes": .wire(changes)]
        case .fetchFailed(let failure): ["type": "fetch_failed", "error": error(failure)]
        case .closed(let code, let reason): ["type": "closed", "code": code.map { JSON($0) } ?? .null, "reason": JSON(reason)]
        case .failed(let reason): ["type": "failed", "reason": JSON(reason)]
        case .tokenUnavailable(let reason): ["type": "token_unavailable", "reason": JSON(reason)]
        case .timerFired(let fired): ["type": "timer", "timer": timer(fired)]
        case .networkAvailable: ["type": "network_available"]
        case .backgrounded: ["type": "backgrounded"]
        case .foregrounded: ["type": "foregrounded"]
        case .cancel: ["type": "cancel"]
        }
    }

    static func liveEvent(_ event: LiveEvent) -> JSON {
        switch event {
        case .message(let message): ["type": "message", "message": .wire(message)]
        case .updated(let message): ["type": "updated", "message": .wire(message)]
        case .read(let user, let seq): ["type": "read", "user_id": JSON(user), "seq": JSON(seq)]
        case .typing(let user): ["type": "typing", "user_id": JSON(user)]
        case .presence(let presence): ["type": "presence", "presence": .wire(presence)]
        case .memberUpdated(let user, let role): ["type": "member_updated", "user_id": JSON(user), "role": JSON(role.rawValue)]
        case .connected(let seq, let version): ["type": "connected", "last_seq": JSON(seq), "version": JSON(version)]
        case .disconnected(let reason): ["type": "disconnected", "reason": JSON(reason)]
        case .memberRemoved: ["type": "member_removed"]
        case .conversationUpdated(let details): ["type": "conversation_updated", "details": .wire(details)]
        }
    }

    static func step(_ step: LiveProtocol.Step) -> JSON {
        switch step {
        case .connect: ["type": "connect"]
        case .send(let frame): ["type": "send", "frame": .wire(frame)]
        case .disconnect: ["type": "disconnect"]
        case .fetchPage(let after, let limit): ["type": "fetch_page", "after": JSON(after), "limit": JSON(limit)]
        case .fetchChanges(let since, let limit): ["type": "fetch_changes", "since_version": JSON(since), "limit": JSON(limit)]
        case .emit(let event): ["type": "emit", "event": liveEvent(event)]
        case .startTimer(let fired, let after):
            // A reconnect waits out the backoff, jittered: its length is the
            // retry policy's, not the trace's.
            if case .reconnect = fired { ["type": "start_timer", "timer": timer(fired), "after_ms": "backoff"] }
            else { ["type": "start_timer", "timer": timer(fired), "after_ms": milliseconds(after)] }
        case .finish(let failure): ["type": "finish", "error": error(failure)]
        }
    }

    static func diff(_ update: TimelineUpdate) -> JSON {
        [
            "removed": JSON(update.diff.removed.map { JSON($0) }), "inserted": JSON(update.diff.inserted.map { JSON($0) }),
            "updated": JSON(update.diff.updated.map { JSON($0) }),
        ]
    }

    static func event(_ event: FeedEvent) -> JSON {
        switch event {
        case .start(let at): ["type": "start", "opening": opening(at)]
        case .jump(let to): ["type": "jump", "opening": opening(to)]
        case .view(.scrolled(let offset)): ["type": "scrolled", "offset_from_bottom": JSON(offset)]
        case .view(.viewportResized(let height)): ["type": "viewport_resized", "height": JSON(height)]
        case .view(.heightMeasured(let id, let height)):
            switch id {
            case .seq(let seq): ["type": "height_measured", "seq": JSON(seq), "height": JSON(height)]
            case .local(let clientId): ["type": "height_measured", "client_id": JSON(clientId), "height": JSON(height)]
            }
        case .loadOlder: ["type": "load_older"]
        case .loadNewer: ["type": "load_newer"]
        case .send(let send):
            [
                "type": "send", "client_id": JSON(send.clientId), "body": JSON(send.body), "sender": JSON(send.sender),
                "attachments": JSON(send.attachments.map(JSON.wire)),
            ]
        case .change(let what, let clientId): ["type": "change", "client_id": JSON(clientId), "change": change(what)]
        case .retry(let clientId): ["type": "retry", "client_id": JSON(clientId)]
        case .discard(let clientId): ["type": "discard", "client_id": JSON(clientId)]
        case .markedRead(let marker): ["type": "marked_read", "marker": .wire(marker)]
        case .stop: ["type": "stop"]
        case .restored(let at, let stored, let outbox, let failure):
            [
                "type": "restored", "opening": opening(at), "window": window(stored),
                "outbox": JSON(outbox.map(entry)), "failure": JSON(failure),
            ]
        case .stored(_, let failure): ["type": "stored", "failure": JSON(failure)]
        case .opened(let at, let jump, let initial, let first):
            [
                "type": "opened", "opening": opening(at), "jump": JSON(jump), "initial": .bool(initial),
                "answer": answer(first) { first in
                    [
                        "page": .wire(first.page), "focus": JSON(first.focus), "first_unread": JSON(first.firstUnread),
                        "read_seq": JSON(first.readSeq),
                    ]
                },
            ]
        case .markerRead(let conversation, let at):
            ["type": "marker_read", "conversation": .wire(conversation), "opening": opening(at)]
        case .fetched(let effect, let window, let fetched):
            ["type": "fetched", "request": request(effect), "window": JSON(window), "answer": answer(fetched, action)]
        case .filled(let fill, let after, let window, let page):
            [
                "type": "filled", "fill": JSON(fill), "after": JSON(after), "window": JSON(window),
                "answer": answer(page) { ["page": .wire($0)] },
            ]
        case .presenceRead(let read, let members):
            ["type": "presence_read", "read": JSON(read), "answer": answer(members) { ["members": .wire($0)] }]
        case .sent(let sent, let result): ["type": "sent", "entry": entry(sent), "answer": answer(result, sendResult)]
        case .live(let live): ["type": "socket", "input": input(live)]
        case .subscriptionEnded(let failure): ["type": "subscription_ended", "error": error(failure)]
        }
    }

    static func effect(_ effect: FeedEffect) -> JSON {
        switch effect {
        case .restore(let at): ["type": "restore", "opening": opening(at)]
        case .store(let what): ["type": "store", "write": write(what)]
        case .open(let at, let jump, let initial):
            ["type": "open", "opening": opening(at), "jump": JSON(jump), "initial": .bool(initial)]
        case .readMarker(let at): ["type": "read_marker", "opening": opening(at)]
        case .fetch(let what, let window): ["type": "fetch", "request": request(what), "window": JSON(window)]
        case .fillPage(let fill, let after, let window):
            ["type": "fill_page", "fill": JSON(fill), "after": JSON(after), "window": JSON(window)]
        case .readPresence(let read): ["type": "read_presence", "read": JSON(read)]
        case .deliver(let what): ["type": "deliver", "entry": entry(what)]
        case .subscribe: ["type": "subscribe"]
        case .publish(_, let update): ["type": "publish", "diff": diff(update)]
        case .settle(let clientId, let result):
            ["type": "settle", "client_id": JSON(clientId), "answer": answer(result, sendResult)]
        case .end: ["type": "end"]
        case .answer(.steps(let steps)): ["type": "socket_steps", "steps": JSON(steps.map(step))]
        case .answer(.update(let update)): ["type": "view_update", "diff": diff(update)]
        }
    }

    static func row(_ item: TimelineItem) -> JSON {
        switch item.state {
        case .stored(let message):
            [
                "seq": JSON(message.seq), "version": JSON(message.version), "sender": JSON(message.sender),
                "body": JSON(message.body), "client_id": JSON(message.clientId), "deleted": .bool(message.deleted),
            ]
        case .sending(let send): ["client_id": JSON(send.clientId), "body": JSON(send.body), "pending": "sending"]
        case .failed(let send, let reason):
            ["client_id": JSON(send.clientId), "body": JSON(send.body), "pending": "failed", "reason": JSON(reason)]
        }
    }

    static func connection(_ connection: ConversationFeed.Connection) -> JSON {
        switch connection {
        case .idle: ["state": "idle"]
        case .connecting: ["state": "connecting"]
        case .live: ["state": "live"]
        case .reconnecting(let reason): ["state": "reconnecting", "reason": JSON(reason)]
        case .ended: ["state": "ended"]
        }
    }

    /// What the screen shows: the rows newest first and what is said about them.
    static func visible(_ state: ConversationFeed.State) -> JSON {
        let timeline = state.timeline
        return [
            "rows": JSON(timeline.items.map(row)), "connection": connection(state.connection),
            "has_older": .bool(timeline.hasOlder), "is_attached": .bool(timeline.isAttached),
            "version": JSON(timeline.version), "last_seq": JSON(timeline.lastSeq),
            "is_loading_older": .bool(state.isLoadingOlder), "is_loading_newer": .bool(state.isLoadingNewer),
            "first_unread_seq": JSON(state.firstUnreadSeq), "read_seq_at_open": JSON(state.readSeqAtOpen),
            "read_seqs": readSeqs(state.readSeqs), "failure": error(state.failure),
            "storage_failure": JSON(state.storageFailure),
            "outbox": JSON(state.outbox.map { ["client_id": JSON($0.clientId), "failure": JSON($0.failure)] }),
            "presence": .object(state.presence.mapValues(JSON.wire)),
        ]
    }
}
