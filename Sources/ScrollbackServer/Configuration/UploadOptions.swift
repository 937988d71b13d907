import Foundation
import ScrollbackModels
import ScrollbackObjectStorage

/// What the server takes of uploads (docs/operations.md lists the variables).
public struct UploadOptions: Sendable, Equatable {
    /// `SCROLLBACK_MAX_UPLOAD_BYTES`: the largest upload, in bytes.
    public var maxBytes = APILimits.maxUploadBytes
    /// `SCROLLBACK_MAX_PENDING_UPLOADS`: uploads one user may have pending.
    public var maxPending = APILimits.maxPendingUploads
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

    /// From 1 byte to 1 GiB.
    static let maxBytesRange = 1...(1 << 30)
}
