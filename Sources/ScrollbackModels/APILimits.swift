/// The limits of the API, in one place: the server validates against them,
/// openapi.yaml states them (a test checks that it states these numbers), and
/// a client can check its input before sending it.
///
/// Lengths of text count Unicode code points, as JSON Schema's `maxLength`
/// does: a count of grapheme clusters would let one "character" carry any
/// number of combining marks.
public enum APILimits {
    /// A message body: 1 to this many code points.
    public static let maxMessageBodyLength = 4_000
    /// A conversation title: at most this many code points.
    public static let maxTitleLength = 200
    /// A user's display name: 1 to this many code points.
    public static let maxDisplayNameLength = 100
    /// An avatar's or a conversation image's URL, in UTF-8 bytes.
    public static let maxImageURLBytes = 2_048
    /// The largest avatar or conversation image kept by the server, in bytes.
    public static let maxImageBytes = 2 * 1024 * 1024
    /// A user search's `q`: 1 to this many code points.
    public static let maxUserQueryLength = 100
    /// Profiles asked for at once (`GET /v1/users?ids=`).
    public static let maxProfileIDs = 100
    /// `limit` of a page of user search.
    public static let userSearchLimit: ClosedRange<Int> = 1...50
    /// The user search page size without `limit`.
    public static let defaultUserSearchLimit = 20
    /// A conversation description: at most this many code points.
    public static let maxDescriptionLength = 1_000
    /// Custom data (`data` of a message, a conversation or a member): a
    /// JSON object of at most this many bytes as the server writes it
    /// (compact, keys sorted).
    public static let maxCustomDataBytes = 4_096
    /// Custom data nests at most this deep (the object itself is 1).
    public static let maxCustomDataDepth = 4
    /// A key of custom data, at most this many code points.
    public static let maxCustomDataKeyLength = 64
    /// A message's `type`: 1 to this many of a-z 0-9 `_` `.` `-`, starting
    /// with a letter (``MessageType``).
    public static let maxMessageTypeLength = 64
    /// A `client_id` (idempotency key): 1 to this many code points.
    public static let maxClientIDLength = 64
    /// A user id: 1 to this many code points (``UserID/isValid(_:)``).
    public static let maxUserIDLength = 255
    /// The most UTF-8 bytes a user id can take: four for each code point,
    /// what a payload that carries user ids is sized by.
    public static let maxUserIDBytes = maxUserIDLength * 4
    /// Members of one conversation, creator included.
    public static let maxMembers = 1_000
    /// The most members of a distinct conversation (`"distinct": true`),
    /// the creator included.
    public static let maxDistinctMembers = 20
    /// A report's note, in characters.
    public static let maxReportNoteLength = 1_000
    /// Slow mode's longest period (`slow_mode_seconds`): 6 hours.
    public static let maxSlowModeSeconds = 21_600
    /// Distinct emojis on one message; one more kind is refused (409).
    public static let maxReactionKinds = 20
    /// An emoji of a reaction, in UTF-8 bytes (one grapheme; a family or a
    /// flag with modifiers is long, a sentence is not).
    public static let maxEmojiBytes = 64
    /// The code points of a parent's body that a reply's preview carries.
    public static let replyExcerptLength = 100
    /// The repliers a thread's summary names: the first this many.
    public static let threadParticipantsShown = 10

    /// `limit` of a page of messages or conversations.
    public static let pageLimit: ClosedRange<Int> = 1...200
    /// The page size without `limit`.
    public static let defaultPageLimit = 50
    /// `limit` of a page of the caller's mentions (`GET /v1/mentions`).
    public static let mentionsLimit: ClosedRange<Int> = 1...50
    /// The mentions page size without `limit`.
    public static let defaultMentionsLimit = 20
    /// Entries of the audit log, and reports of the moderation queue, per page.
    public static let adminPageLimit: ClosedRange<Int> = 1...100
    public static let defaultAdminPageLimit = 50
    /// The problems an import's answer lists (it counts them all).
    public static let maxImportProblemsListed = 1_000
    /// The longest `external_id` of an imported message.
    public static let maxExternalIDLength = 256
    /// Distinct users one message can mention; further `@` are plain text.
    public static let maxMentionsPerMessage = 50
    /// `limit` of a page of the change log.
    public static let changesLimit: ClosedRange<Int> = 1...1_000
    /// The change log's page size without `limit`.
    public static let defaultChangesLimit = 100

    /// `limit` of a page of search results.
    public static let searchLimit: ClosedRange<Int> = 1...50
    /// Search results per page without `limit`.
    public static let defaultSearchLimit = 20
    /// A search query (`q`): 1 to this many code points after trimming.
    public static let maxSearchQueryLength = 256

    /// The JSON of one change-log page or one page of the conversation
    /// list stops before it would pass about this many bytes (it always
    /// holds at least one item) and says there is more (`has_more`,
    /// `next_cursor`): a page of 1,000 long messages or of 200 conversations
    /// with 1,000 members each is not one response of many megabytes. The
    /// default: a server may set another (`SCROLLBACK_MAX_RESPONSE_BYTES`).
    public static let maxResponseBytes = 1024 * 1024
    /// A request body; larger ones get 413. The default: a server may set
    /// another (`SCROLLBACK_MAX_BODY_BYTES`).
    public static let maxRequestBodyBytes = 64 * 1024
    /// Item heights in one layout request. A client lays out the window of a
    /// conversation it holds, not all of it; the cap keeps one request small.
    public static let maxLayoutItems = 10_000
    /// `viewport_height` and `viewport_width` of page hints, in points.
    public static let maxHintViewportLength = 100_000.0

    /// Messages a `subscribe` with `after_seq` replays; more missed than
    /// this get `resync_required` instead, and the client pages over HTTP.
    public static let maxStreamBacklog = 1_000
    /// A message on the live stream, in either direction; a larger one
    /// closes the socket with 1009.
    public static let maxStreamFrameBytes = 64 * 1024
    /// Seconds a socket opened without an `Authorization` header has to send
    /// its `auth` frame before it is closed with 1008.
    public static let streamAuthSeconds = 5
    /// Seconds between two `typing` events of one member in one conversation.
    public static let typingIntervalSeconds = 2

    /// Attachments (upload ids) one message carries.
    public static let maxAttachmentsPerMessage = 10
    /// An upload's size in bytes. The default: a server may set another
    /// (`SCROLLBACK_MAX_UPLOAD_BYTES`).
    public static let maxUploadBytes: Int64 = 25 * 1024 * 1024
    /// Seconds an upload may wait for the message that sends it; then it
    /// expires and its bytes are collected.
    public static let uploadLifetimeSeconds = 3_600
    /// Uploads one user may have pending (not sent, not expired) at once.
    public static let maxPendingUploads = 50
    /// An upload's `filename`: 1 to this many code points, no control
    /// characters, no `/` or `\`.
    public static let maxFilenameLength = 255
    /// An upload's declared `content_type`: `type/subtype`, at most this many characters.
    public static let maxContentTypeLength = 127
    /// An upload's `blurhash`: at most this many characters (9 × 9 components).
    public static let maxBlurhashLength = 166

    /// Devices one user may have registered for push notifications.
    public static let maxDevicesPerUser = 20
    /// A device's `device_id`: 1 to this many of A-Z a-z 0-9 . _ : -.
    public static let maxDeviceIDLength = 128
    /// A device's push `token`: 1 to this many printable ASCII characters
    /// (an APNs token is 64 hex digits, an FCM token about 160 characters,
    /// a web push subscription a JSON document of a few hundred).
    public static let maxDeviceTokenLength = 4096
    /// The longest `app_id` of a device (a bundle id or an Android package).
    public static let maxDeviceAppIDLength = 255
}
