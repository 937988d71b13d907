import Foundation
import PropertyBased
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// The inbox stream end to end: real servers on loopback (two instances on
/// one PostgreSQL), real WebSocket clients, changes made through either
/// instance.
@Suite struct InboxStreamTests {
    @Test func activityReadsAdditionsAndRemovalsReachTheInboxFromTheOtherInstance() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let shared = try await cluster.conversation("bob", members: ["alice"])
            let inbox = try await cluster.connect("alice", to: 0)
            let subscribed = try await Self.subscribeInbox(inbox)
            #expect(InboxCursor(subscribed) != nil)
            let other = cluster.instances[1].store

            // A message through instance 1: its line, with the unread count.
            _ = try await other.send(to: shared, from: bob, body: "hi alice", clientID: nil)
            // The conversation's creation may come first, or be repeated with
            // the message in it: a read starts from a cursor that transactions
            // still open elsewhere can hold back, and a repeat is allowed (see
            // docs/protocol.md, "The inbox").
            var first = try await inbox.next(where: Self.isInbox)
            while Self.isCreation(of: shared, first) { first = try await inbox.next(where: Self.isInbox) }
            guard let (line, cursor) = Self.line(first) else {
                Issue.record("expected conversation_activity, got \(first)")
                return
            }
            #expect(line.conversationId == shared && line.lastSeq == 1 && line.version == 1)
            #expect(line.unreadCount == 1 && line.readSeq == 0 && line.lastMessage?.body == "hi alice")
            #expect(InboxCursor(cursor) != nil)

            // An edit changes the preview and the version.
            _ = try await other.edit(1, in: shared, by: bob, body: "hi alice!")
            guard case .conversationActivity(let edited, _) = try await inbox.next(where: Self.isInbox) else {
                Issue.record("expected conversation_activity")
                return
            }
            #expect(edited.version == 2 && edited.lastMessage?.body == "hi alice!" && edited.unreadCount == 1)

            // Alice reads on another device (instance 1).
            _ = try await other.markRead(1, in: shared, by: alice)
            guard case .inboxRead(let id, let user, let seq, let unread, _, _) = try await inbox.next(where: Self.isInbox)
            else {
                Issue.record("expected read")
                return
            }
            #expect(id == shared && user == "alice" && seq == 1 && unread == 0)

            // Added to a new conversation: the whole conversation.
            let added = try await other.createConversation(creator: carol, title: "Plans", members: [alice])
            guard case .memberAdded(let conversation, _) = try await inbox.next(where: Self.isInbox) else {
                Issue.record("expected member_added")
                return
            }
            #expect(conversation.id == added.id && conversation.title == "Plans")
            #expect(conversation.members == ["alice", "carol"])

            // Removed: member_removed, then nothing more of it.
            try await other.removeMember(alice, from: added.id, by: carol)
            guard case .inboxMemberRemoved(let removed, _) = try await inbox.next(where: Self.isInbox) else {
                Issue.record("expected member_removed")
                return
            }
            #expect(removed == added.id)
            _ = try await other.send(to: added.id, from: carol, body: "secret", clientID: nil)
            _ = try await other.send(to: shared, from: bob, body: "still here", clientID: nil)
            // The activity of the conversation alice is still in arrives; the
            // other's never does.
            let next = try await inbox.next(where: Self.isInbox)
            guard case .conversationActivity(let after, _) = next else {
                Issue.record("expected conversation_activity, got \(next)")
                return
            }
            #expect(after.conversationId == shared && after.lastMessage?.body == "still here")
            let rest = await inbox.drain(for: .milliseconds(300))
            #expect(rest.allSatisfy { !Self.isInbox($0) }, "\(rest)")
        }
    }

    @Test func anInboxNeverTellsOfAConversationOfWhichTheUserIsNotAMemberEvenJustAfterARemoval() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let id = try await cluster.conversation("bob", members: ["alice", "carol"])
            let outsider = try await cluster.connect("dave", to: 1)
            _ = try await Self.subscribeInbox(outsider)
            let inboxes = [try await cluster.connect("alice", to: 0), try await cluster.connect("alice", to: 1)]
            for inbox in inboxes { _ = try await Self.subscribeInbox(inbox) }
            // Messages flow from both instances while alice is removed.
            let flood = Task {
                for n in 0..<60 {
                    _ = try await cluster.instances[n % 2].store.send(
                        to: id, from: n % 3 == 0 ? carol : bob, body: "m\(n)", clientID: nil)
                }
            }
            try await Task.sleep(for: .milliseconds(20))
            try await cluster.instances[1].store.removeMember(alice, from: id, by: bob)
            try await flood.value
            for inbox in inboxes {
                var removed = false
                var frames: [ServerFrame] = []
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline {
                    guard let frame = await inbox.frame(within: .milliseconds(500)) else {
                        if removed { break } else { continue }
                    }
                    guard Self.isInbox(frame) else { continue }
                    frames.append(frame)
                    if case .inboxMemberRemoved(id, _) = frame { removed = true }
                    if removed, case .conversationActivity = frame { Issue.record("activity after removal: \(frame)") }
                }
                #expect(removed, "\(frames)")
            }
            // Nothing at all for someone who never was a member.
            let told = await outsider.drain(for: .milliseconds(300))
            #expect(told.allSatisfy { !Self.isInbox($0) }, "\(told)")
        }
    }

    @Test func aResumeGivesWhatChangedWhileAwayAndNothingElse() async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            let quiet = try await cluster.conversation("bob", members: ["alice"])
            let busy = try await cluster.conversation("bob", members: ["alice"])
            let leaving = try await cluster.conversation("carol", members: ["alice"])
            let notMine = try await cluster.conversation("bob", members: ["carol"])
            let first = try await cluster.connect("alice", to: 0)
            var cursor = try await Self.subscribeInbox(first)
            _ = try await cluster.store.send(to: busy, from: bob, body: "one", clientID: nil)
            var told = try await first.next(where: Self.isInbox)
            while [quiet, busy, leaving].contains(where: { Self.isCreation(of: $0, told) }) {
                told = try await first.next(where: Self.isInbox)
            }
            guard let (line, seen) = Self.line(told), line.lastMessage?.body == "one" else {
                Issue.record("expected the activity of \"one\", got \(told)")
                return
            }
            cursor = seen
            first.close()

            // While away, through the other instance.
            let other = cluster.instances[1].store
            _ = try await other.send(to: busy, from: bob, body: "two", clientID: nil)
            try await other.removeMember(alice, from: leaving, by: carol)
            let joined = try await other.createConversation(creator: carol, title: "New", members: [alice])
            _ = try await other.send(to: notMine, from: bob, body: "not for alice", clientID: nil)

            let second = try await cluster.connect("alice", to: 1)
            try second.send(.subscribeInbox(after: cursor))
            #expect(try await second.next(where: Self.isInbox) == .inboxSubscribed(cursor: cursor))
            // What changed while away comes, each line in its state now. A
            // resume may repeat what came before the cursor (transactions
            // open elsewhere hold cursors back): never anything else.
            var activity: [UUID: InboxActivity] = [:]
            var added: [UUID] = []
            var removed: [UUID] = []
            let deadline = ContinuousClock.now + .seconds(30)
            while activity[busy]?.lastMessage?.body != "two" || added.isEmpty || removed.isEmpty,
                ContinuousClock.now < deadline
            {
                let frame = try await second.next(where: Self.isInbox)
                switch frame {
                case .conversationActivity(let line, _) where line.conversationId == busy:
                    activity[busy] = line
                case .memberAdded(let conversation, _) where conversation.id == joined.id:
                    added.append(conversation.id)
                case .memberAdded(let conversation, _) where conversation.id == busy:
                    activity[busy] = InboxActivity(conversation)  // a cursor from before its creation
                case .inboxMemberRemoved(let id, _):
                    removed.append(id)
                default:
                    if ![quiet, busy].contains(where: { Self.isCreation(of: $0, frame) }) {
                        Issue.record("unexpected \(frame)")
                    }
                }
            }
            #expect(activity[busy]?.lastMessage?.body == "two")
            #expect(added == [joined.id])
            #expect(removed == [leaving])
            let rest = await second.drain(for: .milliseconds(300))
            #expect(rest.allSatisfy { !Self.isInbox($0) }, "\(rest)")
        }
    }

    @Test func aCursorThatIsNotOneOfThisDatabasesAsksForAResync() async throws {
        try await LiveCluster.run { cluster in
            let inbox = try await cluster.connect("alice")
            try inbox.send(.subscribeInbox(after: "18446744073709551615"))
            #expect(try await inbox.next(where: Self.isInbox) == .inboxSubscribed(cursor: "18446744073709551615"))
            guard case .inboxResyncRequired(let cursor) = try await inbox.next(where: Self.isInbox) else {
                Issue.record("expected resync_required")
                return
            }
            #expect(InboxCursor(cursor) != nil)
            for after in ["", "-1", "12a", "184467440737095516150"] {
                try inbox.send(.subscribeInbox(after: after))
                let frame = try await inbox.next(where: { $0.isError })
                guard case .error(let code, let message, _, _) = frame else { continue }
                #expect(code == .invalidField && message.contains("`after`"), "\(after): \(message)")
            }
            // The inbox is still live.
            let id = try await cluster.conversation("bob", members: ["alice"])
            let frame = try await inbox.next(where: Self.isInbox)
            guard case .memberAdded(let conversation, _) = frame else {
                Issue.record("expected member_added, got \(frame)")
                return
            }
            #expect(conversation.id == id)
        }
    }

    /// Seeded random runs on two instances: sends, edits, deletions, reads,
    /// additions and removals of alice across many conversations, by both
    /// instances, while her inbox socket is dropped now and then and resumes
    /// from its last cursor on either instance. Her inbox, built only from
    /// the frames (and the list fetched once at the start, or after a
    /// `resync_required`), must become equal to a fresh conversation list
    /// after every step, and never mention a conversation after its
    /// `member_removed` until a `member_added`.
    @Test(arguments: [UInt64(1), 2, 3])
    func theInboxStaysEqualToAFreshListThroughRandomChangesAndDrops(seed: UInt64) async throws {
        try await LiveCluster.run(instances: 2) { cluster in
            var random = Xoshiro(seed: (seed, 5, 9, 13))
            let others = ["bob", "carol", "dave"].map(UserID.init(rawValue:))
            var conversations: [UUID] = []
            for n in 0..<20 {
                let creator = others[n % others.count]
                let members = n % 4 == 3 ? [] : [alice]
                conversations.append(
                    try await cluster.store.createConversation(creator: creator, title: "c\(n)", members: members).id)
            }
            var model = InboxModel()
            var socket = try await cluster.connect("alice", to: 0)
            var cursor = try await Self.subscribeInbox(socket)
            try await model.load(try await Self.list(cluster.store))
            var sent: [UUID: Int64] = [:]

            for step in 0..<120 {
                let store = cluster.instances[Int(random.next() % 2)].store
                let id = conversations[Int(random.next() % UInt64(conversations.count))]
                let members = try await Self.members(of: id, cluster.store)
                let sender = others.first { members.contains($0) }
                switch random.next() % 10 {
                case 0, 1, 2:
                    if let sender {
                        _ = try await store.send(to: id, from: sender, body: "s\(step)", clientID: nil)
                        sent[id, default: 0] += 1
                    }
                case 3:
                    if members.contains(alice) {
                        _ = try await store.send(to: id, from: alice, body: "a\(step)", clientID: nil)
                        sent[id, default: 0] += 1
                    }
                case 4:
                    if let sender, let count = sent[id], count > 0 {
                        let seq = Int64(random.next() % UInt64(count)) + 1
                        _ = try? await store.edit(seq, in: id, by: sender, body: "e\(step)")
                    }
                case 5:
                    if let sender, let count = sent[id], count > 0 {
                        _ = try? await store.delete(Int64(random.next() % UInt64(count)) + 1, in: id, by: sender)
                    }
                case 6:
                    if members.contains(alice), let count = sent[id], count > 0 {
                        _ = try await store.markRead(Int64(random.next() % UInt64(count)) + 1, in: id, by: alice)
                    }
                case 7:
                    if members.contains(alice) {
                        let creator = try await Self.creator(of: id, cluster.store)
                        try await store.removeMember(alice, from: id, by: creator)
                    } else if let sender {
                        _ = try await store.addMember(alice, to: id, by: sender)
                    }
                case 8:
                    if !members.contains(alice), let sender {
                        _ = try await store.addMember(alice, to: id, by: sender)
                    }
                default:
                    // The socket drops; alice comes back on either instance
                    // with the cursor of the last frame she had.
                    try await model.take(socket.drain(for: .milliseconds(Int(random.next() % 50))), cursor: &cursor)
                    socket.close()
                    socket = try await cluster.connect("alice", to: Int(random.next() % 2))
                    try socket.send(.subscribeInbox(after: cursor))
                }
                // Every change reaches the inbox on its own: once the stream
                // has caught up, the inbox is the list.
                let expected = try await Self.list(cluster.store)
                // (Within 30 s: a busy machine may take seconds; a lost frame never converges.)
                let deadline = ContinuousClock.now + .seconds(30)
                repeat {
                    try await model.take(socket.drain(for: .milliseconds(10)), cursor: &cursor)
                    if model.needsList { try await model.load(try await Self.list(cluster.store)) }
                } while model.lines != expected && ContinuousClock.now < deadline
                guard model.lines == expected else {
                    Issue.record(
                        "seed \(seed), step \(step): missing \(Set(expected.keys).subtracting(model.lines.keys)), extra \(Set(model.lines.keys).subtracting(expected.keys)), different \(expected.filter { model.lines[$0.key] != nil && model.lines[$0.key] != $0.value }.map { "\($0.value) vs \(model.lines[$0.key]!)" })"
                    )
                    return
                }
            }
            #expect(model.problems.isEmpty, "seed \(seed): \(model.problems)")
            #expect(model.frames > 0)
        }
    }

    // MARK: Helpers

    static func isInbox(_ frame: ServerFrame) -> Bool {
        switch frame {
        case .inboxSubscribed, .conversationActivity, .memberAdded, .inboxRead, .inboxMemberRemoved,
            .inboxResyncRequired:
            true
        case .error:
            true
        default:
            false
        }
    }

    /// The line a frame tells of a conversation: `conversation_activity`,
    /// or `member_added` repeating the conversation's creation after a
    /// message arrived in it (a read from a cursor held back).
    static func line(_ frame: ServerFrame) -> (InboxActivity, cursor: String)? {
        switch frame {
        case .conversationActivity(let line, let cursor): (line, cursor)
        case .memberAdded(let conversation, let cursor): (InboxActivity(conversation), cursor)
        default: nil
        }
    }

    /// A frame that tells of conversation `id` as it was created (empty).
    static func isCreation(of id: UUID, _ frame: ServerFrame) -> Bool {
        switch frame {
        case .memberAdded(let conversation, _): conversation.id == id && conversation.lastSeq == 0
        case .conversationActivity(let line, _): line.conversationId == id && line.lastSeq == 0
        default: false
        }
    }

    /// Subscribes without a cursor and returns the `inbox_subscribed` one.
    static func subscribeInbox(_ client: StreamClient) async throws -> String {
        try client.send(.subscribeInbox(after: nil))
        let frame = try await client.next(where: isInbox)
        guard case .inboxSubscribed(let cursor) = frame else {
            Issue.record("expected inbox_subscribed, got \(frame)")
            throw StreamClientError.noFrame
        }
        return cursor
    }

    /// Alice's whole conversation list, as inbox lines (through JSON, as a
    /// client would have them: timestamps in milliseconds).
    static func list(_ store: ScrollbackStore) async throws -> [UUID: InboxActivity] {
        var lines: [UUID: InboxActivity] = [:]
        var position: ConversationListPosition?
        repeat {
            let page = try await store.conversations(for: alice, limit: 100, after: position)
            for conversation in page.conversations {
                lines[conversation.id] = try ScrollbackJSON.decoder().decode(
                    InboxActivity.self, from: ScrollbackJSON.encoder().encode(InboxActivity(conversation)))
            }
            position = page.next
        } while position != nil
        return lines
    }

    static func members(of id: UUID, _ store: ScrollbackStore) async throws -> Set<UserID> {
        for user in ["bob", "carol", "dave"].map(UserID.init(rawValue:)) {
            if let conversation = try? await store.conversation(id, for: user) {
                return Set(conversation.members.map(UserID.init(rawValue:)))
            }
        }
        return []
    }

    static func creator(of id: UUID, _ store: ScrollbackStore) async throws -> UserID {
        for user in ["bob", "carol", "dave"].map(UserID.init(rawValue:)) {
            if let conversation = try? await store.conversation(id, for: user) {
                return UserID(rawValue: conversation.createdBy)
            }
        }
        throw StoreError.conversationNotFound
    }
}

private let alice = UserID(rawValue: "alice")
private let bob = UserID(rawValue: "bob")
private let carol = UserID(rawValue: "carol")

/// Alice's inbox as a client keeps it: lines by id, the higher version (then
/// read marker) winning.
private struct InboxModel {
    var lines: [UUID: InboxActivity] = [:]
    /// Conversations told removed and not added back since.
    var removed: Set<UUID> = []
    var problems: [String] = []
    var needsList = false
    var frames = 0

    mutating func load(_ list: [UUID: InboxActivity]) async throws {
        needsList = false
        for (id, line) in list {
            if let known = lines[id], (known.version, known.readSeq) > (line.version, line.readSeq) { continue }
            lines[id] = line
        }
        for id in lines.keys where list[id] == nil { lines[id] = nil }
        removed.subtract(list.keys)
    }

    mutating func take(_ frames: [ServerFrame], cursor: inout String) async throws {
        for frame in frames {
            switch frame {
            case .inboxSubscribed:
                continue
            case .conversationActivity(let line, let at):
                cursor = at
                if removed.contains(line.conversationId) { problems.append("activity after removal: \(line)") }
                if let known = lines[line.conversationId], known.version > line.version { continue }
                lines[line.conversationId] = line
            case .memberAdded(let conversation, let at):
                cursor = at
                removed.remove(conversation.id)
                lines[conversation.id] = InboxActivity(conversation)
            case .inboxRead(let id, _, let seq, let unread, _, let at):
                cursor = at
                if removed.contains(id) { problems.append("read after removal: \(id)") }
                if var line = lines[id], seq >= line.readSeq {
                    line.readSeq = seq
                    line.unreadCount = unread
                    lines[id] = line
                }
            case .inboxMemberRemoved(let id, let at):
                cursor = at
                removed.insert(id)
                lines[id] = nil
            case .inboxResyncRequired(let at):
                cursor = at
                needsList = true
            case .error(let code, let message, _, _):
                problems.append("error \(code): \(message)")
            default:
                continue
            }
            self.frames += 1
        }
    }
}
