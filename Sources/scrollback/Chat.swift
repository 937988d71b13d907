import ArgumentParser
import Foundation
import ScrollbackClient
import ScrollbackModels
import ScrollbackServer
import ScrollbackTimeline

/// A line-oriented chat on the client kit: the newest page, then live
/// messages as they arrive, and every line typed is sent. It survives the
/// server restarting: the kit reconnects and resumes from the last seq.
struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat in a conversation from the terminal, through the client kit.")

    @Option(help: "The user to chat as (a token is signed with the same secret as serve).")
    var user: String

    @Option(help: "The conversation's id; without it a new conversation is created.")
    var conversation: String?

    @Option(help: "With a new conversation: the other members, comma-separated.")
    var with: String = ""

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
        let client = ScrollbackClient(baseURL: server) { try await authority.token(for: user, ttl: 3600) }

        let id: UUID
        if let conversation, let existing = UUID(uuidString: conversation) {
            id = existing
        } else {
            let members = with.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            id = try await client.createConversation(members: members).id
            Self.say("created conversation \(id.uuidString.lowercased())")
        }

        var timeline = Timeline(conversationId: id)
        timeline.apply(.pageLoaded(try await client.page(of: id, limit: 20)))
        for message in timeline.messages.reversed() { Self.say(Self.line(message)) }
        let lastSeq = timeline.lastSeq
        Self.say("-- \(user) in \(id.uuidString.lowercased()); type a message and press return, Ctrl-D to leave --")

        let live = Task {
            var wasDown = false
            do {
                for try await event in client.live(conversation: id, after: lastSeq) {
                    switch event {
                    case .message(let message): Self.say(Self.line(message))
                    case .updated(let message): Self.say(Self.line(message) + (message.deleted ? "" : " (edited)"))
                    case .typing(let other): Self.say("   \(other) is typing…")
                    case .disconnected(let reason):
                        wasDown = true
                        Self.say("-- disconnected (\(reason)); reconnecting --")
                    case .connected:
                        if wasDown { Self.say("-- connected again --") }
                        wasDown = false
                    case .read: break
                    case .memberRemoved: Self.say("-- you were removed from this conversation --")
                    }
                }
            } catch {
                Self.say("-- live delivery ended: \(error.localizedDescription) --")
            }
        }
        for await text in Self.standardInputLines() where !text.trimmingCharacters(in: .whitespaces).isEmpty {
            do {
                _ = try await client.send(text, to: id)
            } catch {
                Self.say("-- not sent: \(error.localizedDescription) --")
            }
        }
        live.cancel()
    }

    /// One line out at once, even when the output is a pipe (print buffers it).
    static func say(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func line(_ message: Message) -> String {
        let time = ScrollbackJSON.formatTimestamp(message.createdAt).dropFirst(11).prefix(8)
        return "[\(message.seq)] \(time) \(message.sender): \(message.deleted ? "(deleted)" : message.body)"
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
