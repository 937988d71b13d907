import Foundation

/// What an attachment is, as its bytes say (never as the uploader declared).
public enum AttachmentKind: String, Codable, Sendable, Hashable, CaseIterable {
    /// A PNG, JPEG, GIF or WebP picture, with its pixel size.
    case image
    /// A video container (MP4, QuickTime, WebM).
    case video
    /// Anything else, served only as a download.
    case file
}

/// A file attached to a message: recorded by the server from the bytes it
/// received, so a client can lay the message out (an image's `width` and
/// `height`, as displayed) before downloading any of it.
public struct Attachment: Codable, Sendable, Hashable {
    enum CodingKeys: String, CodingKey {
        case id, kind, size, filename, width, height, blurhash, url
        case contentType = "content_type"
    }

    /// The upload it was made from.
    public var id: UUID
    public var kind: AttachmentKind
    /// The type the bytes have (sniffed), not the one declared.
    public var contentType: String
    /// Bytes.
    public var size: Int64
    /// The name the uploader gave, for a download's `Content-Disposition`.
    public var filename: String
    /// Pixels as displayed (EXIF orientation applied); images only.
    public var width: Int?
    public var height: Int?
    /// A placeholder the uploader computed (https://blurha.sh), validated.
    public var blurhash: String?
    /// Where members download it: `/v1/conversations/{id}/attachments/{attachment_id}`,
    /// relative to the API's base URL.
    public var url: String

    public init(
        id: UUID, kind: AttachmentKind, contentType: String, size: Int64, filename: String, width: Int? = nil,
        height: Int? = nil, blurhash: String? = nil, url: String
    ) {
        self.id = id
        self.kind = kind
        self.contentType = contentType
        self.size = size
        self.filename = filename
        self.width = width
        self.height = height
        self.blurhash = blurhash
        self.url = url
    }

    /// The download path of attachment `id` of conversation `conversation`.
    public static func path(_ id: UUID, in conversation: UUID) -> String {
        "/v1/conversations/\(conversation.uuidString.lowercased())/attachments/\(id.uuidString.lowercased())"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id.uuidString.lowercased(), forKey: .id)
        try container.encode(kind, forKey: .kind)
        try container.encode(contentType, forKey: .contentType)
        try container.encode(size, forKey: .size)
        try container.encode(filename, forKey: .filename)
        try container.encodeIfPresent(width, forKey: .width)
        try container.encodeIfPresent(height, forKey: .height)
        try container.encodeIfPresent(blurhash, forKey: .blurhash)
        try container.encode(url, forKey: .url)
    }
}

extension Attachment: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        if let blurhash {
            writer.key("blurhash")
            writer.string(blurhash)
        }
        writer.key("content_type")
        writer.string(contentType)
        writer.key("filename")
        writer.string(filename)
        if let height {
            writer.key("height")
            writer.number(height)
        }
        writer.key("id")
        writer.uuid(id)
        writer.key("kind")
        writer.string(kind.rawValue)
        writer.key("size")
        writer.number(size)
        writer.key("url")
        writer.string(url)
        if let width {
            writer.key("width")
            writer.number(width)
        }
        writer.endObject()
    }
}

/// `POST /v1/conversations/{id}/uploads`: what the client is about to
/// upload. The server checks the bytes against it once they arrived.
public struct CreateUploadRequest: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case filename, size, blurhash
        case contentType = "content_type"
    }

    public var filename: String
    /// The type the client believes the file has; the bytes must agree.
    public var contentType: String
    /// The exact number of bytes that will be sent.
    public var size: Int64
    public var blurhash: String?

    public init(filename: String, contentType: String, size: Int64, blurhash: String? = nil) {
        self.filename = filename
        self.contentType = contentType
        self.size = size
        self.blurhash = blurhash
    }
}

/// The answer to `POST .../uploads`: where and how to send the bytes.
public struct UploadTicket: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case method, headers
        case uploadId = "upload_id"
        case uploadURL = "upload_url"
        case expiresAt = "expires_at"
    }

    public var uploadId: UUID
    /// Absolute (an object store's presigned URL), or a path relative to the
    /// API's base URL (the server itself).
    public var uploadURL: String
    /// `PUT`.
    public var method: String
    /// Headers the upload request must carry, as given.
    public var headers: [String: String]
    /// Send it, with the message that carries it, before this.
    public var expiresAt: Date

    public init(uploadId: UUID, uploadURL: String, method: String, headers: [String: String], expiresAt: Date) {
        self.uploadId = uploadId
        self.uploadURL = uploadURL
        self.method = method
        self.headers = headers
        self.expiresAt = expiresAt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uploadId.uuidString.lowercased(), forKey: .uploadId)
        try container.encode(uploadURL, forKey: .uploadURL)
        try container.encode(method, forKey: .method)
        try container.encode(headers, forKey: .headers)
        try container.encode(expiresAt, forKey: .expiresAt)
    }
}

/// How far an upload to the server is: the answer to each `PUT` of its
/// bytes. Once `received` equals `size` the bytes were checked and the
/// upload can be sent (`attachment` says what they are).
public struct UploadProgress: Codable, Sendable, Equatable {
    enum CodingKeys: String, CodingKey {
        case size, received, complete, attachment
        case uploadId = "upload_id"
    }

    public var uploadId: UUID
    public var size: Int64
    /// Bytes stored so far, from the first: a resumed upload sends from here.
    public var received: Int64
    public var complete: Bool
    /// What the bytes are, once complete (not yet sent: its `url` answers
    /// only once a message carries it).
    public var attachment: Attachment?

    public init(uploadId: UUID, size: Int64, received: Int64, complete: Bool, attachment: Attachment? = nil) {
        self.uploadId = uploadId
        self.size = size
        self.received = received
        self.complete = complete
        self.attachment = attachment
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uploadId.uuidString.lowercased(), forKey: .uploadId)
        try container.encode(size, forKey: .size)
        try container.encode(received, forKey: .received)
        try container.encode(complete, forKey: .complete)
        try container.encodeIfPresent(attachment, forKey: .attachment)
    }
}
