import Foundation
import ScrollbackModels

/// The profiles a model shows: those of the users its rows name, from the
/// client's cache, each kept by the cache's rule (the higher version).
/// `ConversationModel` and `InboxModel` hold one each.
struct ShownProfiles: Sendable, Equatable {
    private(set) var profiles: [String: UserProfile] = [:]

    /// The rows now name `named`: their profiles held (and no others), each
    /// replaced by the cache's when that is newer. True when any changed.
    mutating func show(_ named: Set<String>, from cache: ProfileCache) -> Bool {
        var next = profiles.filter { named.contains($0.key) }
        for profile in cache.profiles(of: named).values { _ = ProfileCache.keep(profile, in: &next) }
        guard next != profiles else { return false }
        profiles = next
        return true
    }

    /// Profiles the cache took in: those of users in `named` are kept when
    /// newer. The ids whose profiles changed.
    mutating func take(_ batch: [UserProfile], named: Set<String>) -> Set<String> {
        var changed = Set<String>()
        for profile in batch where named.contains(profile.id) && ProfileCache.keep(profile, in: &profiles) {
            changed.insert(profile.id)
        }
        return changed
    }
}
