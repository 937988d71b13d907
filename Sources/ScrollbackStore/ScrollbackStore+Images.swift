import Foundation
import PostgresNIO
import ScrollbackModels

/// A picture as this server keeps it (`sql/032_images.sql`): checked by
/// the server (its format and pixel size read from its bytes), with the
/// blurhash its sender computed.
public struct StoredImage: Sendable, Equatable {
    public var contentType: String
    public var bytes: [UInt8]
    /// Lower-case hex.
    public var sha256: String
    public var width: Int
    public var height: Int
    public var blurhash: String?

    public init(contentType: String, bytes: [UInt8], sha256: String, width: Int, height: Int, blurhash: String?) {
        self.contentType = contentType
        self.bytes = bytes
        self.sha256 = sha256
        self.width = width
        self.height = height
        self.blurhash = blurhash
    }

    /// What a profile or a conversation shows of it: the server path that
    /// serves it, made unique per picture (`?v=`), and its size.
    func shown(at path: String) -> ProfileImage {
        ProfileImage(url: path + "?v=" + sha256.prefix(16), width: width, height: height, blurhash: blurhash)
    }
}

/// The bytes of a picture, as a download answers them.
public struct ImageBytes: Sendable, Equatable {
    public var contentType: String
    public var bytes: [UInt8]
    public var sha256: String
}

/// Avatars and conversation images kept by the server.
extension ScrollbackStore {
    /// Where a user's uploaded avatar is served (their id percent-encoded).
    public static func avatarPath(of user: UserID) -> String {
        "/v1/users/" + (user.rawValue.addingPercentEncoding(withAllowedCharacters: pathSegment) ?? "") + "/avatar"
    }

    /// Where a conversation's uploaded image is served.
    public static func imagePath(of conversation: UUID) -> String {
        "/v1/conversations/" + conversation.uuidString.lowercased() + "/image"
    }

    /// Whether `image` is one this server serves (a path), not a URL elsewhere.
    static func isKept(_ image: ProfileImage?) -> Bool { image?.url.hasPrefix("/") == true }

    private static let pathSegment: CharacterSet = {
        var set = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        set.insert(charactersIn: "-._~")
        return set
    }()

    /// The user's avatar becomes `image`, kept here; the profile as it now shows.
    public func setAvatar(of user: UserID, _ image: StoredImage) async throws -> UserProfile {
        let shown = image.shown(at: Self.avatarPath(of: user))
        return try await changeProfile(
            of: user,
            alongside: { connection, logger in
                try await Self.keep(image, owner: "user_id", user.rawValue, on: connection, logger: logger)
            }
        ) { $0.avatar = shown }
    }

    /// The bytes of `user`'s uploaded avatar, for `viewer` when they may
    /// read the profile (themself, or they share a conversation; nil: the
    /// operator); nil otherwise, exactly as when there is none.
    public func avatar(of user: UserID, visibleTo viewer: UserID?) async throws -> ImageBytes? {
        let visible =
            viewer == nil ? "true" : "(i.user_id = $2 OR \(Self.sharesConversation("i.user_id", with: "$2")))"
        var bindings = PostgresBindings()
        bindings.append(user.rawValue)
        bindings.append(viewer?.rawValue ?? "")
        let rows = try await rows(
            PostgresQuery(
                unsafeSQL: "SELECT i.content_type, i.bytes, i.sha256 FROM images i WHERE i.user_id = $1 AND \(visible)",
                binds: bindings),
            writes: false, as: .profiles)
        return try rows.first.map(Self.imageBytes)
    }

    /// Sets a conversation's picture: an uploaded one (`kept`, shown at the
    /// server's path), a URL elsewhere (`image`), or none (both nil). By
    /// its owner or an admin (`actor`), or the operator (`UserID.system`).
    public func setConversationImage(
        _ id: UUID, kept: StoredImage?, image: ProfileImage? = nil, by actor: UserID
    ) async throws -> ProfileImage? {
        let shown = kept.map { $0.shown(at: Self.imagePath(of: id)) } ?? image
        let json = try shown.map { String(decoding: try Self.avatarEncoder.encode($0), as: UTF8.self) }
        let outcome: MembershipChange = try await withTransaction(as: .roles) { [logger] connection in
            guard let role = try await Self.lockConversation(id, member: actor, on: connection, logger: logger) else {
                return .notVisible
            }
            guard role.may(.setTitle) else { return .forbidden(.updateConversation) }
            if let kept {
                try await Self.keep(kept, owner: "conversation_id", id.uuidString.lowercased(), on: connection, logger: logger)
            } else {
                _ = try await connection.query("DELETE FROM images WHERE conversation_id = \(id)", logger: logger).collect()
            }
            _ = try await connection.query(
                "UPDATE conversations SET image = \(json)::jsonb WHERE id = \(id)", logger: logger
            ).collect()
            return .done
        }
        try outcome.complete()
        return shown
    }

    /// The bytes of a conversation's uploaded image, for its members; nil
    /// otherwise, exactly as when there is none.
    public func conversationImage(_ id: UUID, for user: UserID) async throws -> ImageBytes? {
        let rows = try await rows(
            """
            SELECT i.content_type, i.bytes, i.sha256 FROM images i
            WHERE i.conversation_id = \(id)
              AND EXISTS (SELECT 1 FROM members m WHERE m.conversation_id = \(id) AND m.user_id = \(user.rawValue))
            """,
            writes: false, as: .conversation)
        return try rows.first.map(Self.imageBytes)
    }

    static func imageBytes(_ row: PostgresRow) throws -> ImageBytes {
        let (type, bytes, sha) = try row.decode((String, ByteBuffer, String).self)
        return ImageBytes(contentType: type, bytes: Array(bytes.readableBytesView), sha256: sha)
    }

    /// Keeps `image` as the picture of the row whose `owner` column
    /// (`user_id` or `conversation_id`) is `id`, replacing the one it had.
    static func keep(
        _ image: StoredImage, owner: String, _ id: String, on connection: PostgresConnection, logger: Logger
    ) async throws {
        let cast = owner == "conversation_id" ? "::uuid" : ""
        var bindings = PostgresBindings()
        bindings.append(id)
        bindings.append(image.contentType)
        bindings.append(ByteBuffer(bytes: image.bytes))
        bindings.append(image.sha256)
        _ = try await connection.query(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO images (\(owner), content_type, bytes, sha256) VALUES ($1\(cast), $2, $3, $4)
                    ON CONFLICT (\(owner)) WHERE \(owner) IS NOT NULL
                    DO UPDATE SET content_type = EXCLUDED.content_type, bytes = EXCLUDED.bytes,
                                  sha256 = EXCLUDED.sha256, created_at = now()
                    """, binds: bindings),
            logger: logger
        ).collect()
    }
}
