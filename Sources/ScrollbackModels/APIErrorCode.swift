/// The machine-readable `code` of an error body: snake_case and stable, the
/// value a client switches on (the `message` is for people).
///
/// A struct with static members rather than an enum: a client decoding an
/// error from a newer server keeps a code it does not know yet instead of
/// failing to decode the whole body.
public struct APIErrorCode: RawRepresentable, Codable, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    // MARK: 400: the request is malformed

    /// The body is not a JSON object of the route's shape as a whole (empty,
    /// not JSON, not an object, a number out of range).
    public static let invalidJSON = APIErrorCode(rawValue: "invalid_json")
    /// One field of the JSON body has the wrong type or is missing.
    public static let invalidField = APIErrorCode(rawValue: "invalid_field")
    /// A query parameter is malformed, out of range, repeated or not allowed here.
    public static let invalidParameter = APIErrorCode(rawValue: "invalid_parameter")
    /// Any other malformed request that the HTTP layer refused.
    public static let badRequest = APIErrorCode(rawValue: "bad_request")
    /// A live-stream frame whose `type` the server does not know.
    public static let unknownFrameType = APIErrorCode(rawValue: "unknown_frame_type")

    // MARK: 401, 403: who is asking

    /// Missing, malformed, expired or wrongly signed bearer token.
    public static let unauthorized = APIErrorCode(rawValue: "unauthorized")
    /// A member who may not do this (edit someone else's message, remove another member).
    public static let forbidden = APIErrorCode(rawValue: "forbidden")
    /// 403: an admin route (`/v1/admin/...`) called without a server token
    /// (`scrollback token --server`).
    public static let serverTokenRequired = APIErrorCode(rawValue: "server_token_required")
    /// 400: a user route called with a server token but no `On-Behalf-Of`
    /// header naming the user it acts for (or one that is no user id).
    public static let onBehalfOfRequired = APIErrorCode(rawValue: "on_behalf_of_required")

    // MARK: 404, 405: what is addressed

    /// No such conversation, or the caller is not a member (the same answer).
    public static let conversationNotFound = APIErrorCode(rawValue: "conversation_not_found")
    /// The user is not a member of the conversation.
    public static let memberNotFound = APIErrorCode(rawValue: "member_not_found")
    /// The conversation has no message with that seq.
    public static let messageNotFound = APIErrorCode(rawValue: "message_not_found")
    /// No upload with that id of the caller in this conversation.
    public static let uploadNotFound = APIErrorCode(rawValue: "upload_not_found")
    /// No attachment with that id on a message of this conversation (or
    /// its message was deleted).
    public static let attachmentNotFound = APIErrorCode(rawValue: "attachment_not_found")
    /// The caller has no device registered with that id.
    public static let deviceNotFound = APIErrorCode(rawValue: "device_not_found")
    /// No report with that id.
    public static let reportNotFound = APIErrorCode(rawValue: "report_not_found")
    /// The service holds nothing about a user of that id (or erased them).
    public static let userNotFound = APIErrorCode(rawValue: "user_not_found")
    /// No such route.
    public static let notFound = APIErrorCode(rawValue: "not_found")
    /// A known route that does not take this method (the `Allow` header lists those it takes).
    public static let methodNotAllowed = APIErrorCode(rawValue: "method_not_allowed")

    // MARK: 408, 409, 413, 429: time, conflicts, sizes and rates

    /// The request's head or body did not arrive in time (too slowly, or
    /// not at all); the connection is closed after this answer.
    public static let requestTimeout = APIErrorCode(rawValue: "request_timeout")

    /// The `client_id` was already used for a different message in this conversation.
    public static let idempotencyConflict = APIErrorCode(rawValue: "idempotency_conflict")
    /// The message was deleted and cannot be edited.
    public static let messageDeleted = APIErrorCode(rawValue: "message_deleted")
    /// The report was resolved before with another action (or conversation).
    public static let reportAlreadyResolved = APIErrorCode(rawValue: "report_already_resolved")
    /// The request body is larger than the server's limit
    /// (``APILimits/maxRequestBodyBytes`` unless it sets another).
    public static let payloadTooLarge = APIErrorCode(rawValue: "payload_too_large")
    /// An upload's bytes do not start where the upload stands: send from
    /// `received` (the answer's, or the `GET` of the upload's).
    public static let uploadOffsetMismatch = APIErrorCode(rawValue: "upload_offset_mismatch")
    /// An upload that was sent with a message already, or expired unsent.
    public static let uploadUnavailable = APIErrorCode(rawValue: "upload_unavailable")
    /// A `Range` that names no byte of the attachment.
    public static let rangeNotSatisfiable = APIErrorCode(rawValue: "range_not_satisfiable")
    /// The caller did this too often: wait `Retry-After` seconds (on the
    /// live stream, the error frame's `retry_after`) before trying again.
    public static let rateLimited = APIErrorCode(rawValue: "rate_limited")

    // MARK: 422: well-formed but invalid values

    /// The message body is empty, invisible, too long or contains U+0000.
    public static let invalidMessageBody = APIErrorCode(rawValue: "invalid_message_body")
    /// The `client_id` is empty, too long or contains control characters.
    public static let invalidClientID = APIErrorCode(rawValue: "invalid_client_id")
    /// The title is too long or contains U+0000.
    public static let invalidTitle = APIErrorCode(rawValue: "invalid_title")
    /// A display name that is empty, too long or invisible, or an avatar's
    /// URL that is not an https URL.
    public static let invalidProfile = APIErrorCode(rawValue: "invalid_profile")
    /// An avatar or a conversation image that is not a PNG, JPEG, GIF or
    /// WebP image, or whose header gives no size the server takes.
    public static let invalidImage = APIErrorCode(rawValue: "invalid_image")
    /// A conversation's `description` is too long or contains U+0000.
    public static let invalidDescription = APIErrorCode(rawValue: "invalid_description")
    /// Custom data (`data`) that is not a JSON object, or passes one of its
    /// limits (``APILimits/maxCustomDataBytes``, ``APILimits/maxCustomDataDepth``,
    /// ``APILimits/maxCustomDataKeyLength``), or holds text that is not valid.
    public static let invalidData = APIErrorCode(rawValue: "invalid_data")
    /// A message's `type` is not 1 to ``APILimits/maxMessageTypeLength`` of
    /// a-z 0-9 `_` `.` `-` starting with a letter.
    public static let invalidMessageType = APIErrorCode(rawValue: "invalid_message_type")
    /// A user id does not have the shape of ``UserID``.
    public static let invalidUserID = APIErrorCode(rawValue: "invalid_user_id")
    /// A read marker that is negative or beyond the newest message.
    public static let invalidReadSeq = APIErrorCode(rawValue: "invalid_read_seq")
    /// More members than ``APILimits/maxMembers``.
    public static let tooManyMembers = APIErrorCode(rawValue: "too_many_members")
    /// More layout items than ``APILimits/maxLayoutItems``.
    public static let tooManyItems = APIErrorCode(rawValue: "too_many_items")
    /// A layout size the calculator rejects (negative, not finite, or
    /// adding up beyond the largest representable height).
    public static let invalidLayoutInput = APIErrorCode(rawValue: "invalid_layout_input")
    public static let invalidReplyTo = APIErrorCode(rawValue: "invalid_reply_to")
    public static let invalidEmoji = APIErrorCode(rawValue: "invalid_emoji")
    public static let tooManyReactions = APIErrorCode(rawValue: "too_many_reactions")
    public static let notAThreadRoot = APIErrorCode(rawValue: "not_a_thread_root")
    /// An upload's `filename`, `content_type` or `blurhash` is malformed.
    public static let invalidUpload = APIErrorCode(rawValue: "invalid_upload")
    /// An upload's declared size is 0 or beyond the server's limit, or its
    /// bytes go beyond the size declared.
    public static let invalidUploadSize = APIErrorCode(rawValue: "invalid_upload_size")
    /// The bytes are not what the upload declared (another type, or an
    /// image whose header is broken): the upload is refused.
    public static let invalidUploadContent = APIErrorCode(rawValue: "invalid_upload_content")
    /// The caller has as many uploads pending (not sent, not expired) as
    /// the server takes.
    public static let tooManyUploads = APIErrorCode(rawValue: "too_many_uploads")
    /// An upload of a kind (image, video, file) the server does not take
    /// (`SCROLLBACK_UPLOAD_KINDS`): the kind its `content_type` declares
    /// when announced, or the kind its bytes are once they all arrived.
    public static let uploadKindNotAllowed = APIErrorCode(rawValue: "upload_kind_not_allowed")
    /// A send's `attachments`: more than ``APILimits/maxAttachmentsPerMessage``,
    /// repeated, or an upload that is not complete, of another user or
    /// conversation, already sent or expired.
    public static let invalidAttachments = APIErrorCode(rawValue: "invalid_attachments")
    /// A device's `device_id`, `platform` or `token` is malformed.
    public static let invalidDevice = APIErrorCode(rawValue: "invalid_device")
    /// The caller has as many devices registered as a user may
    /// (``APILimits/maxDevicesPerUser``).
    public static let tooManyDevices = APIErrorCode(rawValue: "too_many_devices")
    /// A mute's `until` is not a time in the future.
    public static let invalidMute = APIErrorCode(rawValue: "invalid_mute")
    /// A role, a slow mode or a ban's `until` that is not one the API takes.
    public static let invalidRole = APIErrorCode(rawValue: "invalid_role")
    public static let invalidSlowMode = APIErrorCode(rawValue: "invalid_slow_mode")
    public static let invalidBan = APIErrorCode(rawValue: "invalid_ban")
    /// A report that names neither a message nor a user (or both), a reason
    /// not in the list, or a note too long.
    public static let invalidReport = APIErrorCode(rawValue: "invalid_report")
    /// A resolution whose `action` is not in the list, or does not apply to
    /// the report (deleting the message of a report of a user, removing a
    /// reported user without naming the conversation, acting on the system).
    public static let invalidResolution = APIErrorCode(rawValue: "invalid_resolution")
    /// 403: the user is banned from the conversation (adding them back).
    public static let memberBanned = APIErrorCode(rawValue: "member_banned")
    /// 429: slow mode: wait `Retry-After` (the frame's `retry_after`) seconds.
    public static let slowMode = APIErrorCode(rawValue: "slow_mode")

    // MARK: 5xx: our side

    /// Something broke on the server; the request was not completed.
    public static let internalError = APIErrorCode(rawValue: "internal_error")
    /// The database is unreachable, or the server has as many connections
    /// as it takes; retry after a moment (`Retry-After`).
    public static let serviceUnavailable = APIErrorCode(rawValue: "service_unavailable")
    /// A write whose commit could not be confirmed: it may or may not have
    /// been stored. Retry with the same `client_id` to learn which, without
    /// storing it twice.
    public static let outcomeUnknown = APIErrorCode(rawValue: "outcome_unknown")

    /// Every code this version of the API knows. A newer server may send others.
    public static let allCases: [APIErrorCode] = [
        .invalidJSON, .invalidField, .invalidParameter, .badRequest, .unknownFrameType,
        .unauthorized, .forbidden, .serverTokenRequired, .onBehalfOfRequired,
        .conversationNotFound, .memberNotFound, .messageNotFound, .uploadNotFound, .attachmentNotFound,
        .deviceNotFound, .reportNotFound, .userNotFound, .notFound,
        .methodNotAllowed,
        .requestTimeout, .idempotencyConflict, .messageDeleted, .reportAlreadyResolved, .payloadTooLarge, .uploadOffsetMismatch,
        .uploadUnavailable, .rangeNotSatisfiable, .rateLimited,
        .invalidMessageBody, .invalidClientID, .invalidTitle, .invalidUserID, .invalidReadSeq, .tooManyMembers,
        .tooManyItems, .invalidLayoutInput, .invalidReplyTo, .invalidEmoji, .tooManyReactions, .notAThreadRoot,
        .invalidUpload, .invalidUploadSize, .invalidUploadContent, .tooManyUploads, .uploadKindNotAllowed,
        .invalidAttachments,
        .invalidProfile, .invalidImage,
        .invalidDevice, .tooManyDevices, .invalidMute, .invalidRole, .invalidSlowMode, .invalidBan, .memberBanned,
        .slowMode, .invalidReport, .invalidResolution,
        .invalidDescription, .invalidData, .invalidMessageType,
        .internalError, .serviceUnavailable, .outcomeUnknown,
    ]
}
