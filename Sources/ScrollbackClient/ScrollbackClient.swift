import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import ScrollbackModels
import ScrollbackTimeline

/// A client of one Scrollback service: every call of its HTTP API, typed
/// with the shared models, and the live stream (`live(conversation:after:)`).
/// A client (and each copy of it) opens at most one socket: every live
/// stream, `ConversationFeed` and `InboxFeed` made from it subscribes on
/// that socket, which opens for the first and closes after the last.
///
/// Tokens come from `token`, asked before every request, so an app can
/// refresh them; after the service refused one (a 401, or a socket closed
/// with 4401) the provider is asked once more, with `refreshing` true (see
/// `init(baseURL:http:retry:timeout:tokenProvider:)`), and the request goes
/// on with the fresh token. Sends cannot duplicate: each carries a `client_id` (made
/// when none is given) and is retried with it after a transport failure or a
/// 503, with bounded exponential backoff and jitter, so a send whose answer
/// was lost is stored once and its result says whether it was stored by
/// this call or before.
public struct ScrollbackClient: Sendable {
    /// The service's address, such as `http://127.0.0.1:8080`.
    public let baseURL: String
    /// The app's token provider: `true` after the service refused the last token.
    let tokens: @Sendable (_ refreshing: Bool) async throws -> String
    /// With a server token: the user every user route is called for (the
    /// `On-Behalf-Of` header). See `onBehalf(of:)`.
    public internal(set) var onBehalfOf: String?
    let http: HTTPClient
    public var retry: RetryPolicy
    /// How long one request may take.
    public var timeout: Duration
    /// Called after every HTTP attempt, retries included, with what it
    /// answered: for an app's metrics and logs, or a test of the service.
    public var onExchange: (@Sendable (Exchange) -> Void)?
    /// Where completion handlers, and the handlers of `observe` and
    /// `live(...onEvent:)`, are called: the main queue by default, so a
    /// UIKit or AppKit app may touch its views in them; nil calls them on
    /// whatever thread the answer arrives on.
    public var completionQueue: DispatchQueue? = .main
    /// Per conversation, the highest `version` this client (and its copies)
    /// has written or read: pages ask for `min_version` of it.
    let versions = KnownVersions()
    /// The one live socket that every stream and feed of this client (and
    /// of its copies) subscribes through.
    let connection: LiveConnection
    /// The profiles of the users this client (and its copies) has seen,
    /// kept current by the live socket's `user_updated` frames: every feed
    /// and model of the client names users from it (see `ProfileCache`).
    public let profiles: ProfileCache
    /// The waits between retries, ended early when the network comes back.
    let wakeUps = WakeUps()

    /// One HTTP attempt as `onExchange` sees it.
    public struct Exchange: Sendable {
        public var method: String
        /// The path, without the query.
        public var path: String
        /// The HTTP status; nil when no answer came (a transport failure).
        public var status: Int?
        /// The `Retry-After` header of the answer, if any.
        public var retryAfter: String?
        /// From sending the request to the end of the answer.
        public var duration: Duration

        public init(method: String, path: String, status: Int?, retryAfter: String?, duration: Duration) {
            self.method = method
            self.path = path
            self.status = status
            self.retryAfter = retryAfter
            self.duration = duration
        }
    }

    public init(
        baseURL: String, http: HTTPClient = .shared, retry: RetryPolicy = RetryPolicy(),
        timeout: Duration = .seconds(30), token: @escaping @Sendable () async throws -> String
    ) {
        self.init(baseURL: baseURL, http: http, retry: retry, timeout: timeout, tokenProvider: { _ in try await token() })
    }

    /// A client whose `tokenProvider` is told when the service refused its
    /// last token: asked with `refreshing` false before each request (a
    /// cached token will do), and with true once after a 401 or a socket
    /// closed with 4401 (an expired or revoked token: fetch a new one from
    /// the identity provider). The request is then sent again once; a
    /// provider that throws, or a fresh token refused again, is the call's
    /// `unauthorized` error, or the feed's `failure`.
    public init(
        baseURL: String, http: HTTPClient = .shared, retry: RetryPolicy = RetryPolicy(),
        timeout: Duration = .seconds(30), tokenProvider: @escaping @Sendable (_ refreshing: Bool) async throws -> String
    ) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.http = http
        self.retry = retry
        self.timeout = timeout
        self.tokens = tokenProvider
        let profiles = ProfileCache()
        self.profiles = profiles
        self.connection = LiveConnection(url: Self.streamURL(base), token: tokenProvider, profiles: profiles)
    }

    /// A token for a request (the provider's cached one will do).
    func token() async throws -> String { try await tokens(false) }

    // MARK: Conversations

    /// A new conversation; `description` and `data` (the app's own,
    /// `CustomData`) are optional.
    public func createConversation(
        title: String? = nil, members: [String] = [], description: String? = nil, data: CustomData? = nil
    ) async throws(ScrollbackError) -> Conversation {
        try await call(
            .POST, "/v1/conversations",
            body: CreateConversationRequest(title: title, members: members, description: description, data: data))
    }

    public func conversation(_ id: UUID) async throws(ScrollbackError) -> Conversation {
        try await call(.GET, "/v1/conversations/\(id.wire)")
    }

    /// The caller's conversations, most recently active first; pass the
    /// previous page's `nextCursor` for the next.
    public func conversations(limit: Int? = nil, cursor: String? = nil) async throws(ScrollbackError)
        -> ConversationList
    {
        try await call(
            .GET, "/v1/conversations", query: [("limit", limit.map(String.init)), ("cursor", cursor)])
    }

    /// The user's unread messages over all their conversations, and how
    /// many conversations have any: a badge without every page of the list.
    public func unreadCounts() async throws(ScrollbackError) -> UnreadCounts {
        try await call(.GET, "/v1/unread")
    }

    public func addMember(_ user: String, to id: UUID) async throws(ScrollbackError) -> Conversation {
        try await call(.POST, "/v1/conversations/\(id.wire)/members", body: AddMemberRequest(userId: user))
    }

    public func removeMember(_ user: String, from id: UUID) async throws(ScrollbackError) {
        _ = try await exchange(.DELETE, "/v1/conversations/\(id.wire)/members/\(user.pathEscaped)")
    }

    // MARK: Messages

    /// A send's outcome: the stored message, and whether it was stored
    /// before this call (a retry of a send that had reached the server).
    public struct SendResult: Sendable, Equatable {
        public var message: Message
        public var replayed: Bool
    }

    /// Sends a message that cannot be stored twice, retried with the same
    /// `clientId` while the answer is missing or says "later".
    /// With `attachments` (the ids of complete uploads, see
    /// `upload(_:filename:contentType:to:blurhash:progress:)`), `body` may be empty;
    /// likewise with `data`, the app's own (`CustomData`), and `type`, its
    /// own kind of message (``MessageType``).
    public func send(
        _ body: String, to id: UUID, clientId: String? = nil, replyTo: Int64? = nil, attachments: [UUID] = [],
        data: CustomData? = nil, type: String? = nil
    ) async throws(ScrollbackError) -> SendResult {
        let request = SendMessageRequest(
            body: body, clientId: clientId ?? UUID().uuidString.lowercased(), replyTo: replyTo,
            attachments: attachments.isEmpty ? nil : attachments, data: data, type: type)
        let reply = try await retrying { () async throws(ScrollbackError) in
            try await self.exchange(.POST, "/v1/conversations/\(id.wire)/messages", body: request)
        }
        let envelope: MessageEnvelope = try Self.decode(reply.body)
        versions.saw(envelope.message.version, in: id)
        return SendResult(message: envelope.message, replayed: reply.status == 200)
    }

    /// Where a page of history is anchored.
    public enum PageAnchor: Sendable, Equatable {
        case newest
        case before(Int64)
        case after(Int64)
        case around(Int64)
        case aroundTime(Date)

        func query(limit: Int?) -> [(String, String?)] {
            var query: [(String, String?)] = [("limit", limit.map(String.init))]
            switch self {
            case .newest: break
            case .before(let seq): query.append(("before", String(seq)))
            case .after(let seq): query.append(("after", String(seq)))
            case .around(let seq): query.append(("around", String(seq)))
            case .aroundTime(let date): query.append(("around_time", ScrollbackJSON.formatTimestamp(date)))
            }
            return query
        }
    }

    /// A page of history, newest first. It is never older than what this
    /// client wrote or read in the conversation before (`min_version`: an
    /// instance's page cache may otherwise answer from before a write made
    /// through another instance).
    public func page(of id: UUID, _ anchor: PageAnchor = .newest, limit: Int? = nil) async throws(ScrollbackError)
        -> MessagePage
    {
        var query = anchor.query(limit: limit)
        if let known = versions.version(of: id) { query.append(("min_version", String(known))) }
        let page: MessagePage = try await call(.GET, "/v1/conversations/\(id.wire)/messages", query: query)
        versions.saw(page.version, in: id)
        return page
    }

    /// A page of the replies in the thread message `root` started, newest
    /// first, with the thread's first message as it is now. The anchors are
    /// history's (`aroundTime` is for history only: the server refuses it).
    public func thread(of root: Int64, in id: UUID, _ anchor: PageAnchor = .newest, limit: Int? = nil)
        async throws(ScrollbackError) -> ThreadPage
    {
        try await call(.GET, "/v1/conversations/\(id.wire)/messages/\(root)/thread", query: anchor.query(limit: limit))
    }

    /// Adds the caller's `emoji` reaction to message `seq`; adding one the
    /// caller has already changes nothing. The message comes back with its
    /// reactions (`me` about the caller).
    public func react(_ emoji: String, to seq: Int64, in id: UUID) async throws(ScrollbackError) -> Message {
        try await changeMessage(.PUT, Self.reactionPath(emoji, seq, id), in: id)
    }

    /// Removes the caller's `emoji` reaction from message `seq`, if any.
    public func unreact(_ emoji: String, from seq: Int64, in id: UUID) async throws(ScrollbackError) -> Message {
        try await changeMessage(.DELETE, Self.reactionPath(emoji, seq, id), in: id)
    }

    static func reactionPath(_ emoji: String, _ seq: Int64, _ id: UUID) -> String {
        // The emoji travels as percent-encoded UTF-8: every byte but unreserved ASCII.
        let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        let encoded = emoji.addingPercentEncoding(withAllowedCharacters: unreserved) ?? emoji
        return "/v1/conversations/\(id.wire)/messages/\(seq)/reactions/\(encoded)"
    }

    public func edit(_ seq: Int64, in id: UUID, body: String) async throws(ScrollbackError) -> Message {
        try await changeMessage(
            .PATCH, "/v1/conversations/\(id.wire)/messages/\(seq)", in: id, body: EditMessageRequest(body: body))
    }

    /// Changes message `seq`'s body, its data (`.some(nil)`: removes it),
    /// or both, those given.
    public func edit(_ seq: Int64, in id: UUID, body: String? = nil, data: CustomData??) async throws(ScrollbackError)
        -> Message
    {
        try await changeMessage(
            .PATCH, "/v1/conversations/\(id.wire)/messages/\(seq)", in: id,
            body: EditMessageRequest(body: body, data: data))
    }

    public func delete(_ seq: Int64, in id: UUID) async throws(ScrollbackError) -> Message {
        try await changeMessage(.DELETE, "/v1/conversations/\(id.wire)/messages/\(seq)", in: id)
    }

    /// A call that changes a message of conversation `id` and answers it as
    /// it is now; its version is remembered for the pages read after it.
    private func changeMessage(
        _ method: HTTPMethod, _ path: String, in id: UUID, body: (some Encodable & Sendable)? = Never?.none
    ) async throws(ScrollbackError) -> Message {
        let envelope: MessageEnvelope = try await call(method, path, body: body)
        versions.saw(envelope.message.version, in: id)
        return envelope.message
    }

    public func markRead(_ seq: Int64, in id: UUID) async throws(ScrollbackError) -> ReadMarker {
        try await call(.PUT, "/v1/conversations/\(id.wire)/read", body: ReadMarkerRequest(seq: seq))
    }

    /// Tells the conversation's other members, live, that the caller is typing.
    public func typing(in id: UUID) async throws(ScrollbackError) {
        _ = try await exchange(.POST, "/v1/conversations/\(id.wire)/typing")
    }

    /// What was created, edited or deleted after `version`.
    public func changes(in id: UUID, since version: Int64, limit: Int? = nil) async throws(ScrollbackError)
        -> ChangeSet
    {
        let changes: ChangeSet = try await call(
            .GET, "/v1/conversations/\(id.wire)/changes",
            query: [("since_version", String(version)), ("limit", limit.map(String.init))])
        versions.saw(changes.version, in: id)
        return changes
    }

    /// Messages of the caller's conversations (or of `conversation` only)
    /// that match `query`, newest first; pass the previous page's `next` as
    /// `cursor` for the next. Open a hit's history with
    /// `page(of: hit.conversationId, .around(hit.seq))`.
    public func search(
        _ query: String, in conversation: UUID? = nil, before cursor: String? = nil, limit: Int? = nil
    ) async throws(ScrollbackError) -> SearchResults {
        try await call(
            .GET, "/v1/search",
            query: [
                ("q", query), ("conversation_id", conversation?.wire), ("before", cursor),
                ("limit", limit.map(String.init)),
            ])
    }

    // MARK: Mentions

    /// The caller's mentions, newest first across their conversations; pass
    /// the previous page's `next` as `before` for older ones.
    public func mentions(before cursor: String? = nil, limit: Int? = nil) async throws(ScrollbackError) -> MentionPage {
        try await call(.GET, "/v1/mentions", query: [("before", cursor), ("limit", limit.map(String.init))])
    }

    /// The layout calculator of the service (the same as `ScrollbackLayout` locally).
    // MARK: Devices

    /// Registers this installation for push notifications (or gives it a
    /// new token): `deviceId` is the app's own stable id for it; `appId`
    /// the bundle id or Android package (nil: the server's default), and,
    /// for APNs, `environment` the one the token was issued in (a
    /// development build's is `.sandbox`; nil: production).
    public func registerDevice(
        _ deviceId: String, platform: DevicePlatform, token: String, appId: String? = nil,
        environment: DeviceEnvironment? = nil
    ) async throws(ScrollbackError) -> Device {
        try await retrying { () async throws(ScrollbackError) in
            try await self.call(
                .PUT, "/v1/devices/\(deviceId.pathEscaped)",
                body: RegisterDeviceRequest(
                    platform: platform.rawValue, token: token, appId: appId, environment: environment?.rawValue))
        }
    }

    /// The caller's devices, most recently registered first.
    public func devices() async throws(ScrollbackError) -> [Device] {
        let list: DeviceList = try await call(.GET, "/v1/devices")
        return list.devices
    }

    /// Stops push notifications to a device (signing out on it).
    public func removeDevice(_ deviceId: String) async throws(ScrollbackError) {
        _ = try await exchange(.DELETE, "/v1/devices/\(deviceId.pathEscaped)")
    }

    // MARK: Muting

    /// Mutes conversation `id` for the caller (no push for it): for good,
    /// or until `until`, a time in the future.
    @discardableResult
    public func mute(_ id: UUID, until: Date? = nil) async throws(ScrollbackError) -> MuteState {
        try await retrying { () async throws(ScrollbackError) in
            try await self.call(.PUT, "/v1/conversations/\(id.uuidString.lowercased())/mute", body: MuteRequest(until: until))
        }
    }

    /// Unmutes conversation `id` for the caller.
    @discardableResult
    public func unmute(_ id: UUID) async throws(ScrollbackError) -> MuteState {
        try await retrying { () async throws(ScrollbackError) in
            try await self.call(.DELETE, "/v1/conversations/\(id.uuidString.lowercased())/mute")
        }
    }

    // MARK: Presence

    /// Whether each member of conversation `id` has a live socket, and when
    /// the others were last seen (members only).
    public func presence(of id: UUID) async throws(ScrollbackError) -> [MemberPresence] {
        let presence: ConversationPresence = try await call(.GET, "/v1/conversations/\(id.uuidString.lowercased())/presence")
        return presence.members
    }

    /// Hides the caller's presence from everyone (they look offline, never
    /// seen), or shows it again.
    @discardableResult
    public func setPresenceHidden(_ hidden: Bool) async throws(ScrollbackError) -> PresenceSettings {
        try await retrying { () async throws(ScrollbackError) in
            try await self.call(.PUT, "/v1/presence", body: PresenceSettings(hidden: hidden))
        }
    }

    public func layout(_ request: LayoutRequest) async throws(ScrollbackError) -> LayoutResponse {
        try await call(.POST, "/v1/layout", body: request)
    }
}
