/// How a client shows an attachment: an image box, a video player, or a file row.
public enum MediaKind: String, Sendable, Hashable, CaseIterable {
    /// A raster image whose pixel size the server reads from its header.
    case image
    /// A video a browser can usually play (MP4, QuickTime, WebM, Matroska, Ogg Theora).
    case video
    /// Everything else, audio and markup included: shown as a row and downloaded
    /// as an attachment.
    case file
}

/// What the bytes of an upload are, as recognised by ``MediaSniffer``; never the
/// client's word.
///
/// Audio has no kind of its own: MP3, Ogg Vorbis/Opus, WAV, FLAC and M4A are
/// recognised so their content type is right, and are ``MediaKind/file``.
/// HEIF/HEIC and AVIF photos are recognised too but are files, since their
/// pixel size is not read here. SVG, HTML and XML are markup a browser could
/// run script in: they are files, never images.
public enum MediaFormat: String, Sendable, Hashable, CaseIterable {
    // Images whose size ``ImageHeader`` reads.
    case png, jpeg, gif, webp

    // Video.
    case mp4, quickTime, threeGPP, threeGPP2, webm, matroska, oggVideo

    // Audio (kind file).
    case mp3, m4a, oggAudio, wav, flac

    // Images that are files here.
    case heif, avif

    // Documents and archives.
    case pdf, zip

    // Text, and markup that must never be shown inline.
    case plainText, html, svg, xml

    // Other containers we name but that browsers do not play.
    case ogg, avi

    /// Anything not recognised.
    case octetStream

    /// The MIME type to record and serve with (with `X-Content-Type-Options: nosniff`).
    public var contentType: String {
        switch self {
        case .png: "image/png"
        case .jpeg: "image/jpeg"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .mp4: "video/mp4"
        case .quickTime: "video/quicktime"
        case .threeGPP: "video/3gpp"
        case .threeGPP2: "video/3gpp2"
        case .webm: "video/webm"
        case .matroska: "video/x-matroska"
        case .oggVideo: "video/ogg"
        case .mp3: "audio/mpeg"
        case .m4a: "audio/mp4"
        case .oggAudio: "audio/ogg"
        case .wav: "audio/wav"
        case .flac: "audio/flac"
        case .heif: "image/heif"
        case .avif: "image/avif"
        case .pdf: "application/pdf"
        case .zip: "application/zip"
        // Only recognised after checking the bytes are UTF-8, so the charset is a fact.
        case .plainText: "text/plain; charset=utf-8"
        case .html: "text/html"
        case .svg: "image/svg+xml"
        case .xml: "application/xml"
        case .ogg: "application/ogg"
        case .avi: "video/x-msvideo"
        case .octetStream: "application/octet-stream"
        }
    }

    /// How a client shows it.
    public var kind: MediaKind {
        switch self {
        case .png, .jpeg, .gif, .webp: .image
        case .mp4, .quickTime, .threeGPP, .threeGPP2, .webm, .matroska, .oggVideo: .video
        case .mp3, .m4a, .oggAudio, .wav, .flac, .heif, .avif, .pdf, .zip, .plainText, .html, .svg, .xml, .ogg,
            .avi, .octetStream:
            .file
        }
    }

    /// The image format whose header gives the pixel size, for the kinds that are images.
    public var imageFormat: ImageFormat? {
        switch self {
        case .png: .png
        case .jpeg: .jpeg
        case .gif: .gif
        case .webp: .webp
        default: nil
        }
    }

    /// Whether a download may be shown inline (`Content-Disposition: inline`):
    /// only the raster images, which cannot carry script. Everything else,
    /// SVG and HTML above all, is served as an attachment.
    public var isSafeToServeInline: Bool { kind == .image }
}

/// The raster image formats whose pixel size ``ImageHeader`` reads.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable {
    case png, jpeg, gif, webp

    /// The name people know it by, for error messages.
    public var displayName: String {
        switch self {
        case .png: "PNG"
        case .jpeg: "JPEG"
        case .gif: "GIF"
        case .webp: "WebP"
        }
    }

    /// The fewest bytes from the start that can hold a size: PNG's signature and
    /// IHDR up to the height, GIF's logical screen, a VP8L header, a JPEG's SOI
    /// and frame header with nothing between.
    var shortestHeader: Int {
        switch self {
        case .png: 24
        case .gif: 10
        case .webp: 25
        case .jpeg: 11
        }
    }

    /// The matching ``MediaFormat``.
    public var mediaFormat: MediaFormat {
        switch self {
        case .png: .png
        case .jpeg: .jpeg
        case .gif: .gif
        case .webp: .webp
        }
    }
}
