import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// The outbox's rules in a feed: a send's echo at once, one entry in flight
/// at a time (oldest first, through `OutboxDelivery`), a refusal kept for
/// the user's retry or discard while the entries behind it go out.
extension FeedStep {
    /// A send joins the outbox (written before anything is sent) and shows its echo.
    mutating func begin(_ send: PendingSend, _ s: inout FeedState) {
        guard s.phase != .stopped else { return emit(.settle(clientId: send.clientId, .failure(.cancelled))) }
        guard !s.visible.outbox.contains(where: { $0.clientId == send.clientId }) else { return }
        let entry = OutboxEntry(send, in: s.conversationId)
        write(.put(entry), &s)
        s.visible.outbox.append(entry)
        // A message goes at the bottom of the conversation: a window away
        // from the newest goes back there.
        if !s.visible.timeline.isAttached { jump(.newest, &s) }
        apply(.sendStarted(send), &s)
        pumpOutbox(&s)
    }

    /// A change of a stored message joins the outbox, behind the sends written before it.
    mutating func queue(_ change: MessageChange, clientId: String, _ s: inout FeedState) {
        guard s.phase != .stopped else { return emit(.settle(clientId: clientId, .failure(.cancelled))) }
        let entry = OutboxEntry(
            conversationId: s.conversationId, clientId: clientId, sender: s.userId, body: "", change: change)
        write(.put(entry), &s)
        s.visible.outbox.append(entry)
        pumpOutbox(&s)
        publishQuiet(&s)
    }

    /// A refused send goes back in the outbox, at its place.
    mutating func retry(_ clientId: String, _ s: inout FeedState) {
        guard let index = s.visible.outbox.firstIndex(where: { $0.clientId == clientId }),
            s.visible.outbox[index].failure != nil
        else { return }
        s.visible.outbox[index].failure = nil
        write(.put(s.visible.outbox[index]), &s)
        apply(.sendRetried(clientId: clientId), &s)
        pumpOutbox(&s)
    }

    /// A refused send given up: its echo and its entry go.
    mutating func discard(_ clientId: String, _ s: inout FeedState) {
        guard let index = s.visible.outbox.firstIndex(where: { $0.clientId == clientId }),
            s.visible.outbox[index].failure != nil
        else { return }
        s.visible.outbox.remove(at: index)
        write(.remove([clientId]), &s)
        apply(.sendDiscarded(clientId: clientId), &s)
    }

    /// Sends the oldest entry of the outbox that waits, unless one is under
    /// way: one at a time, so the server stores them in order (and, through
    /// the outbox's lane, never while another sender of the process, such as
    /// `ScrollbackClient.sendWaiting(from:)`, sends from the same outbox).
    mutating func pumpOutbox(_ s: inout FeedState) {
        guard s.phase != .stopped, s.inFlight == nil, let entry = OutboxDelivery.next(in: s.visible.outbox)
        else { return }
        s.inFlight = entry.clientId
        emit(.deliver(entry))
    }

    /// An entry of the outbox answered: stored, or refused.
    mutating func sent(
        _ entry: OutboxEntry, _ answer: Result<ScrollbackClient.SendResult, ScrollbackError>?, _ s: inout FeedState
    ) {
        let clientId = entry.clientId
        guard s.inFlight == clientId else { return }
        s.inFlight = nil
        guard let answer, s.phase != .stopped else { return }
        switch answer {
        case .success(let sent) where entry.change == nil:
            // Saving the message takes the entry out of the outbox, in one write.
            apply(.sendAcknowledged(clientId: clientId, message: sent.message), &s)
            // A window away from the newest does not take the message (the
            // pages that reach it bring it): the entry leaves the outbox all
            // the same, or it would be sent again and again.
            if s.visible.outbox.contains(where: { $0.clientId == clientId }) {
                s.visible.outbox.removeAll { $0.clientId == clientId }
                write(.remove([clientId]), &s)
                publishQuiet(&s)
            }
        case .success(let changed):
            s.visible.outbox.removeAll { $0.clientId == clientId }
            // The message as changed, when the window holds it (its live
            // frame brings it too); the window's version is not moved. The
            // entry leaves the outbox in the write that saves it.
            if s.visible.timeline.seqRange?.contains(changed.message.seq) == true {
                if s.hasStorage { s.acknowledged.append(clientId) }
                apply(.sendAcknowledged(clientId: clientId, message: changed.message), &s)
                // Nothing of the window changed to write: the entry alone.
                if s.acknowledged.contains(clientId) { removeAcknowledged(&s) }
            } else {
                write(.remove([clientId]), &s)
                publishQuiet(&s)
            }
        case .failure(let error):
            if let index = s.visible.outbox.firstIndex(where: { $0.clientId == clientId }) {
                s.visible.outbox[index] = OutboxDelivery.refused(s.visible.outbox[index], error)
                write(.put(s.visible.outbox[index]), &s)
            }
            apply(.sendFailed(clientId: clientId, reason: error.localizedDescription), &s)
        }
        pumpOutbox(&s)
        emit(.settle(clientId: clientId, answer))
    }
}
