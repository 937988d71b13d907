import Foundation
import HTTPTypes
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// An error a client sees: a status, a snake_case code and a sentence that
/// says what to fix. Every error response has this one JSON shape.
public struct APIError: Error, HTTPResponseError, Equatable {
    public var status: HTTPResponse.Status
    public var code: APIErrorCode
    public var message: String
    public var headers: HTTPFields

    public init(_ status: HTTPResponse.Status, _ code: APIErrorCode, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try JSONResponse.make(APIErrorBody(code: code, message: message), status: status)
        response.headers.append(contentsOf: headers)
        return response
    }

    // MARK: - The catalogue

    static func badRequest(_ code: APIErrorCode, _ message: String) -> APIError {
        APIError(.badRequest, code, message)
    }

    static func unprocessable(_ code: APIErrorCode, _ message: String) -> APIError {
        APIError(.unprocessableContent, code, message)
    }

    static func unauthorized(_ message: String) -> APIError {
        APIError(
            .unauthorized, .unauthorized, message,
            headers: [.wwwAuthenticate: #"Bearer realm="scrollback", error="invalid_token""#])
    }

    static let conversationNotFound = APIError(
        .notFound, .conversationNotFound,
        "No conversation with this id is visible to you: it does not exist or you are not a member.")

    static let unavailable = APIError(
        .serviceUnavailable, .serviceUnavailable,
        "The database is unreachable right now. Retry after a moment.", headers: [.retryAfter: "1"])

    /// The object store holding uploads failed a call: unreachable, unwell,
    /// or refusing the server's credentials. The client retries; an
    /// operator reads the cause in the log.
    static let objectStoreUnavailable = APIError(
        .serviceUnavailable, .serviceUnavailable,
        "The file storage is unreachable right now. Retry after a moment.", headers: [.retryAfter: "1"])

    /// With `Connection: close`: the rest of the body is not read, so the
    /// connection cannot carry another request.
    static func payloadTooLarge(limit: Int) -> APIError {
        let size = limit.isMultiple(of: 1024) ? "\(limit / 1024) KiB" : "\(limit) bytes"
        return APIError(
            .contentTooLarge, .payloadTooLarge, "The request body must be at most \(size).", headers: [.connection: "close"])
    }

    /// The one place where store outcomes become HTTP statuses.
    init(_ error: StoreError) {
        switch error {
        case .conversationNotFound:
            self = .conversationNotFound
        case .memberNotFound:
            self.init(.notFound, .memberNotFound, "That user is not a member of this conversation.")
        case .forbidden(.editAnotherSendersMessage):
            self.init(.forbidden, .forbidden, "Only the sender can edit a message.")
        case .forbidden(.deleteAnotherSendersMessage):
            self.init(.forbidden, .forbidden, "Only the sender, an admin or the owner can delete a message.")
        case .forbidden(.removeAnotherMember):
            self.init(
                .forbidden, .forbidden,
                "Only the owner or an admin can remove a member, and only the owner an admin; a member can remove themself.")
        case .forbidden(.ban):
            self.init(
                .forbidden, .forbidden,
                "Only the owner or an admin can ban a member or lift a ban, and only the owner an admin; no one bans themself.")
        case .forbidden(.changeRole):
            self.init(
                .forbidden, .forbidden,
                "Only the owner can change roles; the owner hands ownership over by giving another member the role owner.")
        case .forbidden(.updateConversation):
            self.init(
                .forbidden, .forbidden,
                "Only the owner or an admin can change the title, description, data or slow mode.")
        case .forbidden(.setMemberData):
            self.init(
                .forbidden, .forbidden, "A member sets their own membership's data; the owner or an admin anyone's.")
        case .forbidden(.ownerMustHandOver):
            self.init(
                .forbidden, .forbidden,
                "The owner cannot leave while others remain: hand ownership over first (PATCH /v1/conversations/{id}/members/{user_id} with {\"role\": \"owner\"}).")
        case .forbidden(.blocked):
            self.init(
                .forbidden, .forbidden,
                "You cannot start a conversation with or add one of these users: they do not take conversations from you.")
        case .distinctTooLarge(let limit):
            self.init(
                .unprocessableContent, .tooManyMembers,
                "A distinct conversation can have at most \(limit) members, the creator included.")
        case .reportedUserNotFound:
            self.init(.notFound, .memberNotFound, "You share no conversation with a user of this id.")
        case .userNotFound:
            self.init(.notFound, .userNotFound, "The service holds nothing about a user of this id (or erased them).")
        case .reportNotFound:
            self.init(.notFound, .reportNotFound, "There is no report with this id.")
        case .reportResolvedOtherwise:
            self.init(
                .conflict, .reportAlreadyResolved,
                "This report was already resolved with another action; its `resolution` says which.")
        case .resolutionNotApplicable(.noMessage):
            self.init(
                .unprocessableContent, .invalidResolution,
                "Action `delete_message` needs a report of a message; this report is of a user.")
        case .resolutionNotApplicable(.needsConversation):
            self.init(
                .unprocessableContent, .invalidResolution,
                "Field `conversation_id` must name the conversation to remove or ban a reported user from.")
        case .resolutionNotApplicable(.systemSender):
            self.init(
                .unprocessableContent, .invalidResolution,
                "The reported message is a system message: it has no sender to remove or ban.")
        case .banned:
            self.init(
                .forbidden, .memberBanned,
                "This user is banned from this conversation; the owner or an admin can lift the ban (DELETE /v1/conversations/{id}/bans/{user_id}).")
        case .slowMode(let wait):
            let seconds = max(1, Int(wait.rounded(.up)))
            self.init(
                .tooManyRequests, .slowMode, "This conversation is in slow mode: you can send again in \(seconds) s.",
                headers: [.retryAfter: "\(seconds)"])
        case .idempotencyConflict:
            self.init(
                .conflict, .idempotencyConflict,
                "This client_id was already used for a different message in this conversation; use a new client_id for a new message."
            )
        case .messageNotFound:
            self.init(.notFound, .messageNotFound, "This conversation has no message with that seq.")
        case .messageDeleted:
            self.init(
                .conflict, .messageDeleted, "This message was deleted; a deleted message cannot be edited or reacted to.")
        case .replyTargetMissing(let seq):
            self.init(
                .unprocessableContent, .invalidReplyTo,
                "Field `reply_to` must be the seq of a message in this conversation; there is no message \(seq).")
        case .uploadNotFound:
            self.init(.notFound, .uploadNotFound, "You have no upload with this id in this conversation.")
        case .tooManyDevices(let limit):
            self.init(
                .unprocessableContent, .tooManyDevices,
                "You have \(limit) devices registered, the most a user may: remove one first (DELETE /v1/devices/{device_id}).")
        case .tooManyUploads(let limit):
            self.init(
                .unprocessableContent, .tooManyUploads,
                "You have \(limit) uploads pending (not sent, not expired): send or let some expire first.")
        case .attachmentsUnusable:
            self.init(
                .unprocessableContent, .invalidAttachments,
                "Field `attachments` must list uploads of yours in this conversation whose bytes all arrived, that have not expired and were not sent before.")
        case .replyTargetDeleted:
            self.init(.conflict, .messageDeleted, "The message replied to was deleted; a deleted message cannot be answered.")
        case .tooManyReactions(let limit):
            self.init(
                .conflict, .tooManyReactions,
                "A message can have at most \(limit) different reactions; react with one it already has.")
        case .notAThreadRoot(let root):
            self.init(
                .unprocessableContent, .notAThreadRoot,
                "This message is a reply in the thread of message \(root); threads are read from their first message.")
        case .readBeyondNewest(let lastSeq):
            self.init(
                .unprocessableContent, .invalidReadSeq,
                "Field `seq` must not be beyond the newest message's seq (\(lastSeq)).")
        case .conversationFull(let limit):
            self.init(
                .unprocessableContent, .tooManyMembers, "A conversation can have at most \(limit) members.")
        case .unavailable:
            self = .unavailable
        case .outcomeUnknown:
            self.init(
                .serviceUnavailable, .outcomeUnknown,
                "The database did not confirm whether this change was stored. Retry it: a send retried with the same client_id returns the stored message instead of storing it twice.",
                headers: [.retryAfter: "1"])
        }
    }
}
