/// The content type a client declared for an upload, compared with what the
/// bytes are. The server records the sniffed type either way; this decides
/// whether the declaration was a mistake worth a 4xx.
extension MediaFormat {
    /// Whether a client's declared content type fits bytes of this format.
    ///
    /// - Nothing declared, or `application/octet-stream`, claims nothing: accepted.
    /// - The format's own type, or a common alias of it (`image/jpg`,
    ///   `audio/mp3`, `application/x-zip-compressed`, ...; parameters and case
    ///   ignored): accepted.
    /// - Another type this module recognises: accepted only for near relatives
    ///   that clients mix up (MP4, QuickTime, 3GPP and M4A, all ISO media;
    ///   WebM and Matroska; the Ogg types; text and markup declared as one
    ///   another; unrecognised bytes declared as text or as MP3, whose
    ///   detection is a heuristic). So HTML declared as `image/png`, or a JPEG
    ///   declared as `image/png`, is refused.
    /// - A type this module does not know (`text/csv`, `application/json`,
    ///   a `.docx`'s type, `image/bmp`): accepted for bytes it cannot name
    ///   either and for generic containers (text and markup under `text/` or
    ///   `application/`, ZIP under `application/`); refused for anything it
    ///   recognised, whose type is known.
    public func accepts(declaredContentType declared: String) -> Bool {
        let declared = MediaFormat.canonicalContentType(declared)
        if declared.isEmpty || declared == "application/octet-stream" { return true }
        if declared == MediaFormat.canonicalContentType(contentType) { return true }
        if let named = MediaFormat.recognised[declared] { return nearRelatives.contains(named) }
        switch self {
        case .octetStream: return true
        case .plainText, .html, .xml: return declared.hasPrefix("text/") || declared.hasPrefix("application/")
        case .zip: return declared.hasPrefix("application/")
        default: return false
        }
    }

    /// The format a content type names, when this module recognises it
    /// (aliases included, parameters and case ignored).
    public init?(declaredContentType: String) {
        guard let format = MediaFormat.recognised[MediaFormat.canonicalContentType(declaredContentType)] else {
            return nil
        }
        self = format
    }

    /// Formats whose declared type is accepted for bytes of this one.
    private var nearRelatives: Set<MediaFormat> {
        switch self {
        case .mp4, .quickTime, .threeGPP, .threeGPP2, .m4a: [.mp4, .quickTime, .threeGPP, .threeGPP2, .m4a]
        case .webm, .matroska: [.webm, .matroska]
        case .ogg, .oggAudio, .oggVideo: [.ogg, .oggAudio, .oggVideo]
        case .plainText: [.html, .xml]
        case .html, .svg: [.plainText, .xml]
        case .xml: [.plainText]
        case .octetStream: [.plainText, .html, .xml, .mp3]
        default: []
        }
    }

    /// Lowercased, without parameters or white space, aliases resolved.
    static func canonicalContentType(_ type: String) -> String {
        let essence = type.utf8.prefix { $0 != UInt8(ascii: ";") }
        let trimmed = String(decoding: essence.filter { $0 != 0x20 && $0 != 0x09 }.map(asciiLowercased), as: UTF8.self)
        return aliases[trimmed] ?? trimmed
    }

    private static let aliases: [String: String] = [
        "image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "image/jpe": "image/jpeg",
        "image/x-png": "image/png", "image/apng": "image/png",
        "image/heic": "image/heif", "image/heic-sequence": "image/heif", "image/heif-sequence": "image/heif",
        "image/avif-sequence": "image/avif",
        "image/svg": "image/svg+xml",
        "video/x-m4v": "video/mp4", "application/mp4": "video/mp4",
        "audio/x-m4a": "audio/mp4", "audio/m4a": "audio/mp4",
        "audio/mp3": "audio/mpeg", "audio/x-mp3": "audio/mpeg", "audio/mpeg3": "audio/mpeg",
        "audio/x-mpeg": "audio/mpeg", "audio/x-mpeg-3": "audio/mpeg", "audio/mpa": "audio/mpeg",
        "audio/x-wav": "audio/wav", "audio/wave": "audio/wav", "audio/vnd.wave": "audio/wav",
        "audio/x-pn-wav": "audio/wav",
        "audio/x-flac": "audio/flac",
        "audio/opus": "audio/ogg", "audio/vorbis": "audio/ogg",
        "audio/webm": "video/webm",
        "video/mkv": "video/x-matroska", "video/matroska": "video/x-matroska", "audio/x-matroska": "video/x-matroska",
        "video/avi": "video/x-msvideo", "video/msvideo": "video/x-msvideo", "video/vnd.avi": "video/x-msvideo",
        "application/x-pdf": "application/pdf",
        "application/x-zip-compressed": "application/zip", "application/x-zip": "application/zip",
        "multipart/x-zip": "application/zip",
        "text/xml": "application/xml",
        "application/xhtml+xml": "text/html",
    ]

    /// Every canonical content type of a recognised format.
    private static let recognised: [String: MediaFormat] = Dictionary(
        MediaFormat.allCases.map { (canonicalContentType($0.contentType), $0) }, uniquingKeysWith: { first, _ in first })
}
