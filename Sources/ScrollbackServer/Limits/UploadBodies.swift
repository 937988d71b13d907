import HTTPTypes

/// The one kind of request whose body may pass `SCROLLBACK_MAX_BODY_BYTES`:
/// the bytes of an upload (`PUT /v1/conversations/{id}/uploads/{upload_id}`,
/// the route of ``UploadController``), capped at the largest upload instead.
/// The connection's guard decides from the request's head, before any of
/// its body arrives.
enum UploadBodies {
    static func allows(_ method: HTTPRequest.Method, _ path: String) -> Bool {
        if isImport(method, path) || isImage(method, path) { return true }
        guard method == .put else { return false }
        let parts = segments(path)
        return parts.count == 6 && parts[0].isEmpty && parts[1] == "v1" && parts[2] == "conversations"
            && !parts[3].isEmpty && parts[4] == "uploads" && !parts[5].isEmpty
    }

    /// A picture's bytes (`PUT /v1/users/me/avatar`, `PUT
    /// /v1/conversations/{id}/image`): read whole, up to
    /// ``APILimits/maxImageBytes`` (the handler refuses more).
    static func isImage(_ method: HTTPRequest.Method, _ path: String) -> Bool {
        guard method == .put else { return false }
        let parts = segments(path)
        return parts == ["", "v1", "users", "me", "avatar"]
            || (parts.count == 5 && parts[0].isEmpty && parts[1] == "v1" && parts[2] == "conversations"
                && !parts[3].isEmpty && parts[4] == "image")
    }

    private static func segments(_ path: String) -> [Substring] {
        let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return bare.split(separator: "/", omittingEmptySubsequences: false)
    }

    /// An import (`POST /v1/admin/import`, server tokens only): read line by
    /// line as it arrives, with no cap on its size (the body must still keep
    /// arriving, as every body must).
    static func isImport(_ method: HTTPRequest.Method, _ path: String) -> Bool {
        method == .post && (path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "") == "/v1/admin/import"
    }
}
