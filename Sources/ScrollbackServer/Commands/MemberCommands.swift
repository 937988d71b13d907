import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels
import ScrollbackStore

/// What a member does in a conversation that both doors take, HTTP and the
/// live stream: send, move the read marker, say they are typing. Each
/// command validates its input, takes its rate limit and calls the store
/// once, here, so the two doors cannot drift; the doors only decode their
/// input and encode the answer.
struct MemberCommands: Sendable {
    let store: ScrollbackStore
    let limiter: RateLimiter
    /// Brings the uploads a send lists up to date (see `UploadCommands.settle`).
    let uploads: UploadCommands?
    /// This instance's typing notices, shared by both doors: the pace of
    /// those that went out, and those on their way to the database.
    private let typingState = NIOLockedValueBox(TypingState())

    private struct TypingState {
        var pace = TypingPace()
        var inFlight: [TypingKey: Task<Void, any Error>] = [:]
    }

    private struct TypingKey: Hashable {
        var conversation: UUID
        var user: UserID
    }

    init(store: ScrollbackStore, limiter: RateLimiter, uploads: UploadCommands? = nil) {
        self.store = store
        self.limiter = limiter
        self.uploads = uploads
    }

    /// Stores a message, or finds the one sent earlier with the same
    /// `clientID` (a replay, not an error). With attachments (upload ids)
    /// or data, the body may be empty. `data` was checked when it was
    /// decoded (`CustomData`).
    func send(
        _ body: String, clientID: String?, replyTo: Int64?, attachments: [UUID] = [], data: CustomData? = nil,
        type: String? = nil, to id: UUID, by user: UserID
    ) async throws -> SendOutcome {
        let attachments = try Validation.attachments(attachments)
        let body = (attachments.isEmpty && data == nil) || !body.isEmpty ? try Validation.messageBody(body) : body
        let clientID = try Validation.clientID(clientID)
        let replyTo = try Validation.replyTo(replyTo)
        let type = try Validation.messageType(type)
        try limiter.check(.send, for: user)
        // The socket's sends too (HTTP's are noted by `AuthMiddleware`).
        defer { store.noteWrite(by: user) }
        if let uploads, !attachments.isEmpty { try await uploads.settle(attachments, in: id, by: user) }
        return try await store.send(
            to: id, from: user, body: body, clientID: clientID, replyTo: replyTo, attachments: attachments, data: data,
            type: type)
    }

    /// Moves the caller's read marker forward (never backwards).
    func markRead(_ seq: Int64, in id: UUID, by user: UserID) async throws -> ReadMarker {
        defer { store.noteWrite(by: user) }
        return try await store.markRead(Validation.readSeq(seq), in: id, by: user)
    }

    /// Tells the conversation's live subscribers on every instance that
    /// `user` is typing. Nothing is stored; a notice within the typing
    /// interval of the user's last one in this conversation is accepted and
    /// not sent.
    ///
    /// Only a notice that went out starts an interval, so a non-member is
    /// told so every time. A notice that arrives while another of the same
    /// user and conversation is on its way (two sockets, or a socket and
    /// HTTP, at once) shares that one's outcome: dropped if it went out,
    /// refused as it was otherwise. The database sees one notification.
    func typing(in id: UUID, by user: UserID) async throws {
        let now = ContinuousClock.now
        let key = TypingKey(conversation: id, user: user)
        let (store, limiter) = (self.store, self.limiter)
        enum Step {
            case paced
            case join(Task<Void, any Error>)
            case send(Task<Void, any Error>)
        }
        let step = typingState.withLockedValue { state -> Step in
            if let inFlight = state.inFlight[key] { return .join(inFlight) }
            guard state.pace.wouldAdmit(user, in: id, at: now) else { return .paced }
            let task = Task {
                try limiter.check(.typing, for: user)
                guard try await store.notifyTyping(in: id, by: user) else { throw StoreError.conversationNotFound }
            }
            state.inFlight[key] = task
            return .send(task)
        }
        switch step {
        case .paced:
            return
        case .join(let task):
            try await task.value
        case .send(let task):
            let outcome = await task.result
            typingState.withLockedValue { state in
                state.inFlight[key] = nil
                if case .success = outcome { state.pace.record(user, in: id, at: now) }
            }
            try outcome.get()
        }
    }
}
