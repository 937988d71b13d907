import Foundation
import NIOConcurrencyHelpers
import ScrollbackModels

/// The profiles a `ScrollbackClient` (and each copy of it) has seen, by
/// user id: every `users` object it decodes (pages of history, thread
/// pages, change sets, the conversation list, member lists,
/// `GET /v1/users` answers, its own `PATCH /v1/users/me`), every `user_updated` frame of its socket, and
/// what the feeds' storage kept. Every feed and model made from the client
/// reads it, so a user is named alike on every screen.
///
/// Of two profiles of one user it keeps the one with the higher
/// `version` (``keep(_:in:)``): a page read before a rename never brings
/// the old name back. It holds one profile per user seen; the users a
/// client sees are those who share a conversation with it.
public final class ProfileCache: Sendable {
    private struct Core: Sendable {
        var profiles: [String: UserProfile] = [:]
        var observers: [Int: AsyncStream<[UserProfile]>.Continuation] = [:]
        var nextObserver = 0
    }

    private let core = NIOLockedValueBox(Core())

    public init() {}

    /// The profile held of `id`, if any.
    public subscript(id: String) -> UserProfile? {
        core.withLockedValue { $0.profiles[id] }
    }

    /// The profile held of `id`, or the bare one (the id, nothing else)
    /// while none is: a row can always show a name and initials.
    public func profile(of id: String) -> UserProfile {
        self[id] ?? .bare(id)
    }

    /// The profiles held of `ids`, by id (ids with none are left out).
    public func profiles(of ids: some Sequence<String>) -> [String: UserProfile] {
        core.withLockedValue { core in
            var found: [String: UserProfile] = [:]
            for id in ids { if let profile = core.profiles[id] { found[id] = profile } }
            return found
        }
    }

    /// Every profile held, by id.
    public var all: [String: UserProfile] { core.withLockedValue { $0.profiles } }

    /// Takes in profiles from an answer, a frame or a store: each is kept
    /// when its user had none or an older one. Answers those that changed
    /// what the cache holds; `updates` hands them to every observer.
    @discardableResult
    public func learn(_ profiles: some Sequence<UserProfile>) -> [UserProfile] {
        let (changed, observers) = core.withLockedValue { core -> ([UserProfile], [AsyncStream<[UserProfile]>.Continuation]) in
            var changed: [UserProfile] = []
            for profile in profiles where Self.keep(profile, in: &core.profiles) { changed.append(profile) }
            return (changed, changed.isEmpty ? [] : Array(core.observers.values))
        }
        // Outside the lock: a consumer's cancellation ends its stream under
        // that task's lock and then takes this one (see `updates`). Two
        // batches may then arrive in either order; an observer keeps each
        // profile by ``keep(_:in:)`` too, so the newer one wins either way.
        for observer in observers { observer.yield(changed) }
        return changed
    }

    /// Takes in the profiles of an answer's `users` object.
    @discardableResult
    public func learn(_ users: ProfileSet) -> [UserProfile] {
        learn(users.profiles.values)
    }

    /// Every batch of profiles that changed what the cache holds, from now
    /// on, until the consumer stops. Each access is a stream of its own.
    public var updates: AsyncStream<[UserProfile]> {
        let (stream, continuation) = AsyncStream<[UserProfile]>.makeStream()
        let id = core.withLockedValue { core in
            defer { core.nextObserver += 1 }
            core.observers[core.nextObserver] = continuation
            return core.nextObserver
        }
        continuation.onTermination = { [weak self] _ in
            self?.core.withLockedValue { _ = $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// The rule of two profiles of one user: `profile` replaces what
    /// `profiles` holds of its user when that is nothing or of a lower
    /// version. True when it did.
    public static func keep(_ profile: UserProfile, in profiles: inout [String: UserProfile]) -> Bool {
        if let held = profiles[profile.id], held.version >= profile.version { return false }
        profiles[profile.id] = profile
        return true
    }
}

/// An answer that names users: the profiles its `users` object (or its
/// list) holds go into the client's `ProfileCache` as it is decoded.
protocol NamesUsers {
    var namedProfiles: [UserProfile] { get }
}

extension MessagePage: NamesUsers {
    var namedProfiles: [UserProfile] { Array(users.profiles.values) }
}

extension ThreadPage: NamesUsers {
    var namedProfiles: [UserProfile] { Array(users.profiles.values) }
}

extension ChangeSet: NamesUsers {
    var namedProfiles: [UserProfile] { Array(users.profiles.values) }
}

extension ConversationList: NamesUsers {
    var namedProfiles: [UserProfile] { Array(users.profiles.values) }
}

extension MemberList: NamesUsers {
    var namedProfiles: [UserProfile] { Array(users.profiles.values) }
}

extension UserList: NamesUsers {
    var namedProfiles: [UserProfile] { users }
}

extension UserEnvelope: NamesUsers {
    var namedProfiles: [UserProfile] { [user] }
}
