import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ScrollbackMedia
import ScrollbackModels
import ScrollbackStore

/// Pictures the server keeps: a user's avatar and a conversation's image,
/// each sent whole in one `PUT` of its bytes (at most
/// ``APILimits/maxImageBytes``), checked as uploads are (the format and
/// pixel size read from the bytes, never from what the client says), and
/// served to those who may see them: an avatar to the users who may read
/// the profile, an image to the conversation's members (404 otherwise,
/// as for none). The operator sets a conversation's image as a URL
/// elsewhere.
struct ImageController {
    let store: ScrollbackStore

    func addRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.put("users/me/avatar", use: setAvatar)
        group.get("users/me/avatar", use: myAvatar)
        group.get("users/:user_id/avatar", use: avatar)
        group.put("conversations/:id/image", use: setImage)
        group.delete("conversations/:id/image", use: removeImage)
        group.get("conversations/:id/image", use: image)
    }

    func addAdminRoutes(to group: RouterGroup<ScrollbackRequestContext>) {
        group.get("users/:user_id/avatar", use: avatar)
        group.put("conversations/:id/image", use: setImageURL)
    }

    /// The picture in a request's body, checked: a PNG, JPEG, GIF or WebP
    /// of a size the server takes, with the blurhash of `?blurhash=`.
    static func picture(_ request: Request, context: ScrollbackRequestContext, what: String) async throws -> StoredImage {
        let blurhash = try QueryParameters(request).single("blurhash")
        if let blurhash {
            do {
                _ = try Blurhash(validating: blurhash)
            } catch {
                throw APIError.unprocessable(.invalidImage, "`blurhash` is not a blurhash: \(error.reason).")
            }
        }
        let buffer = try await RequestBody.bytes(of: request, context: context, limit: APILimits.maxImageBytes)
        let bytes = Array(buffer.readableBytesView)
        guard !bytes.isEmpty else {
            throw APIError.unprocessable(
                .invalidImage, "Send the \(what)'s bytes (a PNG, JPEG, GIF or WebP image) as the request body.")
        }
        let inspection: MediaInspection
        do {
            inspection = try MediaInspector.inspect(bytes, isWholeFile: true)
        } catch {
            throw APIError.unprocessable(.invalidImage, "The \(what) is not an image this server takes: \(error.reason).")
        }
        guard let dimensions = inspection.image, AttachmentDownload.inlineTypes.contains(inspection.contentType) else {
            throw APIError.unprocessable(
                .invalidImage,
                "The \(what) must be a PNG, JPEG, GIF or WebP image (these bytes are \(inspection.contentType)).")
        }
        let digest = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
        return StoredImage(
            contentType: inspection.contentType, bytes: bytes, sha256: digest, width: dimensions.width,
            height: dimensions.height, blurhash: blurhash)
    }

    /// The bytes of a picture: its type, never sniffed by a browser, shown
    /// inline, cached privately (its URL changes with it), 304 to a client
    /// that holds it.
    static func download(_ picture: ImageBytes?, _ request: Request, missing: APIError) throws -> Response {
        guard let picture else { throw missing }
        let tag = "\"" + picture.sha256 + "\""
        var headers: HTTPFields = [
            .contentType: picture.contentType, .eTag: tag, .cacheControl: "private, max-age=86400",
        ]
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Content-Disposition")!] = "inline"
        if let held = request.headers[.ifNoneMatch], held.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces) == tag
        }) {
            return Response(status: .notModified, headers: headers)
        }
        return Response(
            status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: picture.bytes)))
    }

    static let noAvatar = APIError(.notFound, .userNotFound, "No avatar of that user is kept here for you to see.")
    static let noImage = APIError(
        .notFound, .conversationNotFound, "No image of that conversation is kept here for you to see.")

    /// The caller's avatar becomes the body's picture → 200 with the profile.
    @Sendable func setAvatar(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<UserEnvelope> {
        let user = try context.requireUser()
        let picture = try await Self.picture(request, context: context, what: "avatar")
        return JSONBody(UserEnvelope(user: try await store.setAvatar(of: user, picture)))
    }

    @Sendable func myAvatar(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        return try Self.download(try await store.avatar(of: user, visibleTo: user), request, missing: Self.noAvatar)
    }

    @Sendable func avatar(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let viewer = UserController.viewer(context)
        if viewer != nil { _ = try context.requireUser() }
        let id = try Validation.userID(context.pathParameter("user_id") ?? "", field: "user_id")
        return try Self.download(try await store.avatar(of: id, visibleTo: viewer), request, missing: Self.noAvatar)
    }

    /// The conversation's image becomes the body's picture (its owner or an
    /// admin) → 200 with the conversation.
    @Sendable func setImage(_ request: Request, context: ScrollbackRequestContext) async throws -> JSONBody<Conversation> {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        let picture = try await Self.picture(request, context: context, what: "image")
        _ = try await store.setConversationImage(id, kept: picture, by: user)
        return JSONBody(try await store.conversation(id, for: user))
    }

    /// The conversation has no image any more (its owner or an admin) → 200
    /// with the conversation.
    @Sendable func removeImage(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<Conversation>
    {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        _ = try await store.setConversationImage(id, kept: nil, by: user)
        return JSONBody(try await store.conversation(id, for: user))
    }

    @Sendable func image(_ request: Request, context: ScrollbackRequestContext) async throws -> Response {
        let user = try context.requireUser()
        let id = try ConversationController.conversationID(context)
        return try Self.download(try await store.conversationImage(id, for: user), request, missing: Self.noImage)
    }

    /// The operator sets a conversation's image to a URL elsewhere, or
    /// none (`null`) → 200 with it (audited).
    @Sendable func setImageURL(_ request: Request, context: ScrollbackRequestContext) async throws
        -> JSONBody<ConversationImage>
    {
        let id = try ConversationController.conversationID(context)
        let input = try await RequestBody.decode(SetConversationImageRequest.self, from: request, context: context)
        let image = try input.image.map { try Validation.profileImage($0, field: "image") }
        context.auditDetail.withLockedValue { $0["conversation_id"] = id.uuidString.lowercased() }
        let shown = try await store.setConversationImage(id, kept: nil, image: image, by: .system)
        return JSONBody(ConversationImage(conversationId: id, image: shown))
    }
}
