import Foundation
import OpenCombineShim
import ScrollbackClient
import ScrollbackModels

/// Every call of the kit as a publisher (Combine on Apple platforms,
/// OpenCombine elsewhere). Each is lazy: nothing is sent until a subscriber
/// arrives, and every subscription sends the request again (`Deferred {
/// Future }`), so `retry(_:)` re-runs it.
extension ScrollbackClient {
    public var publishers: Publishers { Publishers(client: self) }

    public struct Publishers: Sendable {
        let client: ScrollbackClient

        public func createConversation(title: String? = nil, members: [String] = [])
            -> AnyPublisher<Conversation, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.createConversation(title: title, members: members) }
        }

        public func conversation(_ id: UUID) -> AnyPublisher<Conversation, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.conversation(id) }
        }

        public func conversations(limit: Int? = nil, cursor: String? = nil)
            -> AnyPublisher<ConversationList, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.conversations(limit: limit, cursor: cursor) }
        }

        public func unreadCounts() -> AnyPublisher<UnreadCounts, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.unreadCounts() }
        }

        public func addMember(_ user: String, to id: UUID) -> AnyPublisher<Conversation, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.addMember(user, to: id) }
        }

        public func removeMember(_ user: String, from id: UUID) -> AnyPublisher<Void, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.removeMember(user, from: id) }
        }

        public func send(
            _ body: String, to id: UUID, clientId: String? = nil, replyTo: Int64? = nil, attachments: [UUID] = []
        ) -> AnyPublisher<ScrollbackClient.SendResult, ScrollbackError> {
            // One client_id for every subscription: a re-subscription after a
            // failure is a retry of the same message, never a second one.
            let clientId = clientId ?? UUID().uuidString.lowercased()
            return deferred { () async throws(ScrollbackError) in
                try await client.send(body, to: id, clientId: clientId, replyTo: replyTo, attachments: attachments)
            }
        }

        /// An upload's progress, then its attachment. The upload starts on
        /// subscription; cancelling the subscription stops it. Each
        /// subscription is an upload of its own.
        public func upload(
            _ data: Data, filename: String, contentType: String, to id: UUID, blurhash: String? = nil
        ) -> AnyPublisher<UploadEvent, ScrollbackError> {
            Deferred { () -> AnyPublisher<UploadEvent, ScrollbackError> in
                let subject = SubjectBox(PassthroughSubject<UploadEvent, ScrollbackError>())
                let box = TaskBox()
                return subject.subject.handleEvents(
                    receiveSubscription: { _ in
                        box.task = Task {
                            do throws(ScrollbackError) {
                                let attachment = try await client.upload(
                                    data, filename: filename, contentType: contentType, to: id, blurhash: blurhash,
                                    progress: { subject.subject.send(.progress($0)) })
                                subject.subject.send(.finished(attachment))
                                subject.subject.send(completion: .finished)
                            } catch {
                                subject.subject.send(completion: .failure(error))
                            }
                        }
                    },
                    receiveCancel: { box.task?.cancel() }
                ).eraseToAnyPublisher()
            }.eraseToAnyPublisher()
        }

        public func page(of id: UUID, _ anchor: ScrollbackClient.PageAnchor = .newest, limit: Int? = nil)
            -> AnyPublisher<MessagePage, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.page(of: id, anchor, limit: limit) }
        }

        public func edit(_ seq: Int64, in id: UUID, body: String) -> AnyPublisher<Message, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.edit(seq, in: id, body: body) }
        }

        public func delete(_ seq: Int64, in id: UUID) -> AnyPublisher<Message, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.delete(seq, in: id) }
        }

        public func thread(
            of root: Int64, in id: UUID, _ anchor: ScrollbackClient.PageAnchor = .newest, limit: Int? = nil
        ) -> AnyPublisher<ThreadPage, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.thread(of: root, in: id, anchor, limit: limit) }
        }

        public func react(_ emoji: String, to seq: Int64, in id: UUID) -> AnyPublisher<Message, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.react(emoji, to: seq, in: id) }
        }

        public func unreact(_ emoji: String, from seq: Int64, in id: UUID) -> AnyPublisher<Message, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.unreact(emoji, from: seq, in: id) }
        }

        public func markRead(_ seq: Int64, in id: UUID) -> AnyPublisher<ReadMarker, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.markRead(seq, in: id) }
        }

        public func typing(in id: UUID) -> AnyPublisher<Void, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.typing(in: id) }
        }

        public func changes(in id: UUID, since version: Int64, limit: Int? = nil)
            -> AnyPublisher<ChangeSet, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.changes(in: id, since: version, limit: limit) }
        }

        public func search(_ query: String, in conversation: UUID? = nil, before cursor: String? = nil, limit: Int? = nil)
            -> AnyPublisher<SearchResults, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in
                try await client.search(query, in: conversation, before: cursor, limit: limit)
            }
        }

        public func mentions(before cursor: String? = nil, limit: Int? = nil)
            -> AnyPublisher<MentionPage, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.mentions(before: cursor, limit: limit) }
        }

        public func registerDevice(
            _ deviceId: String, platform: DevicePlatform, token: String, appId: String? = nil,
            environment: DeviceEnvironment? = nil
        ) -> AnyPublisher<Device, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in
                try await client.registerDevice(
                    deviceId, platform: platform, token: token, appId: appId, environment: environment)
            }
        }

        public func devices() -> AnyPublisher<[Device], ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.devices() }
        }

        public func removeDevice(_ deviceId: String) -> AnyPublisher<Void, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.removeDevice(deviceId) }
        }

        public func mute(_ id: UUID, until: Date? = nil) -> AnyPublisher<MuteState, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.mute(id, until: until) }
        }

        public func unmute(_ id: UUID) -> AnyPublisher<MuteState, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.unmute(id) }
        }

        public func distinctConversation(with members: [String], title: String? = nil)
            -> AnyPublisher<Conversation, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.distinctConversation(with: members, title: title) }
        }

        public func block(_ user: String) -> AnyPublisher<BlockedUser, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.block(user) }
        }

        public func unblock(_ user: String) -> AnyPublisher<Void, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.unblock(user) }
        }

        public func blocks() -> AnyPublisher<[BlockedUser], ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.blocks() }
        }

        public func report(message seq: Int64, in id: UUID, reason: ReportReason, note: String? = nil)
            -> AnyPublisher<Report, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in
                try await client.report(message: seq, in: id, reason: reason, note: note)
            }
        }

        public func report(user: String, reason: ReportReason, note: String? = nil)
            -> AnyPublisher<Report, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.report(user: user, reason: reason, note: note) }
        }

        public func members(of id: UUID) -> AnyPublisher<[ConversationMember], ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.members(of: id) }
        }

        public func setRole(_ role: MemberRole, of user: String, in id: UUID)
            -> AnyPublisher<[ConversationMember], ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.setRole(role, of: user, in: id) }
        }

        public func updateConversation(_ id: UUID, title: String?? = nil, slowModeSeconds: Int? = nil)
            -> AnyPublisher<Conversation, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in
                try await client.updateConversation(id, title: title, slowModeSeconds: slowModeSeconds)
            }
        }

        public func ban(_ user: String, from id: UUID, until: Date? = nil) -> AnyPublisher<Void, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.ban(user, from: id, until: until) }
        }

        public func bans(of id: UUID) -> AnyPublisher<[Ban], ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.bans(of: id) }
        }

        public func unban(_ user: String, from id: UUID) -> AnyPublisher<Void, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.unban(user, from: id) }
        }

        public func presence(of id: UUID) -> AnyPublisher<[MemberPresence], ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.presence(of: id) }
        }

        public func setPresenceHidden(_ hidden: Bool) -> AnyPublisher<PresenceSettings, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.setPresenceHidden(hidden) }
        }

        public func layout(_ request: LayoutRequest) -> AnyPublisher<LayoutResponse, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.layout(request) }
        }

        public func me() -> AnyPublisher<UserProfile, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.me() }
        }

        public func user(_ id: String) -> AnyPublisher<UserProfile, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.user(id) }
        }

        public func users(_ ids: [String]) -> AnyPublisher<[UserProfile], ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.users(ids) }
        }

        public func searchUsers(_ query: String, limit: Int? = nil, cursor: String? = nil)
            -> AnyPublisher<UserList, ScrollbackError>
        {
            deferred { () async throws(ScrollbackError) in try await client.searchUsers(query, limit: limit, cursor: cursor) }
        }

        public func updateProfile(
            displayName: FieldChange<String> = .unchanged, avatar: FieldChange<ProfileImage> = .unchanged
        ) -> AnyPublisher<UserProfile, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in
                try await client.updateProfile(displayName: displayName, avatar: avatar)
            }
        }

        public func uploadAvatar(_ image: Data, blurhash: String? = nil) -> AnyPublisher<UserProfile, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.uploadAvatar(image, blurhash: blurhash) }
        }

        public func picture(_ image: ProfileImage) -> AnyPublisher<Data, ScrollbackError> {
            deferred { () async throws(ScrollbackError) in try await client.picture(image) }
        }

        /// Every batch of profiles that changed the client's cache
        /// (`client.profiles.updates`), from the subscription on, until
        /// it is cancelled.
        public var profileUpdates: AnyPublisher<[UserProfile], Never> {
            Deferred { () -> AnyPublisher<[UserProfile], Never> in
                let subject = SubjectBox(PassthroughSubject<[UserProfile], Never>())
                let box = TaskBox()
                return subject.subject.handleEvents(
                    receiveSubscription: { _ in
                        // Observed at once: nothing learned after the subscription is missed.
                        let updates = client.profiles.updates
                        box.task = Task { for await batch in updates { subject.subject.send(batch) } }
                    },
                    receiveCancel: { box.task?.cancel() }
                ).eraseToAnyPublisher()
            }.eraseToAnyPublisher()
        }

        /// Live events; the socket opens on subscription and closes on cancel.
        public func live(conversation id: UUID, after seq: Int64? = nil) -> AnyPublisher<LiveEvent, any Error> {
            Deferred { () -> AnyPublisher<LiveEvent, any Error> in
                let subject = SubjectBox(PassthroughSubject<LiveEvent, any Error>())
                let box = TaskBox()
                return subject.subject.handleEvents(
                    receiveSubscription: { _ in
                        box.task = client.live(conversation: id, after: seq, onEvent: { subject.subject.send($0) }) {
                            error in
                            if let error {
                                subject.subject.send(completion: .failure(error))
                            } else {
                                subject.subject.send(completion: .finished)
                            }
                        }
                    },
                    receiveCancel: { box.task?.cancel() }
                ).eraseToAnyPublisher()
            }.eraseToAnyPublisher()
        }

        private func deferred<Value>(_ operation: @escaping @Sendable () async throws(ScrollbackError) -> Value)
            -> AnyPublisher<Value, ScrollbackError>
        {
            Deferred {
                Future { promise in
                    let fulfil = UncheckedPromise(promise)
                    Task {
                        do throws(ScrollbackError) {
                            fulfil(.success(try await operation()))
                        } catch {
                            fulfil(.failure(error))
                        }
                    }
                }
            }.eraseToAnyPublisher()
        }
    }
}

/// The task of a live or state publisher's subscription.
// Unchecked: `task` is set once in receiveSubscription, before any cancel can
// arrive for that subscription, and read in receiveCancel; Combine delivers
// both on the subscribing thread in that order.
final class TaskBox: @unchecked Sendable {
    var task: Task<Void, Never>?
}

/// The subject a publisher forwards the kit's events or states to.
// Unchecked: a subject may be sent to from any thread (Combine and
// OpenCombine serialize it under its own lock); it is only not marked Sendable.
final class SubjectBox<Wrapped: Subject>: @unchecked Sendable {
    let subject: Wrapped
    init(_ subject: Wrapped) { self.subject = subject }
}

/// A Future's promise carried into a task.
// Unchecked: a Future's promise may be called from any thread; Future
// serializes it under its own lock. It is called once.
private struct UncheckedPromise<Value, Failure: Error>: @unchecked Sendable {
    let promise: (Result<Value, Failure>) -> Void
    init(_ promise: @escaping (Result<Value, Failure>) -> Void) { self.promise = promise }
    func callAsFunction(_ result: Result<Value, Failure>) { promise(result) }
}
