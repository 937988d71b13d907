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
/// the old name back. It holds one profile per user seen (the users a
/// client sees are those who share a conversation with it), at most
/// `limit`: past it, those least recently learned or read go, down to
/// nine tenths of it.
public final class ProfileCache: Sendable {
    private struct Core: Sendable {
        var profiles: [String: UserProfile] = [:]
        /// When each profile was last learned or read (a counter).
        var used: [String: UInt64] = [:]
        var clock: UInt64 = 0
        var observers: [Int: AsyncStream<[UserProfile]>.Continuation] = [:]
        var nextObserver = 0

        mutating func touch(_ id: String) {
            clock += 1
            used[id] = clock
        }

        /// Past `limit`, down to nine tenths of it, the least recently used first.
        mutating func trim(to limit: Int) {
            guard profiles.count > limit else { return }
            let excess = profiles.count - limit + limit / 10
            for (id, _) in used.sorted(by: { $0.value < $1.value }).prefix(excess) {
                profiles[id] = nil
                used[id] = nil
            }
        }
    }

    private let core = NIOLockedValueBox(Core())
    /// The most profiles held at once.
    public let limit: Int

    /// A cache of at most `limit` profiles (at least one).
    public init(limit: Int = 10_000) {
        self.limit = max(limit, 1)
    }

    /// How many profiles are held.
    public var count: Int { core.withLockedValue { $0.profiles.count } }

    /// The profile held of `id`, if any.
    public subscript(id: String) -> UserProfile? {
        core.withLockedValue { core in
            guard let profile = core.profiles[id] else { return nil }
            core.touch(id)
            return profile
        }
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
            for id in ids {
                guard let profile = core.profiles[id] else { continue }
                found[id] = profile
                core.touch(id)
            }
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
            for profile in profiles {
                if Self.keep(profile, in: &core.profiles) { changed.append(profile) }
                core.touch(profile.id)
            }
            core.trim(to: limit)
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
