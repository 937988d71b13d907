import Foundation
import ScrollbackModels
import ScrollbackObjectStorage

/// What the server takes of uploads (docs/operations.md lists the variables).
public struct UploadOptions: Sendable, Equatable {
    /// `SCROLLBACK_MAX_UPLOAD_BYTES`: the largest upload, in bytes.
    public var maxBytes = APILimits.maxUploadBytes
    /// `SCROLLBACK_MAX_PENDING_UPLOADS`: uploads one user may have pending.
    public var maxPending = APILimits.maxPendingUploads
    /// `SCROLLBACK_UPLOAD_KINDS`: the kinds of attachment the server takes
    /// (image, video, file; all three by default). Checked twice: the kind
    /// an upload's declared content type names when it is announced, and
    /// the kind its bytes are once they all arrived.
    public var allowedKinds = Set(AttachmentKind.allCases)
    /// How long an upload waits for the message that sends it.
    public var lifetime = Duration.seconds(APILimits.uploadLifetimeSeconds)
    /// How long the bytes of a deleted message's attachments stay (a
    /// download already begun finishes) before the sweeper collects them.
    public var removalGrace = Duration.seconds(600)
    /// How often the sweeper looks for bytes to collect.
    public var sweepInterval = Duration.seconds(60)
    /// `SCROLLBACK_STORAGE_URL` (`s3://bucket/prefix`) with
    /// `SCROLLBACK_S3_ENDPOINT`, `SCROLLBACK_S3_REGION`,
    /// `SCROLLBACK_S3_ACCESS_KEY_ID`, `SCROLLBACK_S3_SECRET_ACCESS_KEY`,
    /// `SCROLLBACK_S3_SESSION_TOKEN` and `SCROLLBACK_S3_ADDRESSING`: the
    /// S3-compatible object store that holds the bytes of uploads. Nil (the
    /// default): the database holds them.
    public var objectStorage: ObjectStorageConfiguration?

    public init() {}

    /// The kinds of `SCROLLBACK_UPLOAD_KINDS`: a comma-separated list of
    /// image, video and file (at least one); nil for anything else.
    static func kinds(_ text: String) -> Set<AttachmentKind>? {
        var kinds = Set<AttachmentKind>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: .whitespaces).lowercased()
            guard let kind = AttachmentKind(rawValue: name) else { return nil }
            kinds.insert(kind)
        }
        return kinds.isEmpty ? nil : kinds
    }

    /// From 1 byte to 1 GiB.
    static let maxBytesRange = 1...(1 << 30)
}
