import Foundation
import ScrollbackModels
import ScrollbackTimeline

/// What a feed keeps in its storage, as a pure diff: the window the state
/// would have the storage hold (`StoredWindow(keeping:)`), and what to write
/// to get there from what it holds (`persistChanges(from:to:)`).
extension StoredWindow {
    /// The window a feed keeps of `timeline`: its newest `limit` messages,
    /// the version they are current as of, and the read markers.
    init(keeping timeline: Timeline, readSeqs: [String: Int64], limit: Int) {
        let messages = timeline.messages
        let kept = Array(messages.prefix(limit))
        self.init(
            messages: kept, version: timeline.version, lastSeq: timeline.lastSeq,
            hasOlder: timeline.hasOlder || kept.count < messages.count, readSeqs: readSeqs)
    }
}

/// The write that takes a storage holding `old` (nil: nothing known) to
/// `new`, removing the outbox entries `acknowledged` in the same
/// transaction: the messages new or changed, the ranges held, how current
/// they are, the read markers when they moved. Nil when there is nothing to write.
func persistChanges(
    from old: StoredWindow?, to new: StoredWindow, of conversation: UUID, acknowledged: [String] = []
) -> WindowChanges? {
    let held = Dictionary((old?.messages ?? []).map { ($0.seq, $0) }, uniquingKeysWith: { first, _ in first })
    let changed = new.messages.filter { held[$0.seq] != $0 }
    let sameRows = old.map { $0.messages.map(\.seq) == new.messages.map(\.seq) } ?? new.messages.isEmpty
    let oldReadSeqs = old?.readSeqs ?? [:]
    guard
        !changed.isEmpty || !acknowledged.isEmpty || !sameRows || new.version != old?.version
            || new.lastSeq != old?.lastSeq || new.hasOlder != (old?.hasOlder ?? false) || new.readSeqs != oldReadSeqs
    else { return nil }
    return WindowChanges(
        conversationId: conversation, messages: changed, segments: WindowChanges.segments(of: new.messages.map(\.seq)),
        version: new.version, lastSeq: new.lastSeq, hasOlder: new.hasOlder,
        readSeqs: new.readSeqs == oldReadSeqs ? nil : new.readSeqs, acknowledged: acknowledged)
}

extension FeedStep {
    /// Reads what the storage held into the feed: the window it holds
    /// (what it is compared with from now on), the outbox's sends as echoes.
    mutating func restore(_ window: StoredWindow?, outbox entries: [OutboxEntry], _ s: inout FeedState) {
        if let window { s.onDisk = window }
        // A send whose message the window holds was stored: the write that
        // saved the message was cut short before it removed the entry.
        let stored = Set((window?.messages ?? []).filter { $0.sender == s.userId }.compactMap(\.clientId))
        let storedEntries = entries.map(\.clientId).filter(stored.contains)
        if !storedEntries.isEmpty { write(.remove(storedEntries), &s) }
        for entry in entries {
            if stored.contains(entry.clientId) { continue }
            guard !s.visible.outbox.contains(where: { $0.clientId == entry.clientId }) else { continue }
            s.visible.outbox.append(entry)
            // A change of a stored message has no row of its own.
            guard entry.change == nil else { continue }
            apply(.sendStarted(entry.send), &s)
            if let reason = entry.failure { apply(.sendFailed(clientId: entry.clientId, reason: reason), &s) }
        }
    }

    /// Takes out of the outbox the sends whose messages the window holds
    /// (live, or acknowledged), and writes what changed in the window since
    /// the storage last had it, in one transaction with their entries.
    mutating func persist(_ s: inout FeedState) {
        let timeline = s.visible.timeline
        guard timeline.isLoaded, !s.forgotten, s.hasStorage || !s.visible.outbox.isEmpty else { return }
        let window = StoredWindow(keeping: timeline, readSeqs: s.visible.readSeqs, limit: s.storedMessageLimit)
        if !s.visible.outbox.isEmpty {
            // The outbox's sends whose messages are stored now, live or acknowledged.
            let sentHere = Set(window.messages.filter { $0.sender == s.userId }.compactMap(\.clientId))
            let arrived = s.visible.outbox.filter { sentHere.contains($0.clientId) }.map(\.clientId)
            if !arrived.isEmpty { s.visible.outbox.removeAll { sentHere.contains($0.clientId) } }
            if s.hasStorage { s.acknowledged += arrived.filter { !s.acknowledged.contains($0) } }
        }
        guard s.hasStorage else { return }
        guard timeline.isAttached else {
            // The storage keeps the newest window: a jump away leaves it as
            // it was, but what the server has stored leaves the outbox.
            return removeAcknowledged(&s)
        }
        guard let changes = persistChanges(from: s.onDisk, to: window, of: s.conversationId, acknowledged: s.acknowledged)
        else { return }
        s.onDisk = window
        s.acknowledged = []
        write(.save(changes, window), &s)
    }

    /// The acknowledged entries, out of the outbox in one write.
    mutating func removeAcknowledged(_ s: inout FeedState) {
        guard !s.acknowledged.isEmpty else { return }
        let entries = s.acknowledged
        s.acknowledged = []
        write(.remove(entries), &s)
    }

    /// Drops what the storage holds of the conversation; nothing more is written.
    mutating func forget(_ s: inout FeedState) {
        write(.forget, &s)
        s.forgotten = true
    }

    /// One call of the storage, when the feed has one. It is taken to have
    /// worked; `stored` puts back what a call that threw did not write.
    mutating func write(_ write: StorageWrite, _ s: inout FeedState) {
        guard s.hasStorage else { return }
        emit(.store(write))
    }

    /// A call of the storage answered. One that threw leaves the storage as
    /// it was: the next write writes the whole window, and the entries it
    /// did not remove leave with the next write that works.
    mutating func stored(_ write: StorageWrite, failure: String?, _ s: inout FeedState) {
        let before = s.visible.storageFailure
        s.visible.storageFailure = failure
        if failure != nil {
            switch write {
            case .save(let changes, _):
                s.onDisk = nil
                s.acknowledged += changes.acknowledged.filter { !s.acknowledged.contains($0) }
            case .remove(let entries):
                s.acknowledged += entries.filter { !s.acknowledged.contains($0) }
            case .put, .forget:
                break
            }
        }
        if s.visible.storageFailure != before, s.phase != .stopped { publishQuiet(&s) }
    }
}
