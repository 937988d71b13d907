/// What the store can refuse or fail with. The server maps each case to one
/// HTTP status in one place; database texts never reach a client.
public enum StoreError: Error, Equatable, Sendable {
    /// The conversation does not exist, or the caller is not a member: the
    /// same answer in both cases, so ids cannot be probed.
    case conversationNotFound
    /// The user named is not a member of the conversation.
    case memberNotFound
    /// The caller is a member but may not do this.
    case forbidden(Forbidden)
    /// The same client_id was used before with a different body.
    case idempotencyConflict
    /// No message with that seq in the conversation.
    case messageNotFound
    /// The message was deleted; a tombstone cannot be edited.
    case messageDeleted
    /// A reply to a seq that is no message of the conversation.
    case replyTargetMissing(Int64)
    /// A reply to a deleted message.
    case replyTargetDeleted
    /// No upload with that id of the caller in the conversation.
    case uploadNotFound
    /// The caller has as many uploads pending as they may.
    case tooManyUploads(limit: Int)
    /// The caller has as many devices registered as they may.
    case tooManyDevices(limit: Int)
    /// A send's attachments are not all uploads it may carry (incomplete,
    /// of another user or conversation, expired, or sent before).
    case attachmentsUnusable
    /// A new kind of reaction on a message that has the most kinds it may.
    case tooManyReactions(limit: Int)
    /// A thread of a message that is itself a reply (threads start at their root).
    case notAThreadRoot(root: Int64)
    /// A read marker beyond the conversation's newest message.
    case readBeyondNewest(lastSeq: Int64)
    /// The conversation already has the maximum number of members.
    case conversationFull(limit: Int)
    /// The user is banned from the conversation: they cannot be added back.
    case banned
    /// Slow mode: the sender may send again in this many seconds.
    case slowMode(retryAfter: Double)
    /// A distinct conversation of more members than one may have.
    case distinctTooLarge(limit: Int)
    /// A report of a user the reporter shares no conversation with.
    case reportedUserNotFound
    /// No report with that id.
    case reportNotFound
    /// The service does not know a user of that id (or erased them).
    case userNotFound
    /// The report was resolved before with another action or conversation.
    case reportResolvedOtherwise
    /// A resolution's action does not apply to the report.
    case resolutionNotApplicable(ResolutionProblem)
    /// The database cannot be reached, refused the work for now (a timeout,
    /// a lock it could not get in time, a read-only server), or is shutting
    /// down. Nothing was written: the statement was never sent or was rolled
    /// back, so the request can be retried as it is.
    case unavailable
    /// A write was sent but its commit could not be confirmed (the connection
    /// died, or the database stopped answering, while it ran). It may or may
    /// not be stored: a retry with the same `client_id` settles it.
    case outcomeUnknown

    /// Why a moderation action does not apply to a report.
    public enum ResolutionProblem: Sendable, Equatable {
        /// `delete_message` on a report of a user.
        case noMessage
        /// `remove_user` or `ban_user` on a report of a user, with no
        /// `conversation_id` to act in.
        case needsConversation
        /// `remove_user` or `ban_user` on a system message: it has no sender.
        case systemSender
    }

    /// What a member may not do. The sentences a client reads are written
    /// at the HTTP edge (`APIError`), from these reasons.
    public enum Forbidden: Sendable, Equatable {
        /// Only a message's sender may edit it.
        case editAnotherSendersMessage
        /// Only a message's sender, an admin or the owner may delete it.
        case deleteAnotherSendersMessage
        /// Only the owner removes admins, and the owner or an admin members;
        /// a member may remove themself.
        case removeAnotherMember
        /// Banning (and lifting bans, and listing them) follows removing; no
        /// one bans themself.
        case ban
        /// Only the owner changes roles.
        case changeRole
        /// Only the owner or an admin sets the title and slow mode.
        case updateConversation
        /// A member sets the data of their own membership; the owner or an
        /// admin anyone's.
        case setMemberData
        /// The owner leaves only once ownership is handed over (or as the
        /// last member).
        case ownerMustHandOver
        /// A user who blocked the caller cannot be put in a conversation by them.
        case blocked
    }
}
