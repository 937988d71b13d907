import Foundation
import Hummingbird
import ScrollbackModels
import ScrollbackStore

/// Profiles: a user reads those of the users who share a conversation with
/// them (anyone else is 404, as an unknown id is, so ids cannot be
/// probed), searches them, and sets their own; the operator reads,
/// searches and sets anyone's (`/v1/admin/users...`).
struct UserController {
    let store: ScrollbackStore

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("users", use: list)
        group.get("users/me", use: me)
        group.patch("users/me", use: update)
        group.get("users/:user_id", use: user)
    }

    func addAdminRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("users", use: list)
        group.get("users/:user_id", use: user)
        group.put("users/:user_id/profile", use: setProfile)
    }

    /// The caller (a user, or nil for the operator on the admin routes).
    static func viewer(_ context: ScrollbackRequestContext) -> UserID? {
        context.operatorName != nil && context.userID == nil ? nil : context.userID
    }

    @Sendable func me(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UserEnvelope> {
        let user = try context.requireUser()
        return try await profile(of: user, visibleTo: user)
    }

    @Sendable func user(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UserEnvelope> {
        let viewer = Self.viewer(context)
        if viewer != nil { _ = try context.requireUser() }
        let id = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        return try await profile(of: id, visibleTo: viewer)
    }

    /// 404 for a user `viewer` may not read, exactly as for an unknown id.
    private func profile(of id: UserID, visibleTo viewer: UserID?) async throws -> JSONBody<UserEnvelope> {
        guard let profile = try await store.profiles(of: [id], visibleTo: viewer).first else {
            throw StoreError.userNotFound
        }
        return JSONBody(UserEnvelope(user: profile))
    }

    /// `?ids=a,b,c`: those profiles the caller may read, in the order asked;
    /// `?q=`: user search, paged by `cursor`.
    @Sendable func list(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UserList> {
        let viewer = Self.viewer(context)
        if viewer != nil { _ = try context.requireUser() }
        let query = QueryParameters(request)
        switch (try query.single("ids"), try query.single("q")) {
        case (let ids?, nil):
            guard try query.single("cursor") == nil, try query.single("limit") == nil else {
                throw APIError.badRequest(.invalidParameter, "`cursor` and `limit` page a search (`q`), not `ids`.")
            }
            guard !ids.isEmpty else {
                throw APIError.badRequest(.invalidParameter, "`ids` must list 1 to \(APILimits.maxProfileIDs) user ids.")
            }
            let users = try Self.ids(ids)
            return JSONBody(UserList(users: try await store.profiles(of: users, visibleTo: viewer)))
        case (nil, let text?):
            guard text.unicodeScalars.count <= APILimits.maxUserQueryLength, let folded = ProfileWords.query(text) else {
                throw APIError.badRequest(
                    .invalidParameter,
                    "`q` must be 1 to \(APILimits.maxUserQueryLength) characters, not only spaces: the start of a word of a name or an id.")
            }
            let limit =
                try query.integer("limit", in: APILimits.userSearchLimit) ?? APILimits.defaultUserSearchLimit
            let after = try query.single("cursor").map(UserCursor.decode)
            // No word holds a control character (no id nor name does): nothing matches.
            if folded.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
                return JSONBody(UserList(users: []))
            }
            let (users, next) = try await store.searchUsers(folded, visibleTo: viewer, after: after, limit: limit)
            return JSONBody(UserList(users: users, nextCursor: next.map(UserCursor.encode)))
        case (nil, nil):
            throw APIError.badRequest(
                .invalidParameter, "Give `q` (user search) or `ids` (profiles by id, comma-separated).")
        case (_?, _?):
            throw APIError.badRequest(.invalidParameter, "Give `q` or `ids`, not both.")
        }
    }

    /// A comma-separated list of at most ``APILimits/maxProfileIDs`` user
    /// ids; `\,` is a comma inside an id and `\\` a backslash.
    static func ids(_ text: String) throws -> [UserID] {
        var ids: [String] = []
        var current = ""
        var escaped = false
        for character in text {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "," {
                ids.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        if escaped { current.append("\\") }
        ids.append(current)
        guard ids.count <= APILimits.maxProfileIDs else {
            throw APIError.badRequest(
                .invalidParameter, "`ids` can list at most \(APILimits.maxProfileIDs) user ids (it lists \(ids.count)).")
        }
        // An item that cannot be a user id names no one: left out, as a stranger is.
        return ids.compactMap(UserID.init(validating:))
    }

    /// The user sets their own profile → 200 with it as it now shows.
    @Sendable func update(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UserEnvelope> {
        let user = try context.requireUser()
        var input = try await RequestBody.decode(UpdateProfileRequest.self, from: request, context: context)
        if case .set(let name) = input.displayName { input.displayName = .set(try Validation.displayName(name)) }
        if case .set = input.avatar {
            throw APIError.unprocessable(
                .invalidProfile,
                "Field `avatar` takes only null here (clear yours): upload a picture with PUT /v1/users/me/avatar; a URL is set by the operator (PUT /v1/admin/users/{id}/profile) or the identity provider's `picture`.")
        }
        return JSONBody(UserEnvelope(user: try await store.updateProfile(of: user, input)))
    }

    /// The operator sets a user's profile as a whole → 200 (audited).
    @Sendable func setProfile(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<UserEnvelope>
    {
        let user = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        var input = try await RequestBody.decode(SetProfileRequest.self, from: request, context: context)
        input.displayName = try input.displayName.map(Validation.displayName)
        input.avatar = try input.avatar.map { try Validation.profileImage($0, field: "avatar") }
        context.auditDetail.withLockedValue { $0["user_id"] = user.rawValue }
        return JSONBody(UserEnvelope(user: try await store.setProfile(of: user, input)))
    }
}

/// The user search cursor: opaque to clients; inside, the sort name and id
/// of the last user listed.
enum UserCursor {
    static func encode(_ position: UserSearchPosition) -> String {
        OpaqueCursor.encode("u:\(position.sortName)\(UserID.separator)\(position.id.rawValue)")
    }

    static func decode(_ cursor: String) throws -> UserSearchPosition {
        guard let text = OpaqueCursor.decode(cursor, maxLength: 4_096), text.hasPrefix("u:"),
            let separator = text.firstIndex(of: UserID.separator)
        else {
            throw APIError.badRequest(.invalidParameter, "`cursor` must be a `next_cursor` value returned by this endpoint.")
        }
        let name = String(text[text.index(text.startIndex, offsetBy: 2)..<separator])
        let id = String(text[text.index(after: separator)...])
        return UserSearchPosition(sortName: name, id: UserID(rawValue: id))
    }
}
