/// What the server records for an upload: its format, and for images the
/// size as displayed.
public struct MediaInspection: Sendable, Hashable {
    public let format: MediaFormat
    /// Set exactly when ``format`` is an image (``MediaKind/image``).
    public let image: ImageDimensions?

    public init(format: MediaFormat, image: ImageDimensions?) {
        self.format = format
        self.image = image
    }

    /// The MIME type to record and serve with.
    public var contentType: String { format.contentType }
    /// How a client shows it.
    public var kind: MediaKind { format.kind }
}

public enum MediaInspector {
    /// Recognises an upload and, for an image, reads its size: the one call the
    /// server makes on the first bytes of an upload.
    ///
    /// - Parameters:
    ///   - bytes: the start of the file (the server passes at most 64 KiB), or all of it.
    ///   - isWholeFile: whether `bytes` is the whole file.
    ///   - limits: the largest image accepted.
    /// - Throws: ``ImageHeaderError`` when the bytes are an image whose header
    ///   gives no acceptable size: a 4xx with its ``ImageHeaderError/reason``.
    ///   One exception: ``ImageHeaderError/truncated(_:needed:available:)`` on a
    ///   prefix of a longer file (a JPEG whose metadata outgrows 64 KiB) asks for
    ///   a longer prefix, not a refusal: read at least `needed` bytes (all of
    ///   the file when it is shorter) and call again.
    public static func inspect(
        _ bytes: some Collection<UInt8>, isWholeFile: Bool, limits: ImageLimits = .standard
    ) throws(ImageHeaderError) -> MediaInspection {
        let view = ByteView(bytes)
        let format = MediaSniffer.sniff(view, isWholeFile: isWholeFile)
        guard let imageFormat = format.imageFormat else { return MediaInspection(format: format, image: nil) }
        let dimensions = try ImageHeader.dimensions(of: imageFormat, in: view, limits: limits)
        return MediaInspection(format: format, image: dimensions)
    }
}
