import ArgumentParser
import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackServer
import ScrollbackTimeline

/// A line-oriented chat on the client kit's two feeds: the inbox (the
/// conversation list, its unread counts moving live) and a conversation
/// (its history, live messages, edits and deletions, sends with an echo
/// that becomes the stored message). It survives the server restarting:
/// the feeds reconnect and resume by themselves.
struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat from the terminal, through the client kit: an inbox and its conversations.",
        discussion: """
            Without --conversation or --with it opens the inbox: your conversations, most recently \
            active first, with their unread counts, updated live. Commands: /open N (or an id), \
            /new bob,carol [title], /dm bob (the one conversation with bob), /more, /list, \
            /block bob, /unblock bob, /quit. In a conversation: type a message and press \
            return to send it; /attach PATH [caption] sends a photo or a file; /report SEQ [reason] \
            reports a message; /older, /read, /back (to the inbox). Attachments show as lines under \
            their message; a blocked user's messages show folded. Ctrl-D leaves.
            """)

    @Option(help: "The user to chat as (a token is signed with the same secret as serve).")
    var user: String

    @Option(help: "Open this conversation (its id) instead of the inbox.")
    var conversation: String?

    @Option(help: "Create a conversation with these members (comma-separated) and open it.")
    var with: String?

    @Option(help: "The server's address.")
    var server = "http://127.0.0.1:8080"

    func validate() throws {
        guard UserID.isValid(user) else { throw ValidationError("--user must be \(UserID.rule).") }
        if let conversation, UUID(uuidString: conversation) == nil {
            throw ValidationError("--conversation must be a conversation id (a UUID).")
        }
    }

    func run() async throws {
        let secret = try Startup.configuration().jwtSecret ?? ""
        let authority = try await TokenAuthority(secret: secret)
        let user = self.user
        var client = ScrollbackClient(baseURL: server) { try await authority.token(for: user, ttl: 3600) }
        // A terminal has no main queue to wait for: answers print where they arrive.
        client.completionQueue = nil
        let session = ChatSession(client: client, user: user)
        if let conversation, let id = UUID(uuidString: conversation) {
            await session.open(id)
        } else if let with {
            await session.create(members: Self.names(with), title: nil)
        } else {
            await session.showInbox()
        }
        for await text in Self.standardInputLines() {
            guard await session.handle(text) else { break }
        }
        await session.close()
    }

    /// What follows a command's first word, trimmed; nil when nothing does.
    static func rest(of line: String) -> String? {
        guard let space = line.firstIndex(of: " ") else { return nil }
        let rest = line[space...].trimmingCharacters(in: .whitespaces)
        return rest.isEmpty ? nil : rest
    }

    static func names(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// One line out at once, even when the output is a pipe (print buffers it).
    static func say(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// Lines typed, read on a thread of their own (reading blocks).
    static func standardInputLines() -> AsyncStream<String> {
        AsyncStream { continuation in
            let reader = Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }
            reader.start()
        }
    }
}

/// What the terminal shows: the inbox, or one conversation. Each view is a
/// feed of the kit and a task that prints its updates; the session only
/// decides which one runs and turns typed lines into calls.
actor ChatSession {
    let client: ScrollbackClient
    let user: String
    private var inbox: InboxFeed?
    private var inboxPrinter: Task<Void, Never>?
    /// The last list printed, for /open N.
    private var listed: [Conversation] = []
    /// Whether the loaded list has been printed once.
    private var listShown = false
    private var feed: ConversationFeed?
    private var feedPrinter: Task<Void, Never>?

    init(client: ScrollbackClient, user: String) {
        self.client = client
        self.user = user
    }

    // MARK: The inbox

    /// Opens the inbox (a conversation open is closed first).
    func showInbox() {
        closeConversation()
        if inbox == nil {
            let feed = client.inboxFeed()
            inbox = feed
            Chat.say("-- inbox of \(user): /open N, /new bob,carol [title], /more, /list, /quit --")
            inboxPrinter = Task { [weak self] in
                for await (inbox, change) in feed.updates {
                    await self?.inboxChanged(inbox, change)
                }
                if let failure = feed.failure { Chat.say("-- the inbox ended: \(failure.localizedDescription) --") }
            }
            feed.start()
        } else {
            Task { [weak self] in
                guard let self, let inbox = await self.inbox?.inbox else { return }
                await self.printList(inbox.conversations)
            }
        }
    }

    private func inboxChanged(_ inbox: Inbox, _ change: InboxChange) {
        guard feed == nil else {
            listed = inbox.conversations
            return  // a conversation is open: the inbox keeps itself up to date quietly
        }
        guard listShown else {
            if inbox.isLoaded {
                printList(inbox.conversations)
                listShown = true
            }
            return
        }
        listed = inbox.conversations
        // The rows that changed, where they stand now: new activity moves a
        // conversation up, a read brings its unread count down.
        let rows = Set(change.updated + change.inserted + change.moved.map(\.to)).sorted()
        for row in rows where row < inbox.conversations.count {
            Chat.say("  * " + Self.line(row + 1, inbox.conversations[row]))
        }
        for _ in change.removed { Chat.say("  - a conversation left your list (/list)") }
    }

    private func printList(_ conversations: [Conversation]) {
        listed = conversations
        if conversations.isEmpty { Chat.say("  (no conversations yet: /new bob,carol)") }
        for (index, conversation) in conversations.enumerated() {
            Chat.say("  " + Self.line(index + 1, conversation))
        }
    }

    static func line(_ number: Int, _ conversation: Conversation) -> String {
        let mentions = conversation.unreadMentions > 0 ? ", \(conversation.unreadMentions) @you" : ""
        let unread = conversation.unreadCount > 0 ? "[\(conversation.unreadCount) unread\(mentions)] " : ""
        let title = conversation.title ?? conversation.members.joined(separator: ", ")
        let preview = conversation.lastMessage.map { message in
            ": \(message.sender): "
                + (message.deleted ? "(deleted)" : message.body.isEmpty && !message.attachments.isEmpty
                    ? "[\(message.attachments[0].kind.rawValue)] \(message.attachments[0].filename)"
                    : String(message.body.prefix(60)))
        } ?? ""
        return "\(number). \(unread)\(title)\(preview)"
    }

    // MARK: A conversation

    func open(_ id: UUID) {
        closeConversation()
        let feed = ConversationFeed(client: client, conversation: id, userId: user, pageSize: 20)
        self.feed = feed
        Chat.say("-- \(user) in \(id.uuidString.lowercased()): type and press return to send; /older, /read, /back --")
        feedPrinter = Task {
            var printer = ConversationPrinter()
            for await (state, _) in feed.updates { printer.show(state) }
        }
        feed.start()
    }

    func create(members: [String], title: String?) async {
        do {
            let conversation = try await client.createConversation(title: title, members: members)
            Chat.say("-- created \(conversation.id.uuidString.lowercased()) --")
            open(conversation.id)
        } catch {
            Chat.say("-- not created: \(error.localizedDescription) --")
        }
    }

    /// Opens "the" conversation with `user` (made the first time).
    func direct(with user: String) async {
        do {
            open(try await client.distinctConversation(with: [user]).id)
        } catch {
            Chat.say("-- not opened: \(error.localizedDescription) --")
        }
    }

    private func closeConversation() {
        if let feed { Task { await Self.stop(feed) } }
        feedPrinter?.cancel()
        feed = nil
        feedPrinter = nil
    }

    /// Stops a feed once its outbox has sent what was typed (for at most
    /// 30 s: what is still waiting then is said and given up).
    static func stop(_ feed: ConversationFeed) async {
        let deadline = ContinuousClock.now + .seconds(30)
        while feed.state.outbox.contains(where: { $0.failure == nil }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        let waiting = feed.state.outbox.filter { $0.failure == nil }.count
        if waiting > 0 { Chat.say("-- \(waiting) message(s) not sent: the server did not answer --") }
        feed.stop()
    }

    // MARK: What is typed

    /// False to leave.
    func handle(_ text: String) async -> Bool {
        let line = text.trimmingCharacters(in: .whitespaces)
        guard !line.isEmpty else { return true }
        let words = line.split(separator: " ", maxSplits: 2).map(String.init)
        switch words[0] {
        case "/quit":
            return false
        case "/back", "/inbox":
            showInbox()
        case "/list":
            showInbox()
        case "/more":
            inbox?.loadMore()
        case "/open":
            guard words.count > 1 else {
                Chat.say("-- /open N (a number of the list) or /open <conversation id> --")
                break
            }
            if let number = Int(words[1]), listed.indices.contains(number - 1) {
                open(listed[number - 1].id)
            } else if let id = UUID(uuidString: words[1]) {
                open(id)
            } else {
                Chat.say("-- no conversation \(words[1]) in the list (/list) --")
            }
        case "/new":
            guard words.count > 1 else {
                Chat.say("-- /new bob,carol [title] --")
                break
            }
            await create(members: Chat.names(words[1]), title: words.count > 2 ? words[2] : nil)
        case "/dm":
            // The rest of the line: a user id may hold spaces.
            guard let user = Chat.rest(of: line) else {
                Chat.say("-- /dm bob: the one conversation with bob --")
                break
            }
            await direct(with: user)
        case "/block", "/unblock":
            guard let user = Chat.rest(of: line) else {
                Chat.say("-- \(words[0]) bob --")
                break
            }
            do {
                if words[0] == "/block" { try await client.block(user) } else { try await client.unblock(user) }
                Chat.say("-- \(words[0] == "/block" ? "blocked" : "unblocked") \(user) --")
            } catch {
                Chat.say("-- not done: \(error.localizedDescription) --")
            }
        case "/report":
            guard let feed, words.count > 1, let seq = Int64(words[1]) else {
                Chat.say("-- /report SEQ [\(ReportReason.allCases.map(\.rawValue).joined(separator: "|"))], in a conversation --")
                break
            }
            let reason = words.count > 2 ? ReportReason(rawValue: words[2]) : .other
            guard let reason else {
                Chat.say("-- a reason is one of \(ReportReason.allCases.map(\.rawValue).joined(separator: ", ")) --")
                break
            }
            do {
                try await client.report(message: seq, in: feed.conversationId, reason: reason)
                Chat.say("-- reported [\(seq)] for \(reason.rawValue) --")
            } catch {
                Chat.say("-- not reported: \(error.localizedDescription) --")
            }
        case "/older":
            feed?.loadOlder()
        case "/attach":
            guard let feed, words.count > 1 else {
                Chat.say("-- /attach PATH [caption], in a conversation --")
                break
            }
            await attach(path: words[1], caption: words.count > 2 ? words[2] : "", with: feed)
        case "/read":
            guard let feed else { break }
            do {
                if let marker = try await feed.markRead() { Chat.say("-- read up to \(marker.readSeq) --") }
            } catch {
                Chat.say("-- not marked: \(error.localizedDescription) --")
            }
        default:
            guard let feed else {
                Chat.say("-- open a conversation first (/open N, /new bob,carol) --")
                break
            }
            // Into the feed's outbox at once, in the order typed; sent when
            // the server can take it. The prompt does not wait for it.
            feed.send(line) { result in
                if case .failure(let error) = result, error != .cancelled {
                    Chat.say("-- not sent: \(error.localizedDescription) --")
                }
            }
        }
        return true
    }

    /// Uploads a file and sends it through the feed (its echo shows at once).
    func attach(path: String, caption: String, with feed: ConversationFeed) async {
        let id = feed.conversationId
        guard let data = FileManager.default.contents(atPath: path) else {
            Chat.say("-- cannot read \(path) --")
            return
        }
        let name = URL(fileURLWithPath: path).lastPathComponent
        let contentType = Self.contentTypes[URL(fileURLWithPath: path).pathExtension.lowercased()] ?? "application/octet-stream"
        do {
            let attachment = try await client.upload(
                data, filename: name, contentType: contentType, to: id,
                progress: { report in
                    if report.sent == report.total { Chat.say("-- \(name): \(report.total) bytes uploaded --") }
                })
            try await feed.send(caption, attachments: [attachment])
        } catch {
            Chat.say("-- not sent: \(error.localizedDescription) --")
        }
    }

    /// What a file's extension most likely is; the server checks the bytes.
    static let contentTypes = [
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "pdf": "application/pdf", "txt": "text/plain", "mp4": "video/mp4", "mov": "video/quicktime",
    ]

    func close() async {
        if let feed { await Self.stop(feed) }
        closeConversation()
        inbox?.stop()
        inboxPrinter?.cancel()
    }
}

/// Prints a conversation's state as lines: each message once, in seq order
/// (older pages under a heading), a pending send once and again when it is
/// stored, edits and deletions, and the connection coming and going.
struct ConversationPrinter {
    private var shown: [Int64: Int64] = [:]  // seq -> version printed
    private var pending: Set<String> = []
    private var connection: ConversationFeed.Connection = .idle
    private var oldest: Int64?

    mutating func show(_ state: ConversationFeed.State) {
        if state.connection != connection {
            switch state.connection {
            case .reconnecting(let reason): Chat.say("-- disconnected (\(reason)); reconnecting --")
            case .live where connection != .connecting && connection != .idle: Chat.say("-- connected again --")
            case .ended:
                // Ended by itself (left, removed, refused); not when the user went back.
                if let failure = state.failure { Chat.say("-- this conversation ended: \(failure.localizedDescription) --") }
            default: break
            }
            connection = state.connection
        }
        let messages = state.timeline.messages.sorted { $0.seq < $1.seq }
        let older = messages.filter { message in oldest.map { message.seq < $0 } ?? false && shown[message.seq] == nil }
        if !older.isEmpty {
            Chat.say("-- earlier --")
            for message in older { print(message) }
            Chat.say("-- (end of earlier) --")
        }
        for message in messages where shown[message.seq] == nil { print(message) }
        for message in messages where shown[message.seq]! < message.version {
            shown[message.seq] = message.version
            Chat.say(Self.line(message) + (message.deleted ? "" : " (edited)"))
        }
        for item in state.timeline.items {
            guard let send = item.pendingSend, !pending.contains(send.clientId) else { continue }
            pending.insert(send.clientId)
            Chat.say("   … \(send.sender): \(send.body)")
        }
    }

    private mutating func print(_ message: Message) {
        shown[message.seq] = message.version
        oldest = min(oldest ?? message.seq, message.seq)
        Chat.say(Self.line(message))
    }

    /// A message, then one line per attachment under it.
    static func line(_ message: Message) -> String {
        let time = ScrollbackJSON.formatTimestamp(message.createdAt).dropFirst(11).prefix(8)
        let text =
            message.deleted
            ? "(deleted)" : message.blockedSender ? "(hidden: you blocked \(message.sender))" : message.body
        let head = "[\(message.seq)] \(time) \(message.sender): \(text)"
        return ([head] + message.attachments.map(attachmentLine)).joined(separator: "\n")
    }

    /// `      [image] cat.png, 640×480, image/png, 29 bytes`
    static func attachmentLine(_ attachment: Attachment) -> String {
        var parts = [attachment.filename]
        if let width = attachment.width, let height = attachment.height { parts.append("\(width)×\(height)") }
        parts += [attachment.contentType, "\(attachment.size) bytes"]
        return "      [\(attachment.kind.rawValue)] " + parts.joined(separator: ", ")
    }
}
