import Foundation
import ScrollbackModels

/// Every call with a completion handler, for code that does not use
/// async/await. Each starts its request at once and calls `completion`
/// exactly once, on the client's `completionQueue` (the main queue unless
/// the app says otherwise), with the value or the `ScrollbackError`; the
/// returned task cancels it.
extension ScrollbackClient {
    public typealias Completion<Value> = @Sendable (Result<Value, ScrollbackError>) -> Void

    @discardableResult
    public func createConversation(
        title: String? = nil, members: [String] = [], completion: @escaping Completion<Conversation>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await createConversation(title: title, members: members)
        }
    }

    @discardableResult
    public func conversation(_ id: UUID, completion: @escaping Completion<Conversation>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await conversation(id) }
    }

    @discardableResult
    public func conversations(
        limit: Int? = nil, cursor: String? = nil, completion: @escaping Completion<ConversationList>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await conversations(limit: limit, cursor: cursor) }
    }

    @discardableResult
    public func addMember(_ user: String, to id: UUID, completion: @escaping Completion<Conversation>) -> Task<Void, Never>
    {
        complete(completion) { () async throws(ScrollbackError) in try await addMember(user, to: id) }
    }

    @discardableResult
    public func removeMember(_ user: String, from id: UUID, completion: @escaping Completion<Void>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await removeMember(user, from: id) }
    }

    @discardableResult
    public func send(
        _ body: String, to id: UUID, clientId: String? = nil, replyTo: Int64? = nil, attachments: [UUID] = [],
        completion: @escaping Completion<SendResult>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await send(body, to: id, clientId: clientId, replyTo: replyTo, attachments: attachments)
        }
    }

    @discardableResult
    public func registerDevice(
        _ deviceId: String, platform: DevicePlatform, token: String, appId: String? = nil,
        environment: DeviceEnvironment? = nil, completion: @escaping Completion<Device>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await registerDevice(deviceId, platform: platform, token: token, appId: appId, environment: environment)
        }
    }

    @discardableResult
    public func devices(completion: @escaping Completion<[Device]>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await devices() }
    }

    @discardableResult
    public func removeDevice(_ deviceId: String, completion: @escaping Completion<Void>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await removeDevice(deviceId) }
    }

    @discardableResult
    public func mute(_ id: UUID, until: Date? = nil, completion: @escaping Completion<MuteState>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await mute(id, until: until) }
    }

    @discardableResult
    public func unmute(_ id: UUID, completion: @escaping Completion<MuteState>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await unmute(id) }
    }

    @discardableResult
    public func distinctConversation(
        with members: [String], title: String? = nil, completion: @escaping Completion<Conversation>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await distinctConversation(with: members, title: title) }
    }

    @discardableResult
    public func block(_ user: String, completion: @escaping Completion<BlockedUser>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await block(user) }
    }

    @discardableResult
    public func unblock(_ user: String, completion: @escaping Completion<Void>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await unblock(user) }
    }

    @discardableResult
    public func unreadCounts(completion: @escaping Completion<UnreadCounts>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await unreadCounts() }
    }

    @discardableResult
    public func blocks(completion: @escaping Completion<[BlockedUser]>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await blocks() }
    }

    @discardableResult
    public func report(
        message seq: Int64, in id: UUID, reason: ReportReason, note: String? = nil,
        completion: @escaping Completion<Report>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await report(message: seq, in: id, reason: reason, note: note)
        }
    }

    @discardableResult
    public func report(
        user: String, reason: ReportReason, note: String? = nil, completion: @escaping Completion<Report>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await report(user: user, reason: reason, note: note) }
    }

    @discardableResult
    public func members(of id: UUID, completion: @escaping Completion<[ConversationMember]>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await members(of: id) }
    }

    @discardableResult
    public func setRole(
        _ role: MemberRole, of user: String, in id: UUID, completion: @escaping Completion<[ConversationMember]>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await setRole(role, of: user, in: id) }
    }

    @discardableResult
    public func updateConversation(
        _ id: UUID, title: String?? = nil, slowModeSeconds: Int? = nil, completion: @escaping Completion<Conversation>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await updateConversation(id, title: title, slowModeSeconds: slowModeSeconds)
        }
    }

    @discardableResult
    public func ban(_ user: String, from id: UUID, until: Date? = nil, completion: @escaping Completion<Void>)
        -> Task<Void, Never>
    {
        complete(completion) { () async throws(ScrollbackError) in try await ban(user, from: id, until: until) }
    }

    @discardableResult
    public func bans(of id: UUID, completion: @escaping Completion<[Ban]>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await bans(of: id) }
    }

    @discardableResult
    public func unban(_ user: String, from id: UUID, completion: @escaping Completion<Void>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await unban(user, from: id) }
    }

    @discardableResult
    public func presence(of id: UUID, completion: @escaping Completion<[MemberPresence]>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await presence(of: id) }
    }

    @discardableResult
    public func setPresenceHidden(_ hidden: Bool, completion: @escaping Completion<PresenceSettings>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await setPresenceHidden(hidden) }
    }

    /// Cancel the returned task to stop the upload (`.cancelled`).
    @discardableResult
    public func upload(
        _ data: Data, filename: String, contentType: String, to id: UUID, blurhash: String? = nil,
        progress: (@Sendable (UploadReport) -> Void)? = nil, completion: @escaping Completion<Attachment>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await upload(data, filename: filename, contentType: contentType, to: id, blurhash: blurhash, progress: progress)
        }
    }

    @discardableResult
    public func thread(
        of root: Int64, in id: UUID, _ anchor: PageAnchor = .newest, limit: Int? = nil,
        completion: @escaping Completion<ThreadPage>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await thread(of: root, in: id, anchor, limit: limit) }
    }

    @discardableResult
    public func react(_ emoji: String, to seq: Int64, in id: UUID, completion: @escaping Completion<Message>)
        -> Task<Void, Never>
    {
        complete(completion) { () async throws(ScrollbackError) in try await react(emoji, to: seq, in: id) }
    }

    @discardableResult
    public func unreact(_ emoji: String, from seq: Int64, in id: UUID, completion: @escaping Completion<Message>)
        -> Task<Void, Never>
    {
        complete(completion) { () async throws(ScrollbackError) in try await unreact(emoji, from: seq, in: id) }
    }

    @discardableResult
    public func page(
        of id: UUID, _ anchor: PageAnchor = .newest, limit: Int? = nil, completion: @escaping Completion<MessagePage>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await page(of: id, anchor, limit: limit) }
    }

    @discardableResult
    public func edit(_ seq: Int64, in id: UUID, body: String, completion: @escaping Completion<Message>)
        -> Task<Void, Never>
    {
        complete(completion) { () async throws(ScrollbackError) in try await edit(seq, in: id, body: body) }
    }

    @discardableResult
    public func delete(_ seq: Int64, in id: UUID, completion: @escaping Completion<Message>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await delete(seq, in: id) }
    }

    @discardableResult
    public func markRead(_ seq: Int64, in id: UUID, completion: @escaping Completion<ReadMarker>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await markRead(seq, in: id) }
    }

    @discardableResult
    public func typing(in id: UUID, completion: @escaping Completion<Void>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await typing(in: id) }
    }

    @discardableResult
    public func changes(
        in id: UUID, since version: Int64, limit: Int? = nil, completion: @escaping Completion<ChangeSet>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await changes(in: id, since: version, limit: limit) }
    }

    @discardableResult
    public func search(
        _ query: String, in conversation: UUID? = nil, before cursor: String? = nil, limit: Int? = nil,
        completion: @escaping Completion<SearchResults>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await search(query, in: conversation, before: cursor, limit: limit)
        }
    }

    @discardableResult
    public func mentions(
        before cursor: String? = nil, limit: Int? = nil, completion: @escaping Completion<MentionPage>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await mentions(before: cursor, limit: limit) }
    }

    @discardableResult
    public func layout(_ request: LayoutRequest, completion: @escaping Completion<LayoutResponse>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await layout(request) }
    }

    @discardableResult
    public func user(_ id: String, completion: @escaping Completion<UserProfile>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await user(id) }
    }

    @discardableResult
    public func users(_ ids: [String], completion: @escaping Completion<[UserProfile]>) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await users(ids) }
    }

    @discardableResult
    public func searchUsers(
        _ query: String, limit: Int? = nil, cursor: String? = nil, completion: @escaping Completion<UserList>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in try await searchUsers(query, limit: limit, cursor: cursor) }
    }

    @discardableResult
    public func updateProfile(
        displayName: FieldChange<String> = .unchanged, avatar: FieldChange<ProfileImage> = .unchanged,
        completion: @escaping Completion<UserProfile>
    ) -> Task<Void, Never> {
        complete(completion) { () async throws(ScrollbackError) in
            try await updateProfile(displayName: displayName, avatar: avatar)
        }
    }

    /// Live events, each handed to `onEvent`; `onEnd` once when the stream
    /// ends (nil: it ended normally, after `memberRemoved` or cancellation).
    @discardableResult
    public func live(
        conversation id: UUID, after seq: Int64? = nil, onEvent: @escaping @Sendable (LiveEvent) -> Void,
        onEnd: @escaping @Sendable ((any Error)?) -> Void
    ) -> Task<Void, Never> {
        Task {
            do {
                for try await event in live(conversation: id, after: seq) { deliver { onEvent(event) } }
                deliver { onEnd(nil) }
            } catch {
                deliver { onEnd(error) }
            }
        }
    }

    func complete<Value: Sendable>(
        _ completion: @escaping Completion<Value>, _ operation: @escaping @Sendable () async throws(ScrollbackError) -> Value
    ) -> Task<Void, Never> {
        Task {
            do throws(ScrollbackError) {
                let value = try await operation()
                deliver { completion(.success(value)) }
            } catch {
                deliver { completion(.failure(error)) }
            }
        }
    }

    /// Calls a handler of the app's on `completionQueue`, in the order asked.
    func deliver(_ handler: @escaping @Sendable () -> Void) {
        if let completionQueue { completionQueue.async(execute: handler) } else { handler() }
    }
}
