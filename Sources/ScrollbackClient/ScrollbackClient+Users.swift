import AsyncHTTPClient
import Foundation
import NIOCore
import ScrollbackModels

/// Profiles: what users are called and what they look like. Every answer
/// read here goes into the client's `profiles` cache (as every page,
/// conversation list and member list does), so the feeds' rows show it.
extension ScrollbackClient {
    /// The caller's own profile.
    public func me() async throws(ScrollbackError) -> UserProfile {
        let envelope: UserEnvelope = try await call(.GET, "/v1/users/me")
        return envelope.user
    }

    /// The profile of user `id`: the caller's own, or that of a user who
    /// shares a conversation with them; anyone else is `notFound`
    /// (`user_not_found`), as an id nobody has.
    public func user(_ id: String) async throws(ScrollbackError) -> UserProfile {
        let envelope: UserEnvelope = try await call(.GET, "/v1/users/\(id.pathEscaped)")
        return envelope.user
    }

    /// The profiles of `ids` the caller may read, in the order asked (the
    /// others are left out, as strangers). Any number of ids: they are
    /// asked for ``APILimits/maxProfileIDs`` at a time.
    public func users(_ ids: [String]) async throws(ScrollbackError) -> [UserProfile] {
        var profiles: [UserProfile] = []
        var start = ids.startIndex
        while start < ids.endIndex {
            let end = min(start + APILimits.maxProfileIDs, ids.endIndex)
            let list: UserList = try await call(
                .GET, "/v1/users", query: [("ids", Self.idList(ids[start..<end]))])
            profiles += list.users
            start = end
        }
        return profiles
    }

    /// User search (mention autocomplete, a "new chat" picker): the users
    /// who share a conversation with the caller with a word of their shown
    /// name or id starting with `query` (case and diacritics aside), by
    /// shown name then id. Pass the previous page's `nextCursor` as
    /// `cursor` for the next; `limit` 1 to 50 (nil: the server's 20).
    public func searchUsers(_ query: String, limit: Int? = nil, cursor: String? = nil) async throws(ScrollbackError)
        -> UserList
    {
        try await call(.GET, "/v1/users", query: [("q", query), ("limit", limit.map(String.init)), ("cursor", cursor)])
    }

    /// Changes the caller's own profile: `displayName` set, or `.cleared`
    /// (the identity provider's name shows again); `avatar` may only be
    /// cleared (``uploadAvatar(_:blurhash:)`` sets one, as the operator or
    /// the provider may). Answers the
    /// profile as it now shows.
    @discardableResult
    public func updateProfile(
        displayName: FieldChange<String> = .unchanged, avatar: FieldChange<ProfileImage> = .unchanged
    ) async throws(ScrollbackError) -> UserProfile {
        let envelope: UserEnvelope = try await retrying { () async throws(ScrollbackError) in
            try await self.call(
                .PATCH, "/v1/users/me", body: UpdateProfileRequest(displayName: displayName, avatar: avatar))
        }
        return envelope.user
    }

    /// Uploads the caller's avatar: `image` is the picture's bytes (PNG,
    /// JPEG, GIF or WebP, at most ``APILimits/maxImageBytes``), `blurhash`
    /// its placeholder. Answers the profile, whose `avatar` names the path
    /// that serves it (load it with ``picture(_:)``).
    @discardableResult
    public func uploadAvatar(_ image: Data, blurhash: String? = nil) async throws(ScrollbackError) -> UserProfile {
        let envelope: UserEnvelope = try Self.decode(
            try await putPicture(image, "/v1/users/me/avatar", blurhash: blurhash).body)
        profiles.learn([envelope.user])
        return envelope.user
    }

    /// Sets conversation `id`'s image (its owner or an admin), as
    /// ``uploadAvatar(_:blurhash:)`` does; answers the conversation.
    @discardableResult
    public func setConversationImage(_ image: Data, blurhash: String? = nil, in id: UUID)
        async throws(ScrollbackError) -> Conversation
    {
        try Self.decode(
            try await putPicture(image, "/v1/conversations/\(id.uuidString.lowercased())/image", blurhash: blurhash).body)
    }

    /// Removes conversation `id`'s image (its owner or an admin).
    @discardableResult
    public func removeConversationImage(in id: UUID) async throws(ScrollbackError) -> Conversation {
        try await call(.DELETE, "/v1/conversations/\(id.uuidString.lowercased())/image")
    }

    /// The bytes of a picture a profile or a conversation names: one this
    /// server keeps (its `url` is a path: asked with the caller's token),
    /// or one elsewhere (an https URL, asked without it).
    public func picture(_ image: ProfileImage) async throws(ScrollbackError) -> Data {
        if image.url.hasPrefix("/") {
            var request = HTTPClientRequest(url: baseURL + image.url)
            request.method = .GET
            addOnBehalfOf(to: &request.headers)
            return try await performAuthorized(request, path: image.url).body
        }
        var request = HTTPClientRequest(url: image.url)
        request.method = .GET
        return try await perform(request, path: image.url).body
    }

    private func putPicture(_ image: Data, _ path: String, blurhash: String?) async throws(ScrollbackError) -> Reply {
        var url = baseURL + path
        if let blurhash { url += "?blurhash=" + blurhash.queryEscaped }
        var request = HTTPClientRequest(url: url)
        request.method = .PUT
        addOnBehalfOf(to: &request.headers)
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.body = .bytes(ByteBuffer(bytes: image))
        return try await performAuthorized(request, path: path)
    }

    /// `ids` as the `ids` parameter spells them: comma-separated, with a
    /// comma inside an id as `\,` and a backslash as `\\`.
    static func idList(_ ids: some Sequence<String>) -> String {
        ids.map { $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: ",", with: "\\,") }
            .joined(separator: ",")
    }
}
