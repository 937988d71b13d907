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
    /// This instance's typing notices (`TypingPace`), shared by both doors.
    private let typingPace = NIOLockedValueBox(TypingPace())

    init(store: ScrollbackStore, limiter: RateLimiter, uploads: UploadCommands? = nil) {
        self.store = store
        self.limiter = limiter
        self.uploads = uploads
    }

    /// Stores a message, or finds the one sent earlier with the same
    /// `clientID` (a replay, not an error). With attachments (upload ids),
    /// the body may be empty.
    func send(
        _ body: String, clientID: String?, replyTo: Int64?, attachments: [UUID] = [], to id: UUID, by user: UserID
    ) async throws -> SendOutcome {
        let attachments = try Validation.attachments(attachments)
        let body = attachments.isEmpty || !body.isEmpty ? try Validation.messageBody(body) : body
        let clientID = try Validation.clientID(clientID)
        let replyTo = try Validation.replyTo(replyTo)
        try limiter.check(.send, for: user)
        if let uploads, !attachments.isEmpty { try await uploads.settle(attachments, in: id, by: user) }
        return try await store.send(
            to: id, from: user, body: body, clientID: clientID, replyTo: replyTo, attachments: attachments)
    }

    /// Moves the caller's read marker forward (never backwards).
    func markRead(_ seq: Int64, in id: UUID, by user: UserID) async throws -> ReadMarker {
        try await store.markRead(Validation.readSeq(seq), in: id, by: user)
    }

    /// Tells the conversation's live subscribers on every instance that
    /// `user` is typing. Nothing is stored; a notice within the typing
    /// interval of the user's last one in this conversation is accepted and
    /// not sent.
    func typing(in id: UUID, by user: UserID) async throws {
        let now = ContinuousClock.now
        guard typingPace.withLockedValue({ $0.admits(user, in: id, at: now) }) else { return }
        do {
            try limiter.check(.typing, for: user)
            guard try await store.notifyTyping(in: id, by: user) else { throw StoreError.conversationNotFound }
        } catch {
            // Not sent: a non-member is told so every time, not only once an interval.
            typingPace.withLockedValue { $0.forget(user, in: id) }
            throw error
        }
    }
}
